import numpy as np
import pytest

from bert_tf.config import BertConfig
from bert_tf.errors import UserError
from bert_tf.model.pretraining import pretraining_model
from bert_tf.training.optimization import WarmupLinearDecay, create_optimizer


def test_bert_defaults():
  optimizer = create_optimizer()
  assert optimizer.weight_decay == 0.01
  assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.999, 1e-6)
  assert optimizer.global_clipnorm == 1.0


def test_decay_skips_layer_norms_and_biases_only():
  model = pretraining_model(BertConfig.from_preset("bert_tiny", vocab_size=50))
  optimizer = create_optimizer()
  optimizer.build(model.trainable_variables)
  decayed = sorted(v.path for v in model.trainable_variables if optimizer._use_weight_decay(v))
  not_decayed = sorted(v.path for v in model.trainable_variables
                       if not optimizer._use_weight_decay(v))
  assert all(v.rsplit("/", 1)[-1] in ("gamma", "beta", "bias", "output_bias")
             for v in not_decayed)
  assert all(v.rsplit("/", 1)[-1] in ("kernel", "embeddings") for v in decayed)
  # Every layer norm (embeddings, attention, feed-forward, MLM head) is excluded.
  assert sum(v.endswith("gamma") for v in not_decayed) == 1 + 2 * 2 + 1
  assert "bert_pretraining/mlm/output_bias" in not_decayed or any(
      v.endswith("output_bias") for v in not_decayed)
  assert any("token_embedding" in v for v in decayed)


def test_warmup_then_linear_decay_to_zero():
  schedule = WarmupLinearDecay(peak=1e-3, warmup_steps=10, train_steps=110)
  values = [float(schedule(step)) for step in (0, 5, 10, 60, 110, 200)]
  np.testing.assert_allclose(values, [0.0, 5e-4, 1e-3, 5e-4, 0.0, 0.0], atol=1e-9)


def test_warmup_longer_than_training_is_an_error():
  with pytest.raises(UserError, match="warmup_steps 20 exceeds train_steps 10"):
    create_optimizer(warmup_steps=20, train_steps=10)


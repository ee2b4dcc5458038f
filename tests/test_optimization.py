import keras
import numpy as np
import pytest

from bert_tf.errors import UserError
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from bert_tf.runtime.optimization import WarmupLinearDecay, create_optimizer


def test_bert_defaults():
  optimizer = create_optimizer()
  assert optimizer.weight_decay == 0.01
  assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.999, 1e-6)
  assert optimizer.clip_norm == 1.0
  assert optimizer.global_clipnorm is None  # Keras's would clip per replica, before the sum


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_decay_skips_layer_norms_and_biases_only(name):
  model = pretraining_model(BertConfig.from_preset("bert_tiny", vocab_size=50))
  optimizer = create_optimizer(name)
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



def lamb_reference(weight, gradient, lr, decay, adapted, beta_1=0.9, beta_2=0.999, eps=1e-6):
  """One LAMB step, Algorithm 2 of You et al. (2019), first step (t = 1)."""
  m_hat = (1 - beta_1) * gradient / (1 - beta_1)
  v_hat = (1 - beta_2) * gradient ** 2 / (1 - beta_2)
  update = m_hat / (np.sqrt(v_hat) + eps)
  if adapted:
    update = update + decay * weight
    update = update * np.linalg.norm(weight) / np.linalg.norm(update)
  return weight - lr * update


def test_lamb_step_follows_the_paper():
  rng = np.random.default_rng(0)
  kernel_value, bias_value = rng.normal(size=(4, 3)), rng.normal(size=3)
  kernel = keras.Variable(kernel_value, name="kernel", dtype="float32")
  bias = keras.Variable(bias_value, name="bias", dtype="float32")
  gradients = [rng.normal(size=(4, 3)).astype("float32"), rng.normal(size=3).astype("float32")]
  optimizer = create_optimizer("lamb", learning_rate=0.1, warmup_steps=0, train_steps=10,
                               weight_decay=0.5, clip_norm=0)
  optimizer.apply_gradients(zip(gradients, [kernel, bias]))
  np.testing.assert_allclose(
      kernel.numpy(), lamb_reference(kernel_value, gradients[0], 0.1, 0.5, True), rtol=1e-5)
  # Biases (and layer norms): a plain Adam step, neither decayed nor layer-adapted.
  np.testing.assert_allclose(
      bias.numpy(), lamb_reference(bias_value, gradients[1], 0.1, 0.5, False), rtol=1e-5)


def test_clipping_is_on_the_global_norm():
  variables = [keras.Variable(np.zeros(2), dtype="float32", name="kernel"),
               keras.Variable(np.zeros(1), dtype="float32", name="kernel")]
  optimizer = create_optimizer(learning_rate=1.0, warmup_steps=0, train_steps=10,
                               weight_decay=0.0)
  clipped = optimizer._all_reduce_sum_gradients(
      [(np.array([3.0, 0.0], "float32"), variables[0]),
       (np.array([4.0], "float32"), variables[1])])
  np.testing.assert_allclose(np.concatenate([g for g, _ in clipped]), [0.6, 0.0, 0.8],
                             rtol=1e-6)


def test_unknown_optimizer_is_an_error():
  with pytest.raises(UserError, match="unknown optimizer 'sgd': use one of adamw, lamb"):
    create_optimizer("sgd")

"""--mixed_precision: layers compute in bf16 / fp16, weights, logits and losses stay float32,
and fp16 trains with dynamic loss scaling."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.errors import UserError
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.training import precision
from bert_tf.training.optimization import create_optimizer
from test_loss import CONFIG, batch


@pytest.mark.parametrize("name, compute", [("bf16", "bfloat16"), ("fp16", "float16")])
def test_mixed_precision_trains_with_float32_logits_and_losses(name, compute):
  with precision.policy(name):
    model = pretraining_model(CONFIG)
    compile_for_pretraining(model, create_optimizer(learning_rate=1e-3, warmup_steps=0,
                                                    train_steps=10))
  assert keras.config.dtype_policy().name == "float32"  # restored for whatever comes next
  encoder_layer = model.get_layer("bert_encoder").get_layer("transformer_layer_0")
  assert encoder_layer.compute_dtype == compute
  assert all(v.dtype == "float32" for v in model.trainable_variables)
  features, _, _ = batch()
  outputs = model(features)
  assert outputs["mlm"].dtype == "float32" and outputs["nsp"].dtype == "float32"
  if name == "fp16":
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
  history = model.fit(tf.data.Dataset.from_tensors(batch()).repeat(), epochs=1,
                      steps_per_epoch=3, verbose=0).history
  assert np.isfinite(history["loss"][0])
  assert int(model.optimizer.iterations.numpy()) >= 1


def test_unknown_policy_is_an_error():
  with pytest.raises(UserError, match="unknown mixed_precision 'fp8'"):
    with precision.policy("fp8"):
      pass


def test_float32_by_default():
  with precision.policy("none"):
    model = pretraining_model(BertConfig.from_preset("bert_tiny", vocab_size=50))
  assert model.get_layer("bert_encoder").compute_dtype == "float32"

"""The training step's two metrics for watching a run: the gradient's global norm before
clipping and the count of real (non-padding) tokens."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.model import loss as loss_lib
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model


def batch(rng, size=4, length=16, predictions=3, vocab=100):
  padding = (np.arange(length)[None] < rng.integers(8, length + 1, (size, 1))).astype("int32")
  features = {"token_ids": rng.integers(5, vocab, (size, length)).astype("int32") * padding,
              "segment_ids": np.zeros((size, length), "int32"), "padding_mask": padding,
              "masked_positions": np.tile(np.arange(1, predictions + 1, dtype="int32"),
                                          (size, 1))}
  labels = {"mlm": rng.integers(5, vocab, (size, predictions)).astype("int32"),
            "nsp": rng.integers(0, 2, size).astype("int32")}
  weights = {"mlm": np.ones((size, predictions), "float32"), "nsp": np.ones(size, "float32")}
  return features, labels, weights


def test_the_step_counts_real_tokens_and_the_gradients_norm():
  keras.utils.set_random_seed(0)
  model = pretraining_model(BertConfig(
      vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
      intermediate_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
  compile_for_pretraining(model, keras.optimizers.SGD(0.0))  # the weights stay as they are
  data = batch(np.random.default_rng(0))
  model.fit(tf.data.Dataset.from_tensors(data).repeat(), steps_per_epoch=2, epochs=1,
            verbose=0)
  # The same gradient, computed apart on the same batch and weights.
  features, labels, weights = data
  with tf.GradientTape() as tape:
    loss = model.compute_loss(
        x=features, y=labels, y_pred=model(features, training=True),
        sample_weight=loss_lib.normalised_sample_weights(weights, "mean"), training=True)
  norm = tf.linalg.global_norm(
      [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)
       if g is not None])
  assert float(norm) > 0
  assert float(model.gradient_norm_tracker.result()) == pytest.approx(float(norm), rel=1e-5)
  assert float(model.tokens_tracker.result()) == 2 * features["padding_mask"].sum()

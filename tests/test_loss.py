"""The compiled losses equal the seed document's formulas computed independently."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.config import BertConfig
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.training.optimization import create_optimizer

CONFIG = BertConfig.from_preset("bert_tiny", vocab_size=53, max_position_embeddings=32)
BATCH, SEQ, SLOTS = 4, 16, 5


def batch():
  rng = np.random.default_rng(1)
  features = {
      "token_ids": rng.integers(5, CONFIG.vocab_size, (BATCH, SEQ)).astype("int32"),
      "segment_ids": np.zeros((BATCH, SEQ), "int32"),
      "padding_mask": np.ones((BATCH, SEQ), "int32"),
  }
  # Different numbers of real slots per example; padding slots point at position 0.
  real = [5, 3, 1, 4]
  positions = np.zeros((BATCH, SLOTS), "int32")
  weights = np.zeros((BATCH, SLOTS), "float32")
  for row, count in enumerate(real):
    positions[row, :count] = np.sort(rng.choice(np.arange(1, SEQ), count, replace=False))
    weights[row, :count] = 1.0
  features["masked_positions"] = positions
  labels = {"mlm": np.where(weights > 0, rng.integers(5, CONFIG.vocab_size, (BATCH, SLOTS)),
                            0).astype("int32"),
            "nsp": np.array([1, 0, 1, 1], "int32")}
  return features, labels, {"mlm": weights, "nsp": np.ones(BATCH, "float32")}


def seed_formula_mlm(mlm_logits, features, labels, weights, reduction):
  """The seed's L_MLM with dense labels: -100 on every unmasked position (ignore_index)."""
  dense_labels = np.full((BATCH, SEQ), -100)
  dense_logits = np.zeros((BATCH, SEQ, CONFIG.vocab_size))
  for row in range(BATCH):
    for slot in range(SLOTS):
      if weights["mlm"][row, slot]:
        position = features["masked_positions"][row, slot]
        dense_labels[row, position] = labels["mlm"][row, slot]
        dense_logits[row, position] = mlm_logits[row, slot]
  log_probs = dense_logits - np.log(np.exp(dense_logits).sum(-1, keepdims=True))
  keep = dense_labels != -100
  nll = -log_probs[keep, dense_labels[keep]]
  return nll.sum() if reduction == "sum" else nll.mean()


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_losses_match_the_seed_formulas(reduction):
  model = pretraining_model(CONFIG)
  compile_for_pretraining(model, create_optimizer(warmup_steps=0, train_steps=10),
                          mlm_loss_reduction=reduction)
  features, labels, weights = batch()
  logits = model(features, training=False)
  results = model.evaluate(
      tf.data.Dataset.from_tensors((features, labels, weights)), return_dict=True, verbose=0)

  expected_mlm = seed_formula_mlm(logits["mlm"].numpy(), features, labels, weights, reduction)
  nsp_logits = logits["nsp"].numpy().astype(np.float64)
  nsp_log_probs = nsp_logits - np.log(np.exp(nsp_logits).sum(-1, keepdims=True))
  expected_nsp = -nsp_log_probs[np.arange(BATCH), labels["nsp"]].mean()

  np.testing.assert_allclose(results["mlm_loss"], expected_mlm, rtol=1e-5)
  np.testing.assert_allclose(results["nsp_loss"], expected_nsp, rtol=1e-5)
  np.testing.assert_allclose(results["loss"], expected_mlm + expected_nsp, rtol=1e-5)


def test_keras_default_reduction_differs_from_the_seed_formula():
  """Guards the point of the reduction: Keras's default divides by padding slots too."""
  model = pretraining_model(CONFIG)
  features, labels, weights = batch()
  logits = model(features, training=False)["mlm"]
  default = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
      labels["mlm"], logits, sample_weight=weights["mlm"])
  expected = seed_formula_mlm(logits.numpy(), features, labels, weights, "mean")
  assert abs(float(default) - expected) > 0.1 * expected


def test_loss_weights_scale_the_total():
  model = pretraining_model(CONFIG)
  compile_for_pretraining(model, create_optimizer(warmup_steps=0, train_steps=10),
                          mlm_loss_weight=0.5, nsp_loss_weight=2.0)
  results = model.evaluate(tf.data.Dataset.from_tensors(batch()), return_dict=True, verbose=0)
  np.testing.assert_allclose(
      results["loss"], 0.5 * results["mlm_loss"] + 2.0 * results["nsp_loss"], rtol=1e-5)

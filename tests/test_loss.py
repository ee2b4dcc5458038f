"""The compiled losses equal their formulas, computed independently (docs/design.md#loss)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.runtime.optimization import create_optimizer
from helpers import small_batch, tiny_bert

CONFIG = tiny_bert()


def dense_formula_mlm(mlm_logits, features, labels, weights, reduction):
  """L_MLM with dense labels: -100 on every unmasked position (ignore_index), as the formula is
  usually written for PyTorch's cross-entropy."""
  (batch, seq_length), slots = features["token_ids"].shape, weights["mlm"].shape[1]
  dense_labels = np.full((batch, seq_length), -100)
  dense_logits = np.zeros((batch, seq_length, CONFIG.vocab_size))
  for row in range(batch):
    for slot in range(slots):
      if weights["mlm"][row, slot]:
        position = features["masked_positions"][row, slot]
        dense_labels[row, position] = labels["mlm"][row, slot]
        dense_logits[row, position] = mlm_logits[row, slot]
  log_probs = dense_logits - np.log(np.exp(dense_logits).sum(-1, keepdims=True))
  keep = dense_labels != -100
  nll = -log_probs[keep, dense_labels[keep]]
  return nll.sum() if reduction == "sum" else nll.mean()


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_losses_match_the_formulas(reduction):
  model = pretraining_model(CONFIG)
  compile_for_pretraining(model, create_optimizer(warmup_steps=0, train_steps=10),
                          mlm_loss_reduction=reduction)
  features, labels, weights = small_batch()
  logits = model(features, training=False)
  results = model.evaluate(
      tf.data.Dataset.from_tensors((features, labels, weights)), return_dict=True, verbose=0)

  expected_mlm = dense_formula_mlm(logits["mlm"].numpy(), features, labels, weights, reduction)
  nsp_logits = logits["nsp"].numpy().astype(np.float64)
  nsp_log_probs = nsp_logits - np.log(np.exp(nsp_logits).sum(-1, keepdims=True))
  expected_nsp = -nsp_log_probs[np.arange(len(labels["nsp"])), labels["nsp"]].mean()

  np.testing.assert_allclose(results["mlm_loss"], expected_mlm, rtol=1e-5)
  np.testing.assert_allclose(results["nsp_loss"], expected_nsp, rtol=1e-5)
  np.testing.assert_allclose(results["loss"], expected_mlm + expected_nsp, rtol=1e-5)


def test_keras_default_reduction_differs_from_the_formula():
  """Guards the point of the reduction: Keras's default divides by padding slots too."""
  model = pretraining_model(CONFIG)
  features, labels, weights = small_batch()
  logits = model(features, training=False)["mlm"]
  default = keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
      labels["mlm"], logits, sample_weight=weights["mlm"])
  expected = dense_formula_mlm(logits.numpy(), features, labels, weights, "mean")
  assert abs(float(default) - expected) > 0.1 * expected


def test_loss_weights_scale_the_total():
  model = pretraining_model(CONFIG)
  compile_for_pretraining(model, create_optimizer(warmup_steps=0, train_steps=10),
                          mlm_loss_weight=0.5, nsp_loss_weight=2.0)
  results = model.evaluate(tf.data.Dataset.from_tensors(small_batch()), return_dict=True,
                           verbose=0)
  np.testing.assert_allclose(
      results["loss"], 0.5 * results["mlm_loss"] + 2.0 * results["nsp_loss"], rtol=1e-5)


def test_mlm_only_batches_train_nothing_of_the_nsp_head():
  """An MLM-only stream's NSP weights are 0 (its labels are drawn, meaningless): the NSP loss
  is 0, and the biases of the NSP head and of the pooler under it (which only NSP reads), which
  no weight decay touches, are left as they were, while the MLM head learns. (Their kernels
  decay, as every kernel does under AdamW.)"""
  features, labels, weights = small_batch()
  mlm_only = (features, labels, {**weights, "nsp": np.zeros_like(weights["nsp"])})
  model = pretraining_model(CONFIG)
  compile_for_pretraining(model, create_optimizer(learning_rate=1e-2, warmup_steps=0,
                                                  train_steps=10))
  untouched = {w.path: w.numpy().copy() for w in model.weights
               if w.path in ("nsp/bias", "pooled_dense/bias")}
  assert len(untouched) == 2, [w.path for w in model.weights]
  mlm_head = [w.numpy().copy() for w in model.get_layer("mlm").weights]
  history = model.fit(tf.data.Dataset.from_tensors(mlm_only).repeat(2), epochs=1, verbose=0)
  assert history.history["nsp_loss"][-1] == 0.0
  for weight in model.weights:
    if weight.path in untouched:
      np.testing.assert_array_equal(weight.numpy(), untouched[weight.path])
  assert not all(np.allclose(w.numpy(), before)
                 for w, before in zip(model.get_layer("mlm").weights, mlm_head, strict=True))


@pytest.mark.parametrize("batch_size_known", [True, False])
def test_evaluate_without_steps_on_a_stream_of_unknown_length(batch_size_known):
  """On a stream of unknown length (as the pipeline's one-pass streams) Keras runs the test
  step once more after the last batch, to find there is none (keras-team/keras#23084). Nothing
  of that phantom step may count: without the guard in `test_step`, each per-output loss of a
  one-batch stream came out halved (and the total too, when the batch size is static)."""
  model = pretraining_model(CONFIG)
  compile_for_pretraining(model, create_optimizer(warmup_steps=0, train_steps=10))
  one_batch = tf.data.Dataset.from_tensors(small_batch())
  stream = one_batch if batch_size_known else one_batch.unbatch().batch(4)
  stream = stream.filter(lambda *_: True)
  assert stream.cardinality() == tf.data.UNKNOWN_CARDINALITY
  expected = model.evaluate(one_batch, return_dict=True, verbose=0)
  with pytest.warns(UserWarning, match="ran out of data"):  # Keras's, at the phantom step
    results = model.evaluate(stream, return_dict=True, verbose=0)
  assert results == pytest.approx(expected, rel=1e-6)
  assert results["mlm_loss"] > 1 and results["nsp_loss"] > 0.3

"""A read that fails inside a training step leaves that step undone: the model's variables
(weights, optimizer state and step count, dropout's random state) are those of the steps
before it, so that the checkpoint saved then resumes exactly (docs/reliability.md)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.runtime.optimization import create_optimizer
from helpers import small_batch, tiny_bert

STEPS_BEFORE = 6  # the batches read before the one that fails


def batches(tmp_path, fails: bool) -> tf.data.Dataset:
  """`small_batch` again and again, each one reading a file first; with `fails`, the file of
  batch STEPS_BEFORE is missing."""
  tmp_path.mkdir()
  files = []
  for i in range(STEPS_BEFORE + 2):
    files.append(str(tmp_path / f"{i}.txt"))
    if not (fails and i == STEPS_BEFORE):
      open(files[-1], "w").write("text")
  batch = tf.data.Dataset.from_tensors(small_batch())
  reads = tf.data.Dataset.from_tensor_slices(files).map(tf.io.read_file)
  return tf.data.Dataset.zip(batch.repeat(), reads).map(lambda batch, _: batch)


def trained(dataset, steps, accumulation, steps_per_execution):
  keras.utils.set_random_seed(3)
  model = pretraining_model(tiny_bert())
  compile_for_pretraining(model, create_optimizer(warmup_steps=2, train_steps=20),
                          gradient_accumulation_steps=accumulation,
                          steps_per_execution=steps_per_execution)
  try:
    model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0)
  except tf.errors.NotFoundError:
    pass
  return model


@pytest.mark.e2e
@pytest.mark.parametrize("accumulation,steps_per_execution", [(1, 1), (2, 1), (1, 3)])
def test_the_failed_step_changes_nothing(tmp_path, accumulation, steps_per_execution):
  failed = trained(batches(tmp_path / "failing", fails=True), STEPS_BEFORE + 2,
                   accumulation, steps_per_execution)
  assert int(failed.optimizer.iterations.numpy()) == STEPS_BEFORE
  expected = trained(batches(tmp_path / "whole", fails=False), STEPS_BEFORE, accumulation,
                     steps_per_execution)
  seeds = [v for v in failed.variables if "seed_generator" in v.path]
  assert seeds, "the model's dropout keeps its random state among its variables"
  for got, want in zip(failed.variables + failed.optimizer.variables,
                       expected.variables + expected.optimizer.variables):
    np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=got.path)

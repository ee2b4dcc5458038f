"""Throughput counts optimizer updates, also when Keras runs several per callback call."""

import os

import keras
import numpy as np
import pytest

from bert_tf.training.callbacks import Throughput


@pytest.mark.parametrize("steps_per_execution", [1, 5])
def test_throughput_counts_updates(steps_per_execution):
  model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
  model.compile(optimizer="sgd", loss="mse", steps_per_execution=steps_per_execution)
  throughput = Throughput(global_batch_size=4, seq_length=8, skip_steps=10)
  x, y = np.ones((120, 3), "float32"), np.ones((120, 1), "float32")
  history = model.fit(x, y, batch_size=4, epochs=1, callbacks=[throughput], verbose=0)
  assert throughput._timed_steps == 20  # 30 updates, the first 10 left out
  assert history.history["examples_per_second"][0] > 0
  assert history.history["tokens_per_second"][0] == pytest.approx(
      8 * history.history["examples_per_second"][0])


def test_training_curves_stay_whole_across_a_resume(tmp_path):
  import json

  from bert_tf.training.callbacks import TrainingCurves
  model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
  model.compile(optimizer="sgd", loss="mse", steps_per_execution=2)
  x, y = np.ones((40, 3), "float32"), np.ones((40, 1), "float32")
  path = str(tmp_path / "history.jsonl")
  model.fit(x, y, batch_size=4, epochs=2, callbacks=[TrainingCurves(path, every=3)],
            verbose=0)
  steps = [json.loads(line)["step"] for line in open(path)]
  assert steps == [4, 6, 10, 12, 16, 18]  # the first call at or after each multiple of 3

  # A run resumed from the checkpoint at step 10 drops the records written after it.
  model.optimizer.iterations.assign(10)
  model.fit(x, y, batch_size=4, epochs=1, callbacks=[TrainingCurves(path, every=3)], verbose=0)
  records = [json.loads(line) for line in open(path)]
  assert [r["step"] for r in records] == [4, 6, 10, 12, 16, 18]
  assert set(records[0]) == {"step", "loss"}
  assert os.listdir(tmp_path) == ["history.jsonl"]

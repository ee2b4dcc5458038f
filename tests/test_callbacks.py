"""The training window: each record the exact mean of its own steps, across Keras's epochs (which
reset the metrics at every checkpoint) and across a resume; rates over training time only,
other callbacks' time told apart; the curves file whole across a resume."""

import json
import os
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.watching import run_time
from bert_tf.training.watching.callbacks import Timed, TrainingCurves, TrainingWindow

BATCH = 4


def constant_model(steps_per_execution=1):
  """Predicts 0 whatever it is fed, and learns nothing (learning rate 0): the mean squared
  error of batch i, whose targets are all i, is i**2."""
  model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, kernel_initializer="zeros")])
  model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse",
                steps_per_execution=steps_per_execution)
  model.optimizer.build(model.trainable_variables)
  return model


def batches(start: int = 0):
  """Batch i (from `start`): inputs 1, targets i."""
  return tf.data.Dataset.range(start, 10**6).map(
      lambda i: (tf.ones((BATCH, 1)), tf.fill((BATCH, 1), tf.cast(i, tf.float32))))


class Pause(keras.callbacks.Callback):
  """Sleeps `seconds` at each epoch's end, as a checkpoint or an evaluation takes time."""

  def __init__(self, seconds):
    super().__init__()
    self.seconds = seconds

  def on_epoch_end(self, epoch, logs=None):
    time.sleep(self.seconds)


def fit_window(model, *, every, epochs, steps_per_epoch, start=0, pause=0.0):
  """Fits `model` from step `start` with a window of `every` steps first and a paused callback
  (timed as checkpoints); returns the records and the clock."""
  model.optimizer.iterations.assign(start)
  clock, records = run_time.Clock(), []
  window = TrainingWindow(every, global_batch_size=BATCH, seq_length=8,
                          learning_rate=lambda steps: 1e-3 * (steps + 1), clock=clock,
                          listeners=[records.append])
  model.fit(batches(start), epochs=epochs, steps_per_epoch=steps_per_epoch, verbose=0,
            callbacks=[window, Timed(Pause(pause), clock, run_time.CHECKPOINTS)])
  return records, clock, window


def test_each_record_is_the_mean_of_its_own_steps_across_epochs():
  # Epochs (checkpoint intervals) of 5 steps; windows of 3 steps, so most windows straddle an
  # epoch's end, where Keras resets its running means.
  records, _, _ = fit_window(constant_model(), every=3, epochs=4, steps_per_epoch=5)
  assert [r["step"] for r in records] == [3, 6, 9, 12, 15, 18, 20]  # and the last 2 steps
  for record, first in zip(records, [0, 3, 6, 9, 12, 15, 18]):
    losses = [i * i for i in range(first, record["step"])]  # the steps' own losses
    assert record["loss"] == pytest.approx(np.mean(losses), rel=1e-6), record["step"]
    assert record["learning_rate"] == pytest.approx(
        1e-3 * np.mean([i + 1 for i in range(first, record["step"])]), rel=1e-6)
  # What Keras logs instead, the running mean since the epoch's start, drops at step 6 (the
  # first step of epoch 2): from the mean of 0..4 to 5**2 only. The windows' curve rises
  # smoothly, every step of it by less than the next.
  rises = np.diff([r["loss"] for r in records[:-1]])
  assert np.all(rises > 0) and np.all(np.diff(rises) > 0)


def test_a_resumed_run_goes_on_with_the_same_windows():
  records, _, _ = fit_window(constant_model(), every=3, epochs=2, steps_per_epoch=4, start=7)
  assert [r["step"] for r in records] == [9, 12, 15]  # the first window from the resumed step
  for record, first in zip(records, [7, 9, 12]):
    assert record["loss"] == pytest.approx(
        np.mean([i * i for i in range(first, record["step"])]), rel=1e-6)


@pytest.mark.parametrize("steps_per_execution", [1, 2])
def test_rates_count_training_time_only(steps_per_execution):
  pause = 0.3
  records, clock, window = fit_window(constant_model(steps_per_execution), every=2,
                                      epochs=4, steps_per_epoch=4, pause=pause)
  assert [r["step"] for r in records] == [2, 4, 6, 8, 10, 12, 14, 16]
  # Every window's training time (its timed steps' examples over its rate) is far below the
  # pause that follows each epoch: none of the pauses is in a rate.
  for record in records[1:]:
    assert 2 * BATCH / record["examples_per_second"] < pause / 3
  assert clock.seconds[run_time.CHECKPOINTS] >= 4 * pause
  assert clock.seconds[run_time.TRAINING] < pause
  assert set(clock.seconds) == {run_time.START_UP, run_time.TRAINING, run_time.CHECKPOINTS}
  # The run's rate: the steps after the first call (tracing) over the training time.
  assert window.timed_steps == 16 - steps_per_execution
  assert window.run_rates()["examples_per_second"] == pytest.approx(
      window.timed_steps * BATCH / clock.seconds[run_time.TRAINING], rel=1e-9)


def test_training_curves_stay_whole_across_a_resume(tmp_path):
  model = constant_model()
  path = str(tmp_path / "history.jsonl")

  def fit(start, epochs):
    model.optimizer.iterations.assign(start)
    curves = TrainingCurves(path)
    window = TrainingWindow(3, global_batch_size=BATCH, seq_length=8,
                            learning_rate=lambda steps: 0 * steps, clock=run_time.Clock(),
                            listeners=[curves.add])
    model.fit(batches(start), epochs=epochs, steps_per_epoch=5, verbose=0,
              callbacks=[window, curves])

  fit(0, epochs=2)
  assert [json.loads(line)["step"] for line in open(path)] == [3, 6, 9, 10]
  # A run resumed from the checkpoint at step 5 drops the records written after it.
  fit(5, epochs=1)
  records = [json.loads(line) for line in open(path)]
  assert [r["step"] for r in records] == [3, 6, 9, 10]
  assert records[1]["loss"] == pytest.approx(5 * 5)  # the resumed window: step 5 only
  assert os.listdir(tmp_path) == ["history.jsonl"]


def test_training_curves_write_nothing_before_training_begins(tmp_path):
  """A checkpoint saved before `fit` (step 0, a restart) writes the curves first: the file's
  records are not read yet, so it is left as it is."""
  path = tmp_path / "history.jsonl"
  path.write_text('{"step": 3, "loss": 1.0}\n')
  TrainingCurves(str(path)).write()
  assert path.read_text() == '{"step": 3, "loss": 1.0}\n'

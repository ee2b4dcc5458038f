"""Keras callbacks for what Keras lacks: steady-state throughput, the learning rate in the logs,
and curves at step granularity for the final plot."""

import json
import time

import keras
import tensorflow as tf


class Throughput(keras.callbacks.Callback):
  """Examples and tokens per second, leaving out the first steps (tracing, compilation).

  Adds `examples_per_second` and `tokens_per_second` to each epoch's logs, so the progress
  bar, TensorBoard and `metrics.json` all see them.
  """

  def __init__(self, global_batch_size: int, seq_length: int, skip_steps: int = 10):
    super().__init__()
    self.global_batch_size = global_batch_size
    self.seq_length = seq_length
    self.skip_steps = skip_steps
    self._first_step = None
    self._start = None
    self._start_step = 0
    self._timed_steps = 0
    self.examples_per_second = 0.0

  def on_train_begin(self, logs=None):
    if self._first_step is None:
      self._first_step = int(self.model.optimizer.iterations.numpy())

  def on_train_batch_end(self, batch, logs=None):
    # Counted in optimizer updates: with --steps_per_execution=N, Keras calls this once per N.
    step = int(self.model.optimizer.iterations.numpy())
    if self._start is None and step - self._first_step >= self.skip_steps:
      self._start, self._start_step = time.perf_counter(), step
    elif self._start is not None:
      self._timed_steps = step - self._start_step

  def on_epoch_end(self, epoch, logs=None):
    if self._start is not None and self._timed_steps:
      elapsed = time.perf_counter() - self._start
      self.examples_per_second = self._timed_steps * self.global_batch_size / elapsed
    if logs is not None:
      logs["examples_per_second"] = self.examples_per_second
      logs["tokens_per_second"] = self.examples_per_second * self.seq_length


class LearningRate(keras.callbacks.Callback):
  """Adds the optimizer's current learning rate to each epoch's logs."""

  def on_epoch_end(self, epoch, logs=None):
    if logs is not None:
      logs["learning_rate"] = float(keras.ops.convert_to_numpy(
          self.model.optimizer.learning_rate))


class TrainingCurves(keras.callbacks.Callback):
  """Appends the running losses and accuracies every `every` steps to a JSON-lines file.

  The file grows across resumed runs (each line carries the optimizer step), so the curves of
  a run that was interrupted are whole.
  """

  def __init__(self, path: str, every: int = 20):
    super().__init__()
    self.path = path
    self.every = every

  def on_train_batch_end(self, batch, logs=None):
    step = int(self.model.optimizer.iterations.numpy())
    if logs and step % self.every == 0:
      record = {"step": step, **{name: float(value) for name, value in logs.items()}}
      with tf.io.gfile.GFile(self.path, "a") as f:
        f.write(json.dumps(record) + "\n")

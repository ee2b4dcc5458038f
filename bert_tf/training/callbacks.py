"""Keras callbacks for what Keras lacks: steady-state throughput, the learning rate in the logs,
and curves at step granularity for the final plot.

None of them reads a variable back to the host on each step (a read waits for the step to
finish, so the host cannot queue the next one): the optimizer step is counted on the host from
the batch index Keras passes, and the logs are read only every so many steps.
"""

import json
import time

import keras
import tensorflow as tf

from bert_tf import files


class StepCounter(keras.callbacks.Callback):
  """Knows the optimizer step after each call, counted in updates on the host: read once when
  `fit` begins, then advanced by the batch index Keras passes (with `steps_per_execution=N`,
  Keras calls once per N updates with the index of the last)."""

  def __init__(self):
    super().__init__()
    self.step = 0
    self._epoch_start = 0

  def on_train_begin(self, logs=None):
    self.step = int(self.model.optimizer.iterations.numpy())

  def on_epoch_begin(self, epoch, logs=None):
    self._epoch_start = self.step

  def on_train_batch_end(self, batch, logs=None):
    self.step = self._epoch_start + batch + 1


class Throughput(StepCounter):
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
    super().on_train_begin(logs)
    if self._first_step is None:
      self._first_step = self.step

  def on_train_batch_end(self, batch, logs=None):
    super().on_train_batch_end(batch, logs)
    if self._start is None and self.step - self._first_step >= self.skip_steps:
      self._start, self._start_step = time.perf_counter(), self.step
    elif self._start is not None:
      self._timed_steps = self.step - self._start_step

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


class TrainingCurves(StepCounter):
  """The running losses and accuracies every `every` steps, as a JSON-lines file.

  Records are kept in memory and the whole file is rewritten atomically at the end of each
  epoch (a checkpoint interval in `fitting.fit`) and of training: never appended to, since on an
  object store an append rewrites the object. A resumed run keeps the records up to its
  starting step and drops the later ones (written after the checkpoint it resumes from), so
  the curves of an interrupted run are whole.
  """

  def __init__(self, path: str, every: int = 20):
    super().__init__()
    self.path = path
    self.every = every
    self._records = []
    self._next_record = 0

  def on_train_begin(self, logs=None):
    super().on_train_begin(logs)
    self._records = [record for record in _read_records(self.path)
                     if record["step"] <= self.step]
    self._next_record = (self.step // self.every + 1) * self.every

  def on_train_batch_end(self, batch, logs=None):
    super().on_train_batch_end(batch, logs)
    if logs and self.step >= self._next_record:  # the first call at or after each multiple
      self._records.append(
          {"step": self.step, **{name: float(value) for name, value in logs.items()}})
      self._next_record = (self.step // self.every + 1) * self.every

  def on_epoch_end(self, epoch, logs=None):
    self._write()

  def on_train_end(self, logs=None):
    self._write()

  def add(self, record: dict) -> None:
    """Adds a record made elsewhere (a held-out evaluation) and rewrites the file."""
    self._records.append(record)
    self._write()

  def _write(self):
    files.write_text(self.path, "".join(json.dumps(r) + "\n" for r in self._records))


def _read_records(path: str) -> list:
  if not tf.io.gfile.exists(path):
    return []
  with tf.io.gfile.GFile(path) as f:
    return [json.loads(line) for line in f if line.strip()]

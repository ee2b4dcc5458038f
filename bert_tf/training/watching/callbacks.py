"""Keras callbacks for what Keras lacks: training scalars by global step, each the mean over
the last `every` steps only, with honest rates; the time each other callback takes; the curves
file.

Keras's logs are running means since the start of the epoch (a checkpoint interval here), reset
at each one, so a curve of them jumps at every checkpoint. `TrainingWindow` instead reads the
metrics' accumulated totals and counts (`metric.variables`) at the ends of each window of
`every` steps and divides the differences: the mean over those steps, whatever the epochs.

None of them reads a variable back to the host on each step (a read waits for the step to
finish, so the host cannot queue the next one): the optimizer step is counted on the host from
the batch index Keras passes, and the totals are read once per window and once per epoch.
"""

import json
import time

import keras
import numpy as np
import tensorflow as tf

from bert_tf import files
from bert_tf.runtime.steps import StepCounter
from bert_tf.training.watching import run_time, summaries


def metric_totals(model: keras.Model) -> dict:
  """{log name: (total, count)} of the model's mean metrics, {name: (total, None)} of its sums,
  read from their variables (one read per variable)."""
  totals = {}
  for metric in model.metrics:
    # A compiled-metrics container lists its metrics in the order of its results' names.
    names, leaves = ((list(metric.result()), metric.metrics) if hasattr(metric, "metrics")
                     else ([metric.name], [metric]))
    for name, leaf in zip(names, leaves):
      # TensorFlow's read, not numpy's: numpy cannot read a MultiWorkerMirroredStrategy variable.
      values = [float(tf.convert_to_tensor(v.value)) for v in leaf.variables]
      totals[name] = (values[0], values[1] if len(values) > 1 else None)
  return totals


def _difference(later: dict, earlier: dict | None) -> dict:
  if earlier is None:  # the metrics were reset: zero
    return dict(later)
  return {name: (total - earlier[name][0], None if count is None else count - earlier[name][1])
          for name, (total, count) in later.items()}


def _sum(a: dict, b: dict) -> dict:
  return {name: (total + b[name][0], None if count is None else count + b[name][1])
          for name, (total, count) in a.items()}


class TrainingWindow(StepCounter):
  """Every `every` steps, at the global step: the mean of each metric over those steps only,
  the mean learning rate, and the rates over training time only (examples/s, non-padding
  tokens/s), the padding's share and, with `peak_flops`, model-FLOPs utilisation. Each record
  goes to `listeners` (the TensorBoard writer, the curves, the progress line).

  Must be the first callback: it times each call of the training function from its
  `on_train_batch_begin`, called first, to its `on_train_batch_end`, called first too, and
  adds the seconds to `clock` as training (the run's first call, which traces and compiles,
  as start-up). Its own reads of the totals come before that end, so a step still running on
  a device is waited for inside the training time.
  """

  def __init__(self, every: int, *, global_batch_size: int, seq_length: int,
               learning_rate, clock: run_time.Clock, listeners=(),
               flops_per_sequence: float = 0.0, peak_flops: float = 0.0):
    super().__init__()
    self.every = every
    self.global_batch_size = global_batch_size
    self.seq_length = seq_length
    self.learning_rate = learning_rate  # step(s) -> learning rate(s): the schedule
    self.clock = clock
    self.listeners = list(listeners)
    self.flops_per_sequence = flops_per_sequence
    self.peak_flops = peak_flops
    self.timed_steps = 0  # over the run: the steps and seconds of training time
    self.timed_seconds = 0.0
    self.tokens = 0.0
    self.window_steps = 0  # the steps of the closed windows, whose tokens are counted
    self._traced = False
    self._reset_window()

  def _reset_window(self):
    self._window_start = self.step
    self._carried = None  # totals of the window's earlier epochs
    self._base = None  # totals at the window's start in this epoch (None: zero)
    self._window_steps = self._window_seconds = 0

  def on_train_begin(self, logs=None):
    super().on_train_begin(logs)
    self._reset_window()

  def on_epoch_begin(self, epoch, logs=None):
    super().on_epoch_begin(epoch, logs)
    self._base = None  # Keras has just reset the metrics

  def on_train_batch_begin(self, batch, logs=None):
    self._began = time.perf_counter()

  def on_train_batch_end(self, batch, logs=None):
    before = self.step
    super().on_train_batch_end(batch, logs)
    due = self.step // self.every > self._window_start // self.every
    totals = metric_totals(self.model) if due else None  # waits for the step
    seconds = time.perf_counter() - self._began
    if not self._traced:  # tracing and compiling: not a rate's
      self._traced = True
      self.clock.add(run_time.START_UP, seconds)
    else:
      self.clock.add(run_time.TRAINING, seconds)
      self._window_steps += self.step - before
      self._window_seconds += seconds
    if due:
      window = _difference(totals, self._base)
      self._base = totals
      self._close(window if self._carried is None else _sum(window, self._carried))

  def on_epoch_end(self, epoch, logs=None):
    if self.step > self._window_start:  # the window goes on in the next epoch
      totals = _difference(metric_totals(self.model), self._base)
      self._carried = totals if self._carried is None else _sum(self._carried, totals)

  def on_train_end(self, logs=None):
    if self.step > self._window_start and self._carried is not None:
      self._close(self._carried)  # the last steps (the end, a stop) as a shorter window

  def _close(self, window: dict) -> None:
    """Makes the record of the window's totals `window` and hands it to the listeners."""
    steps = self.step - self._window_start
    tokens = window.get("tokens", (None, None))[0]  # a model without the count: None
    record = {"step": self.step}
    for name, (total, count) in window.items():
      if count is not None:  # means; the token count is a sum
        record[name] = total / count if count else 0.0
    updates = np.arange(self._window_start, self.step)  # the steps the updates ran at
    record["learning_rate"] = float(np.mean(keras.ops.convert_to_numpy(
        self.learning_rate(updates))))
    record.update(self._rates(tokens, steps, self._window_steps, self._window_seconds))
    self.tokens = None if tokens is None else self.tokens + tokens
    self.window_steps += steps
    self.timed_steps += self._window_steps
    self.timed_seconds += self._window_seconds
    self._carried = None
    self._window_start = self.step
    self._window_steps = self._window_seconds = 0
    for listener in self.listeners:
      listener(record)

  def _rates(self, tokens: float | None, steps: int, timed_steps: int,
             seconds: float) -> dict:
    """Examples and real tokens per second of training time, padding's share of the tokens
    and the model-FLOPs utilisation, of `steps` steps that trained on `tokens` tokens, of
    which `timed_steps` took `seconds` of training time."""
    if not seconds:
      return {}
    examples_per_second = timed_steps * self.global_batch_size / seconds
    rates = {"examples_per_second": examples_per_second}
    if tokens is not None:
      rates["tokens_per_second"] = tokens / steps * timed_steps / seconds
      rates["padding_share"] = 1 - tokens / (steps * self.global_batch_size * self.seq_length)
    if self.peak_flops:
      rates["model_flops_utilisation"] = (
          examples_per_second * self.flops_per_sequence / self.peak_flops)
    return rates

  def run_rates(self) -> dict:
    """The whole run's rates over its training time (what the windows saw), for the final
    figures (0 examples/s when it trained no timed step)."""
    return (self._rates(self.tokens, self.window_steps, self.timed_steps, self.timed_seconds)
            or {"examples_per_second": 0.0})


class Timed(keras.callbacks.Callback):
  """Runs `callback`, adding the seconds each of its calls takes to `clock` under `kind`
  (checkpoints, held-out evaluations), so that they are told apart from training."""

  HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
           "on_train_batch_begin", "on_train_batch_end")

  def __init__(self, callback: keras.callbacks.Callback, clock: run_time.Clock, kind: str):
    super().__init__()
    self.callback = callback
    for hook in self.HOOKS:
      setattr(self, hook, clock.timing(kind, getattr(callback, hook)))

  def set_model(self, model):
    super().set_model(model)
    self.callback.set_model(model)

  def set_params(self, params):
    super().set_params(params)
    self.callback.set_params(params)


class TrainingCurves(StepCounter):
  """The windows' records and the held-out evaluations', as a JSON-lines file (history.jsonl).

  Records are kept in memory and the whole file is rewritten atomically at the end of each
  epoch (a checkpoint interval in `fitting.fit`) and of training: never appended to, since on an
  object store an append rewrites the object. A resumed run keeps the records up to its
  starting step and drops the later ones (written after the checkpoint it resumes from), so
  the curves of an interrupted run are whole.
  """

  def __init__(self, path: str):
    super().__init__()
    self.path = path
    self._records = None  # read from the file when training begins

  def on_train_begin(self, logs=None):
    super().on_train_begin(logs)
    self._records = [record for record in read_records(self.path)
                     if record["step"] <= self.step]

  def on_epoch_end(self, epoch, logs=None):
    self.write()

  def on_train_end(self, logs=None):
    self.write()

  def add(self, record: dict) -> None:
    """Keeps a record (a window's, a held-out evaluation's) for the next write."""
    self._records.append(record)

  def write(self) -> None:
    """Rewrites the file with the records kept (nothing before training begins: the file's
    records are not read yet)."""
    if self._records is None:
      return
    files.write_text(self.path, "".join(json.dumps(r) + "\n" for r in self._records))


def read_records(path: str) -> list:
  """The records of a history.jsonl file (none when there is no file)."""
  if not tf.io.gfile.exists(path):
    return []
  with tf.io.gfile.GFile(path) as f:
    return [json.loads(line) for line in f if line.strip()]


class TensorBoardScalars(StepCounter):
  """The windows' records in TensorBoard's `train` run, at their global steps; flushed at each
  epoch's end (a checkpoint), so that a run resumed from that checkpoint finds them."""

  def __init__(self, directory: str):
    super().__init__()
    self.writer = summaries.ScalarWriter(directory)

  def on_train_begin(self, logs=None):
    super().on_train_begin(logs)
    self.writer.start(self.step)

  def add(self, record: dict) -> None:
    self.writer.write(record["step"], {k: v for k, v in record.items() if k != "step"})

  def on_epoch_end(self, epoch, logs=None):
    self.writer.flush()

  def on_train_end(self, logs=None):
    self.writer.flush()

"""One progress line for the whole run, in optimizer steps, in place of Keras's per-epoch bars
(Keras epochs are checkpoint intervals here):

    step 1,500/2,000 | 79 examples/s | 6m 20s left | loss: 5.123 mlm_loss: 4.470 ...

The figures are the last window's (`callbacks.TrainingWindow`): means over its steps only, the
rate over training time only; the time left is the wall time's, pauses included. On a terminal
the line is rewritten in place; otherwise (CI, a log file) a line is printed every
`every_steps` steps. Nothing is read back from the device: the step is counted on the host.
"""

import shutil
import time

from bert_tf import console
from bert_tf.runtime.steps import StepCounter
from bert_tf.training.watching.run_time import duration

SHOWN = ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy")

def lines_every(train_steps: int, log_every: int = 1) -> int:
  """Steps between printed lines off a terminal: about 20 lines a run, at least every 100, a
  multiple of `log_every` (each line shows a new window)."""
  every = max(1, min(100, train_steps // 20))
  return max(log_every, round(every / log_every) * log_every)


def progress_line(step: int, train_steps: int, examples_per_second: float | None,
                  seconds_left: float | None, record: dict, nsp: bool = True) -> str:
  """The line; an MLM-only run's (`nsp` False) without NSP's figures, of a head nothing
  trains."""
  parts = [f"step {step:,}/{train_steps:,}"]
  if examples_per_second is not None:
    parts.append(f"{examples_per_second:,.0f} examples/s")
  if seconds_left is not None:
    parts.append(f"{duration(seconds_left)} left")
  parts.append(" ".join(f"{name}: {float(record[name]):.4f}" for name in SHOWN
                        if name in record and (nsp or not name.startswith("nsp_"))))
  return " | ".join(parts)


class Progress(StepCounter):
  """Shows the run's progress with the last window's figures (given to `add`); use with
  `fit(verbose=0)`."""

  def __init__(self, train_steps: int, *, terminal: bool | None = None,
               every_steps: int | None = None, every_seconds: float = 0.5, nsp: bool = True):
    super().__init__()
    self.nsp = nsp
    self.train_steps = train_steps
    self.terminal = console.is_terminal() if terminal is None else terminal
    self.every_steps = every_steps or lines_every(train_steps)
    self.every_seconds = every_seconds
    self._clock = None  # (time, step) of the first finished step: tracing left out
    self._shown_at = 0.0
    self._shown_step = None
    self._record = {}  # the last window's

  def add(self, record: dict) -> None:
    self._record = record

  def on_train_begin(self, logs=None):
    super().on_train_begin(logs)  # one read per fit: where this run (or part of it) starts
    self._shown_step = self.step
    self._clock = None

  def on_train_batch_end(self, batch, logs=None):
    super().on_train_batch_end(batch, logs)
    now = time.monotonic()
    if self._clock is None:
      self._clock = (now, self.step)
    if self.terminal and now - self._shown_at >= self.every_seconds:
      self._show(now)
    elif not self.terminal and (
        self.step // self.every_steps > self._shown_step // self.every_steps):
      self._show(now)  # also when steps_per_execution jumps over the multiple

  def on_train_end(self, logs=None):
    if self._clock is not None and self._shown_step != self.step:
      self._show(time.monotonic())
    if self.terminal:
      console.status("")

  def _show(self, now: float) -> None:
    self._shown_at, self._shown_step = now, self.step
    left = None
    start_time, start_step = self._clock
    if self.step > start_step and now > start_time:
      left = (self.train_steps - self.step) * (now - start_time) / (self.step - start_step)
    line = progress_line(self.step, self.train_steps,
                         self._record.get("examples_per_second"), left, self._record,
                         self.nsp)
    if self.terminal:
      console.status(line[:shutil.get_terminal_size().columns - 1])
    else:
      print(line, flush=True)

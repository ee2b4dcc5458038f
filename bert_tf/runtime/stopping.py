"""When a run saves and stops (docs/design.md#checkpoints), pre-training's and fine-tuning's
alike: `CheckpointEvery`.

- A checkpoint every `--checkpoint_every` steps and at `train_steps`, where training stops
  (pre-training's; a fine-tune's `fit` ends with its epoch's data, and it saves at the end).
- SIGTERM (preemption), SIGHUP (a closed terminal) and SIGINT (Ctrl-C) save a checkpoint at
  the current step and stop within a step. A second SIGINT meanwhile aborts at once (the
  operating system's default: the process ends, even inside TensorFlow's C++ code); the
  previous checkpoint is then still the latest, or the new one if it was complete.
- A non-finite loss stops training before anything is saved: the last checkpoint is the last
  good one (pre-training's `on_nan="rollback"` restores it and goes on past the offending
  batches). The loss is read at each save and every `LOSS_CHECK_EVERY` steps, never on every
  step.
- With `steps_per_execution=N`, Keras calls back once per N updates: N must divide the
  checkpoint interval and `train_steps` (`TrainConfig.check`), so that every save falls on a
  callback.
How a checkpoint is written and read back: `checkpointing.py`.
"""

import logging
import math
import os
import signal

from bert_tf import console
from bert_tf.errors import UserError
from bert_tf.runtime.checkpointing import Checkpointer
from bert_tf.runtime.steps import StepCounter

log = logging.getLogger("bert_tf")

LOSS_CHECK_EVERY = 100  # steps between reads of the loss, besides each save

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)  # SIGHUP: a closed terminal


class CheckpointEvery(StepCounter):
  """Saves every `every` steps and at `train_steps` (if given), where it also stops training;
  stops and saves on SIGTERM and SIGINT; stops without saving on a non-finite loss, checked at
  each save and every `LOSS_CHECK_EVERY` steps (a read of the loss waits for the step: not on
  every step)."""

  def __init__(self, checkpointer: Checkpointer, every: int, train_steps: int | None = None):
    super().__init__()
    self.checkpointer = checkpointer
    self.every = every
    self.train_steps = train_steps
    self.stop_reason = None
    self.non_finite = False
    self._stopped_by = None  # the signal asking to stop, if any
    self._previous_handlers = {}
    self._next_loss_check = 0

  def on_train_end(self, logs=None):
    for signum, handler in self._previous_handlers.items():
      if not (signum == signal.SIGINT and self._stopped_by == signal.SIGINT):
        signal.signal(signum, handler or signal.SIG_DFL)  # after a Ctrl-C, another aborts

  def _on_signal(self, signum, frame):
    if self._stopped_by is None:
      self._stopped_by = signum
    if signum == signal.SIGINT:
      signal.signal(signal.SIGINT, signal.SIG_DFL)  # a second Ctrl-C ends the process at once
      # Straight to the descriptor: a handler must not re-enter a write to sys.stderr.
      os.write(2, (("\n" if console.is_terminal() else "") + "Interrupted: saving a checkpoint "
                   "at the end of this step (Ctrl-C again aborts at once)\n").encode())

  def on_train_begin(self, logs=None):
    super().on_train_begin(logs)
    steps_per_execution = self.model.steps_per_execution
    if self.step % steps_per_execution:
      raise UserError(f"the run is at step {self.step}, not a multiple of steps_per_execution "
                      f"{steps_per_execution}: resume with the steps_per_execution it ran with")
    self.stop_reason = None
    self.non_finite = False
    self._next_loss_check = self.step + LOSS_CHECK_EVERY
    self._previous_handlers = {signum: signal.signal(signum, self._on_signal)
                               for signum in _STOP_SIGNALS}

  def on_train_batch_end(self, batch, logs=None):
    super().on_train_batch_end(batch, logs)
    step = self.step
    stopping = self._stopped_by is not None
    at_end = self.train_steps is not None and step >= self.train_steps
    saving = stopping or step % self.every == 0 or at_end
    if saving or step >= self._next_loss_check:
      self._next_loss_check = step + LOSS_CHECK_EVERY
      loss = (logs or {}).get("loss")
      if loss is not None and not math.isfinite(float(loss)):
        self.non_finite = True
        self.stop_reason = (f"the loss is not finite at step {step}: training stopped, "
                            "nothing saved; the latest checkpoint (step "
                            f"{self.checkpointer.latest_step}) is the last good one")
        self.model.stop_training = True
        return
    if stopping:
      path = self.checkpointer.save()
      self.stop_reason = (
          f"interrupted at step {step}, saved; re-run the command to go on"
          if self._stopped_by == signal.SIGINT else
          f"stopped by {signal.Signals(self._stopped_by).name} at step {step}, checkpoint "
          f"{path}: run the same command to "
          "resume")
      self.model.stop_training = True
    elif saving:
      self.checkpointer.save()
      log.info("checkpoint at step %s", f"{step:,}")
    if at_end:
      self.model.stop_training = True

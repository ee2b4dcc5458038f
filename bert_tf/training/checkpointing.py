"""Checkpoints every N steps, exact resume, SIGTERM, non-finite losses (docs/design.md#checkpoints).

Keras's `BackupAndRestore` restores at epoch granularity and never the data position, so
this is written here on `tf.train.CheckpointManager`:
- A checkpoint holds the weights, the optimizer (slots and step count, hence the learning-rate
  schedule) and the dropout random-number state. TensorFlow writes the files first and the
  `checkpoint` index that names the latest one last, so a kill mid-write leaves the previous
  checkpoint as the latest.
- The data position (`data_position.py`): where each input pipeline's stream is, so that a
  resumed run sees what an uninterrupted run would have seen, at the cost of one piece.
- SIGTERM (preemption), SIGHUP (a closed terminal) and SIGINT (Ctrl-C) save a checkpoint at
  the current step and stop within a step. A second SIGINT meanwhile aborts at once (the
  operating system's default: the process ends, even inside TensorFlow's C++ code); the
  previous checkpoint is then still the latest, or the new one if it was complete.
- A non-finite loss stops training before anything is saved: the last checkpoint is the last
  good one. With `on_nan="rollback"` the trainer restores it and goes on past the offending
  batches (the data position is kept across that restore). The
  loss is read at each save and every `LOSS_CHECK_EVERY` steps, never on every step.
- The latest checkpoint unreadable (a truncated file): a warning naming it, and the newest
  readable one is restored. A save that fails (disk full): `TrainingStopped` naming the
  checkpoint, the previous one still the latest.
- Under `MultiWorkerMirroredStrategy` every worker restores the newest step all of them have.
- With `steps_per_execution=N`, Keras calls back once per N updates: N must divide the
  checkpoint interval and `train_steps`, so that every save falls on a callback.
"""

import logging
import math
import os
import re
import signal

import keras
import numpy as np
import tensorflow as tf

from bert_tf import console
from bert_tf.errors import UserError
from bert_tf.model_dir import CHECKPOINTS
from bert_tf.training import failures
from bert_tf.training.callbacks import StepCounter

log = logging.getLogger("bert_tf")

LOSS_CHECK_EVERY = 100  # steps between reads of the loss, besides each save


class UnreadableCheckpoint(Exception):
  """A checkpoint whose files cannot be read (truncated, missing)."""


def _unreadable(path: str) -> str:
  """Why the checkpoint `path` cannot be read, or "" when every tensor in it can."""
  try:
    reader = tf.train.load_checkpoint(path)
    for name in reader.get_variable_to_shape_map():
      reader.get_tensor(name)
  except (IndexError, ValueError, tf.errors.OpError) as e:
    return _first_line(e)
  return ""


def _first_line(error: Exception) -> str:
  return (str(error).strip().splitlines() or [type(error).__name__])[0][:300]


def _restore_fitting(checkpoint: tf.train.Checkpoint, path: str, advice: str,
                     partial: bool = False) -> None:
  """Restores `path` into `checkpoint`; a checkpoint of another model is a UserError, one
  that cannot be read an `UnreadableCheckpoint`."""
  try:
    status = checkpoint.restore(path)
    (status.expect_partial() if partial else status).assert_existing_objects_matched()
  except (AssertionError, IndexError, ValueError, tf.errors.OpError) as e:
    reason = _unreadable(path)
    if reason:
      raise UnreadableCheckpoint(f"the checkpoint {path} cannot be read: {reason}") from None
    raise UserError(f"the checkpoint {path} does not fit this model (another --config or "
                    f"vocabulary? {advice}): {_first_line(e)}") from None


class TrainingStopped(Exception):
  """Training ended early: preempted (SIGTERM) or a non-finite loss."""


def _random_states(model: keras.Model) -> list:
  """The state variables of the model's random-number generators (dropout): the variables of
  the model that are neither its weights nor its metrics'."""
  others = {id(v) for v in model.weights} | {
      id(v) for metric in model.metrics for v in metric.variables}
  return [v for v in model.variables if id(v) not in others]


class Checkpointer:
  """Saves and restores model + optimizer + dropout RNG state under `directory`."""

  def __init__(self, directory: str, model: keras.Model, optimizer, keep: int,
               data_position: tf.Variable):
    self.optimizer = optimizer
    self.model = model
    self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer,
                                          seed_states=_random_states(model),
                                          data_position=data_position)
    self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=keep)

  @property
  def step(self) -> int:
    return int(self.optimizer.iterations.numpy())

  def restore(self, strategy: tf.distribute.Strategy | None = None) -> int:
    """Restores the newest readable checkpoint, if any (warning about each newer one that
    cannot be read); returns its step (0 when starting afresh). Under a multi-worker
    `strategy` every worker restores the newest step that all of them have."""
    self.remove_partial_saves()  # of a run killed while saving
    indexed = self.manager.checkpoints
    paths = list(reversed(indexed or self._checkpoints_without_index()))  # newest first
    for path in paths:
      try:
        _restore_fitting(self.checkpoint, path, "use a new --model_dir")
        break
      except UnreadableCheckpoint as e:
        log.warning("%s: resuming from the previous one", e)
    else:
      if paths:
        raise UserError(f"no checkpoint in {self.manager.directory} can be read (the latest: "
                        f"{paths[0]}): use a new --model_dir")
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
      self._restore_common_step(strategy)
    if paths and not indexed:
      self.save()  # indexed again, as the latest
    return self.step

  def _checkpoints_without_index(self) -> list[str]:
    """The checkpoints on disk, oldest first, when the `checkpoint` index file that names them
    is removed or unreadable (else the run would start again over them)."""
    directory = self.manager.directory
    steps = sorted(int(m.group(1)) for m in (
        re.fullmatch(r"ckpt-(\d+)\.index", os.path.basename(path))
        for path in tf.io.gfile.glob(os.path.join(directory, "ckpt-*.index"))) if m)
    paths = [os.path.join(directory, f"ckpt-{step}") for step in steps]
    if paths:
      log.warning("%s names no checkpoint (missing or unreadable), but %d are there: resuming "
                  "from the newest readable one (the older ones are kept, not rotated)",
                  os.path.join(directory, "checkpoint"), len(paths))
    return paths

  def _restore_common_step(self, strategy: tf.distribute.MultiWorkerMirroredStrategy):
    """Goes back to the newest step every worker restored: workers killed at once can be
    caught on either side of a save."""
    steps = strategy.gather(strategy.run(lambda: tf.constant([self.step], tf.int64)), axis=0)
    steps = [int(step) for step in steps.numpy()]
    common = min(steps)
    if self.step == common:
      return
    path = os.path.join(self.manager.directory, f"ckpt-{common}")
    if path not in self.manager.checkpoints:
      raise UserError(f"this worker's checkpoints in {self.manager.directory} (the latest at "
                      f"step {self.step}) do not include step {common}, the latest of another "
                      f"worker (the workers' steps: {steps}): use a new --model_dir")
    log.warning("Workers restored steps %s: going back to step %d, which all of them have",
                steps, common)
    _restore_fitting(self.checkpoint, path, "use a new --model_dir")

  def continue_from(self, model_dir: str) -> int:
    """Takes the weights and the optimizer (moments, step, so the learning-rate schedule) of
    another run's latest checkpoint: phase 2 going on from phase 1. Returns that step."""
    latest = tf.train.latest_checkpoint(os.path.join(model_dir, CHECKPOINTS))
    _restore_fitting(tf.train.Checkpoint(model=self.model, optimizer=self.optimizer), latest,
                     "check --init_checkpoint", partial=True)
    return self.step

  @property
  def latest_step(self) -> int:
    latest = self.manager.latest_checkpoint
    return int(latest.rsplit("-", 1)[1]) if latest else 0

  def weights_are_finite(self) -> bool:
    return all(np.isfinite(np.asarray(v.numpy())).all() for v in self.model.trainable_weights)

  def save(self) -> str:
    """Saves at the current step, unless a weight is not finite (then nothing is written).
    A write that fails (disk full, any file-system error) stops training: the previous
    checkpoint stays the latest, and a re-run resumes from it."""
    if not self.weights_are_finite():
      raise TrainingStopped(f"weights are not finite at step {self.step}: not saved")
    try:
      return self.manager.save(checkpoint_number=self.step)
    except tf.errors.OpError as e:
      path = os.path.join(self.manager.directory, f"ckpt-{self.step}")
      self.remove_partial_saves()  # what was written of it: a full disk is not kept full
      latest = self.manager.latest_checkpoint
      raise TrainingStopped(
          f"could not write the checkpoint {path}: {failures.describe(e)}; " + (
              f"the latest checkpoint is still {latest}: run the same command to resume"
              if latest else "no checkpoint is written yet: run the same command to start "
              "again")) from None

  def remove_partial_saves(self) -> None:
    """Removes what a save that failed or was cut short left (TensorFlow's `ckpt-N_temp`
    directories): never a checkpoint, and as large as one."""
    pattern = os.path.join(self.manager.directory, "ckpt-*_temp")
    for partial in tf.io.gfile.glob(pattern):
      try:
        tf.io.gfile.rmtree(partial)
      except tf.errors.OpError as e:
        log.warning("could not remove the partial save %s: %s", partial, failures.describe(e))


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)  # SIGHUP: a closed terminal


class CheckpointEvery(StepCounter):
  """Saves every `every` steps and at `train_steps`, where it also stops training; stops and
  saves on SIGTERM and SIGINT; stops without saving on a non-finite loss, checked at each
  save and every `LOSS_CHECK_EVERY` steps (a read of the loss waits for the step: not on
  every step)."""

  def __init__(self, checkpointer: Checkpointer, every: int, train_steps: int):
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
    saving = stopping or step % self.every == 0 or step >= self.train_steps
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
    if step >= self.train_steps:
      self.model.stop_training = True


def check_steps_per_execution(steps_per_execution: int, checkpoint_every: int,
                              train_steps: int) -> None:
  """Keras calls back once per `steps_per_execution` updates: every checkpoint and the end
  of training must fall on a call."""
  if steps_per_execution <= 0:
    raise UserError("steps_per_execution must be positive")
  for name, value in (("checkpoint_every", checkpoint_every), ("train_steps", train_steps)):
    if value % steps_per_execution:
      raise UserError(f"{name} {value} is not a multiple of steps_per_execution "
                      f"{steps_per_execution}: checkpoints and the end of training fall only "
                      "between executions")


def intervals(start_step: int, train_steps: int, every: int) -> tuple[int, int]:
  """(epochs, steps_per_epoch) for `fit` to run from `start_step` to `train_steps`, one Keras
  epoch per checkpoint interval (CheckpointEvery stops it exactly at `train_steps`)."""
  steps_per_epoch = min(every, train_steps - start_step)
  return math.ceil((train_steps - start_step) / steps_per_epoch), steps_per_epoch

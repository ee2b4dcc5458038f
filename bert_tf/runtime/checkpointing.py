"""Checkpoint storage: save, resume exactly, repair (docs/design.md#checkpoints).

Keras's `BackupAndRestore` restores at epoch granularity and never the data position, so
this is written here on `tf.train.CheckpointManager`:
- A checkpoint holds the weights, the optimizer (slots and step count, hence the learning-rate
  schedule), the dropout random-number state, the data position (`data_position.py`: where
  each input pipeline's stream is, so that a resumed run sees what an uninterrupted run would
  have seen, at the cost of one piece) and the run's record (`bert_tf/run_record.py`: what the
  model, vocabulary, settings and corpus were). TensorFlow writes the files first and the
  `checkpoint` index that names the latest one last, so a kill mid-write leaves the previous
  checkpoint as the latest.
- The checkpoint restored is the newest whole one, chosen as every reader of a model_dir
  chooses (`model_dir.newest_whole`): a newer one cut short or with a changed byte is passed
  over in a line, and kept; the `checkpoint` index lost: the checkpoints on disk are found,
  and the one restored is indexed again. A save that fails (disk full): `TrainingStopped`
  naming the checkpoint, what was written of it removed, the previous one still the latest. A
  weight that is not finite is never saved.
- Under `MultiWorkerMirroredStrategy` every worker restores the newest step all of them have;
  a worker new to the run (more workers than it had) restores the chief's checkpoint of it.
When a run saves and stops (every N steps, signals, non-finite losses): `stopping.py`.
"""

import logging
import os

import keras
import numpy as np
import tensorflow as tf

from bert_tf import model_dir, run_record
from bert_tf.errors import UserError
from bert_tf.runtime import failures

log = logging.getLogger("bert_tf")


class TrainingStopped(Exception):
  """Training ended early: preempted (SIGTERM), a non-finite loss, a failed save or read."""


def _first_line(error: Exception) -> str:
  return (str(error).strip().splitlines() or [type(error).__name__])[0][:300]


def _restore_fitting(checkpoint: tf.train.Checkpoint, path: str, advice: str,
                     partial: bool = False) -> None:
  """Restores `path` into `checkpoint`; one that cannot be read or is of another model is a
  one-line UserError."""
  try:
    status = checkpoint.restore(path)
    (status.expect_partial() if partial else status).assert_existing_objects_matched()
  except (AssertionError, IndexError, ValueError, tf.errors.OpError) as e:
    reason = model_dir.why_not_whole(path)
    if reason:
      raise UserError(f"the checkpoint {path} cannot be read: {reason}: {advice}") from None
    raise UserError(f"the checkpoint {path} does not fit this model (another model, "
                    f"vocabulary or task? {advice}): {_first_line(e)}") from None


def _random_states(model: keras.Model) -> list:
  """The state variables of the model's random-number generators (dropout): the variables of
  the model that are neither its weights nor its metrics'."""
  others = {id(v) for v in model.weights} | {
      id(v) for metric in model.metrics for v in metric.variables}
  return [v for v in model.variables if id(v) not in others]


class Checkpointer:
  """Saves and restores model + optimizer + dropout RNG state under `directory`, with the
  run's own `state` (trackables by name: pre-training's `data_position`, fine-tuning's
  position and dev record). `read_only` trackables are saved too but never restored: their
  owners read them from `restored_path` (the data position's layout)."""

  def __init__(self, directory: str, model: keras.Model, optimizer, keep: int,
               record: dict | None = None, flag: str = "--model_dir",
               read_only: dict | None = None, chief_directory: str = "",
               other_workers_saved=None, **state):
    self.optimizer = optimizer
    self.model = model
    self.advice = f"use a new {flag}"  # `flag`: the setting naming the run's directory
    seed_states = _random_states(model)
    self.seed_state_count = len(seed_states)
    state = dict(model=model, optimizer=optimizer, seed_states=seed_states, **state)
    # Saved with the run's record (`bert_tf.run_record`), which is read, never restored.
    read_only = {**(read_only or {}),
                 **({run_record.NAME: run_record.Record(record)} if record else {})}
    self.read_only_names = set(read_only)
    self.checkpoint = tf.train.Checkpoint(**state, **read_only)
    self.restoring = tf.train.Checkpoint(**state)
    self.restored_path = ""  # the checkpoint restored last
    # Under a multi-worker strategy, the chief's checkpoints (this worker's own on the chief),
    # and whether one of them was saved by another number of workers than this run's (a
    # function of its path): then every worker's own checkpoints are older, or none.
    self.chief_directory = chief_directory or directory
    self.other_workers_saved = other_workers_saved or (lambda path: False)
    self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=keep)
    # Called before each save: what a run resumed from the checkpoint must find on disk up to
    # its step (the training curves), written before the checkpoint can be named the latest.
    self.before_save = []

  @property
  def step(self) -> int:
    return int(self.optimizer.iterations.numpy())

  def restore(self, strategy: tf.distribute.Strategy | None = None) -> int:
    """Restores the newest whole checkpoint, if any (`model_dir.newest_whole`: a line names
    each newer one passed over); returns its step (0 when starting afresh). Under a
    multi-worker `strategy` every worker restores the newest step that all of them have."""
    self.remove_partial_saves()  # of a run killed while saving
    path = model_dir.newest_whole(self.manager.directory, self.advice)
    if path:
      self._restore(path)
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
      self._restore_common_step(strategy)
    if path and not self.manager.checkpoints:
      self.save()  # indexed again, as the latest
    return self.step

  def _restore(self, path: str) -> None:
    _restore_fitting(self.restoring, path, self.advice, partial=self._holds_more(path))
    self.restored_path = path

  def _holds_more(self, path: str) -> bool:
    """Whether the checkpoint `path` holds more than this model restores: its record, or more
    dropout random-number states than this model has (dropout turned off since, as with
    --dropout=0). Those are left unread, without TensorFlow's warnings about them."""
    try:
      names = tf.train.load_checkpoint(path).get_variable_to_shape_map()
    except (ValueError, tf.errors.OpError):
      return False  # the restore says why it cannot be read
    return (any(name.split("/")[0] in self.read_only_names for name in names)
            or sum(name.split("/")[0] == "seed_states" for name in names)
            > self.seed_state_count)

  def _restore_common_step(self, strategy: tf.distribute.MultiWorkerMirroredStrategy):
    """Goes back to the newest step every worker restored: workers killed at once can be
    caught on either side of a save. When the chief's checkpoint was saved by another number
    of workers (the run went on without this cluster's others, or had fewer), every worker
    restores the chief's; a worker without checkpoints of its own, the chief's of the step."""
    own = self.step if self.restored_path else -1
    resized = (self.chief_directory == self.manager.directory and bool(self.restored_path)
               and self.other_workers_saved(self.restored_path))
    mine = tf.constant([[own, int(resized)]], tf.int64)
    # In a tf.function: the strategy run eagerly is slower and warns on every worker.
    every_workers = tf.function(lambda: strategy.gather(strategy.run(lambda: mine), axis=0),
                                autograph=False)
    gathered = every_workers().numpy()
    steps = [int(step) for step in gathered[:, 0]]
    if gathered[0, 1]:  # the chief's (worker 0's) was saved by another number of workers
      if self.chief_directory != self.manager.directory:
        self._restore_chiefs(steps[0], "the chief's was saved by another number of workers")
      return
    common = min((step for step in steps if step >= 0), default=-1)
    if own == common:
      return
    if own < 0:
      self._restore_chiefs(common, "this worker has none of its own (new to the run)")
      return
    path = os.path.join(self.manager.directory, f"ckpt-{common}")
    if path not in self.manager.checkpoints:
      raise UserError(f"this worker's checkpoints in {self.manager.directory} (the latest at "
                      f"step {self.step}) do not include step {common}, the latest of another "
                      f"worker (the workers' steps: {steps}): {self.advice}")
    log.warning("Workers restored steps %s: going back to step %d, which all of them have",
                steps, common)
    self._restore(path)

  def _restore_chiefs(self, step: int, why: str) -> None:
    """Restores the chief's checkpoint of `step` instead of this worker's own, `why`."""
    path = os.path.join(self.chief_directory, f"ckpt-{step}")
    if not tf.io.gfile.exists(path + ".index"):
      raise UserError(f"this worker has no checkpoint in {self.manager.directory}, and the "
                      f"chief's {path} cannot be read from here: copy the chief's checkpoints "
                      f"there to add this worker to the run")
    log.info("Restoring the chief's checkpoint %s: %s", path, why)
    self._restore(path)

  def continue_from(self, run: str) -> int:
    """Takes the weights and the optimizer (moments, step, so the learning-rate schedule) of
    another run's (the model_dir `run`'s) newest whole checkpoint: phase 2 going on from phase
    1. Returns that step."""
    latest = model_dir.newest_whole(run, "check --init_checkpoint")
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
    for write in self.before_save:
      write()
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

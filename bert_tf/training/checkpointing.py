"""Checkpoints every N steps, exact resume, SIGTERM and non-finite losses (SPEC §9).

Keras's `BackupAndRestore` restores at epoch granularity and never the data position, so
this is written here on `tf.train.CheckpointManager`:
- A checkpoint holds the weights, the optimizer (slots and step count, hence the learning-rate
  schedule) and the dropout random-number state. TensorFlow writes the files first and the
  `checkpoint` index that names the latest one last, so a kill mid-write leaves the previous
  checkpoint as the latest.
- The data position (`data_position.py`): where each input pipeline's stream is, so that a
  resumed run sees what an uninterrupted run would have seen, at the cost of one piece.
- SIGTERM (preemption) saves a checkpoint at the current step and stops within a step.
- A non-finite loss stops training before anything is saved: the last checkpoint is the last
  good one. With `on_nan="rollback"` the trainer restores it and goes on past the offending
  batches (the data position is kept across that restore).
"""

import math
import os
import signal

import keras
import numpy as np
import tensorflow as tf

from bert_tf.errors import UserError


CHECKPOINTS = "checkpoints"  # under model_dir


def is_training_directory(path: str) -> bool:
  """A bert_tf model_dir with at least one checkpoint."""
  return tf.io.gfile.exists(os.path.join(path, CHECKPOINTS, "checkpoint"))


def _restore_fitting(checkpoint: tf.train.Checkpoint, path: str, advice: str,
                     partial: bool = False) -> None:
  """Restores `path` into `checkpoint`; a checkpoint of another model is a UserError."""
  try:
    status = checkpoint.restore(path)
    (status.expect_partial() if partial else status).assert_existing_objects_matched()
  except (AssertionError, ValueError, tf.errors.OpError) as e:
    first_line = str(e).strip().splitlines()[0][:300]
    raise UserError(f"the checkpoint {path} does not fit this model (another --config or "
                    f"vocabulary? {advice}): {first_line}") from None


class TrainingStopped(Exception):
  """Training ended early: preempted (SIGTERM) or a non-finite loss."""


def _seed_states(model: keras.Model) -> list:
  """The state variables of the model's random-number generators (dropout)."""
  return [generator.state for layer in model._flatten_layers()
          for generator in getattr(layer, "_seed_generators", [])]


class Checkpointer:
  """Saves and restores model + optimizer + dropout RNG state under `directory`."""

  def __init__(self, directory: str, model: keras.Model, optimizer, keep: int,
               data_position: tf.Variable):
    self.optimizer = optimizer
    self.model = model
    self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer,
                                          seed_states=_seed_states(model),
                                          data_position=data_position)
    self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=keep)

  @property
  def step(self) -> int:
    return int(self.optimizer.iterations.numpy())

  def restore(self) -> int:
    """Restores the latest checkpoint, if any; returns its step (0 when starting afresh)."""
    latest = self.manager.latest_checkpoint
    if latest:
      _restore_fitting(self.checkpoint, latest, "use a new --model_dir")
    return self.step

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
    """Saves at the current step, unless a weight is not finite (then nothing is written)."""
    if not self.weights_are_finite():
      raise TrainingStopped(f"weights are not finite at step {self.step}: not saved")
    return self.manager.save(checkpoint_number=self.step)


class CheckpointEvery(keras.callbacks.Callback):
  """Saves every `every` steps and at `train_steps`, where it also stops training; stops and
  saves on SIGTERM; stops without saving on a non-finite loss."""

  def __init__(self, checkpointer: Checkpointer, every: int, train_steps: int):
    super().__init__()
    self.checkpointer = checkpointer
    self.every = every
    self.train_steps = train_steps
    self.stop_reason = None
    self.non_finite = False
    self._terminated = False
    self._previous_handler = None

  def on_train_end(self, logs=None):
    signal.signal(signal.SIGTERM, self._previous_handler or signal.SIG_DFL)

  def _on_sigterm(self, signum, frame):
    self._terminated = True

  def on_train_begin(self, logs=None):
    self.stop_reason = None
    self.non_finite = False
    self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)

  def on_train_batch_end(self, batch, logs=None):
    step = self.checkpointer.step
    loss = (logs or {}).get("loss")
    if loss is not None and not math.isfinite(float(loss)):
      self.non_finite = True
      self.stop_reason = (f"the loss is not finite at step {step}: training stopped, nothing "
                          f"saved; the latest checkpoint (step {self.checkpointer.latest_step})"
                          " is the last good one")
      self.model.stop_training = True
      return
    if self._terminated:
      path = self.checkpointer.save()
      self.stop_reason = (f"stopped by SIGTERM at step {step}, checkpoint {path}: run the same "
                          "command to resume")
      self.model.stop_training = True
    elif step % self.every == 0 or step >= self.train_steps:
      self.checkpointer.save()
    if step >= self.train_steps:
      self.model.stop_training = True


def intervals(start_step: int, train_steps: int, every: int) -> tuple[int, int]:
  """(epochs, steps_per_epoch) for `fit` to run from `start_step` to `train_steps`, one Keras
  epoch per checkpoint interval (CheckpointEvery stops it exactly at `train_steps`)."""
  steps_per_epoch = min(every, train_steps - start_step)
  return math.ceil((train_steps - start_step) / steps_per_epoch), steps_per_epoch

"""The training itself: `model.fit` over the training stream, one Keras epoch per checkpoint
interval, until `train_steps`; with --on_nan=rollback, a non-finite loss rolls back to the
last checkpoint and training goes on after the offending batches; input that fails mid-run
stops it with a checkpoint of the current step."""

import contextlib
import logging
import math

import keras
import tensorflow as tf

from bert_tf.runtime import checkpointing, cluster, failures, stopping
from bert_tf.training import datasets
from bert_tf.training.train_settings import MAX_ROLLBACKS, TrainConfig
from bert_tf.training.watching.monitor import RunMonitor

log = logging.getLogger("bert_tf")


@contextlib.contextmanager
def _input_failures_saved(checkpointer: checkpointing.Checkpointer):
  """A read of the corpus or the held-out data that fails (a file removed, a permission lost,
  a remote read error) stops training with a checkpoint of the current step: the model is
  fine, only its input failed, and the data position is the last example trained on. A lost
  worker (whose error can look like a failed read) is not one: nothing is saved."""
  try:
    yield
  except tf.errors.OpError as e:
    if not failures.is_input_failure(e) or cluster.lost_worker(e):
      raise
    step = checkpointer.step
    if checkpointer.latest_step != step:
      checkpointer.save()
    raise checkpointing.TrainingStopped(
        f"could not read the input at step {step}: {failures.describe(e)}; saved at step "
        f"{step}: once the file is back, re-run the command to go on") from None


def fit(model: keras.Model, checkpointer: checkpointing.Checkpointer, data_position,
        config: TrainConfig, inputs: datasets.RunInputs, strategy, monitor: RunMonitor) -> None:
  """Trains from the checkpointer's step to `train_steps`, saving every `checkpoint_every`
  steps; raises `checkpointing.TrainingStopped` when preempted or on a non-finite loss."""
  if checkpointer.step >= config.train_steps:
    log.info("Training already complete (step %d): measuring and exporting", checkpointer.step)
  elif not checkpointer.latest_step:
    checkpointer.save()  # step 0: something good to roll back to
  checkpoint_policy = stopping.CheckpointEvery(checkpointer, config.checkpoint_every,
                                               config.train_steps)
  rollbacks = 0
  while checkpointer.step < config.train_steps:
    epochs, steps_per_epoch = intervals(
        checkpointer.step, config.train_steps, config.checkpoint_every)
    with _input_failures_saved(checkpointer):
      model.fit(inputs.training_stream(strategy, data_position),
                epochs=epochs, steps_per_epoch=steps_per_epoch, verbose=0,
                callbacks=monitor.callbacks(checkpoint_policy))
    if checkpoint_policy.non_finite and config.on_nan == "rollback" and rollbacks < MAX_ROLLBACKS:
      rollbacks += 1
      bad_step = checkpointer.step
      with data_position.kept_across_restore():  # go on after the offending batches
        checkpointer.restore()
      log.warning("The loss is not finite at step %d: rolled back to step %d, skipping the "
                  "batches in between (rollback %d of at most %d)", bad_step,
                  checkpointer.step, rollbacks, MAX_ROLLBACKS)
      continue
    if checkpoint_policy.stop_reason:
      raise checkpointing.TrainingStopped(checkpoint_policy.stop_reason)
  if monitor.clock.seconds:  # something was trained
    log.info("%s", monitor.clock.split())


def intervals(start_step: int, train_steps: int, every: int) -> tuple[int, int]:
  """(epochs, steps_per_epoch) for `fit` to run from `start_step` to `train_steps`, one Keras
  epoch per checkpoint interval (CheckpointEvery stops it exactly at `train_steps`)."""
  steps_per_epoch = min(every, train_steps - start_step)
  return math.ceil((train_steps - start_step) / steps_per_epoch), steps_per_epoch

"""The training itself: `model.fit` over the training stream, one Keras epoch per checkpoint
interval, until `train_steps`; with --on_nan=rollback, a non-finite loss rolls back to the
last checkpoint and training goes on after the offending batches; input that fails mid-run
stops it with a checkpoint of the current step."""

import contextlib
import logging
import os

import keras

from bert_tf.data.tokenization import Vocabulary
from bert_tf.training import callbacks as callbacks_lib
from bert_tf.training import checkpointing, datasets, evaluation, failures, progress
from bert_tf.training.config import MAX_ROLLBACKS, TrainConfig

log = logging.getLogger("bert_tf")


class Watchers:
  """The callbacks that measure and show the run: throughput, the learning rate, the curves
  (history.jsonl), TensorBoard, held-out evaluation and the progress line."""

  def __init__(self, config: TrainConfig, vocabulary: Vocabulary):
    self.throughput = callbacks_lib.Throughput(config.global_batch_size, config.seq_length)
    self.curves = callbacks_lib.TrainingCurves(
        os.path.join(config.model_dir, "history.jsonl"),
        every=max(1, min(20, config.train_steps // 100)))
    self.held_out = evaluation.HeldOutEvaluation(
        lambda: datasets.held_out_batches(config, vocabulary),
        steps=config.eval_steps, every=config.eval_every or config.checkpoint_every,
        train_steps=config.train_steps, log_dir=os.path.join(config.model_dir, "logs"),
        curves=self.curves) if datasets.has_held_out(config) else None
    self.callbacks = [
        self.throughput,
        callbacks_lib.LearningRate(),
        self.curves,
        keras.callbacks.TensorBoard(os.path.join(config.model_dir, "logs")),
        *([self.held_out] if self.held_out else []),
        *([progress.Progress(config.train_steps, config.global_batch_size)]
          if config.verbose else []),
    ]


@contextlib.contextmanager
def _input_failures_saved(checkpointer: checkpointing.Checkpointer):
  """A read of the corpus or the held-out data that fails (a file removed, a permission lost,
  a remote read error) stops training with a checkpoint of the current step: the model is
  fine, only its input failed, and the data position is the last example trained on."""
  try:
    yield
  except failures.INPUT_ERRORS as e:
    step = checkpointer.step
    if checkpointer.latest_step != step:
      checkpointer.save()
    raise checkpointing.TrainingStopped(
        f"could not read the input at step {step}: {failures.describe(e)}; saved at step "
        f"{step}: once the file is back, re-run the command to go on") from None


def fit(model: keras.Model, checkpointer: checkpointing.Checkpointer, data_position,
        config: TrainConfig, vocabulary: Vocabulary, strategy, watchers: Watchers) -> None:
  """Trains from the checkpointer's step to `train_steps`, saving every `checkpoint_every`
  steps; raises `checkpointing.TrainingStopped` when preempted or on a non-finite loss."""
  if checkpointer.step >= config.train_steps:
    log.info("Training already complete (step %d): measuring and exporting", checkpointer.step)
  elif not checkpointer.latest_step:
    checkpointer.save()  # step 0: something good to roll back to
  guard = checkpointing.CheckpointEvery(checkpointer, config.checkpoint_every,
                                        config.train_steps)
  rollbacks = 0
  while checkpointer.step < config.train_steps:
    epochs, steps_per_epoch = checkpointing.intervals(
        checkpointer.step, config.train_steps, config.checkpoint_every)
    with _input_failures_saved(checkpointer):
      model.fit(datasets.training_stream(config, vocabulary, strategy, data_position),
                epochs=epochs, steps_per_epoch=steps_per_epoch, verbose=0,
                callbacks=[guard, *watchers.callbacks])
    if guard.non_finite and config.on_nan == "rollback" and rollbacks < MAX_ROLLBACKS:
      rollbacks += 1
      bad_step = checkpointer.step
      with data_position.kept():  # go on after the offending batches
        checkpointer.restore()
      log.warning("The loss is not finite at step %d: rolled back to step %d, skipping the "
                  "batches in between (rollback %d of at most %d)", bad_step,
                  checkpointer.step, rollbacks, MAX_ROLLBACKS)
      continue
    if guard.stop_reason:
      raise checkpointing.TrainingStopped(guard.stop_reason)

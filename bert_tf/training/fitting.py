"""The training itself: `model.fit` over the training stream, one Keras epoch per checkpoint
interval, until `train_steps`; with --on_nan=rollback, a non-finite loss rolls back to the
last checkpoint and training goes on after the offending batches; input that fails mid-run
stops it with a checkpoint of the current step."""

import contextlib
import logging
import math
import os

import keras
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.model.flops import model_flops_per_sequence
from bert_tf.runtime import checkpointing, failures, optimization
from bert_tf.training import callbacks as callbacks_lib
from bert_tf.training import datasets, evaluation, probe, progress, run_time, stopping
from bert_tf.training.config import MAX_ROLLBACKS, TrainConfig

log = logging.getLogger("bert_tf")


class Watchers:
  """The callbacks that measure and show the run: the training scalars of each window of
  `log_every` steps (to TensorBoard, history.jsonl and the progress line), held-out
  evaluation (and the probe), and the clock that splits the wall time between training and the
  rest."""

  def __init__(self, config: TrainConfig, vocabulary: Vocabulary, bert_config):
    logs = os.path.join(config.model_dir, "logs")
    self.clock = run_time.Clock()
    self.curves = callbacks_lib.TrainingCurves(os.path.join(config.model_dir, "history.jsonl"))
    tensorboard = callbacks_lib.TensorBoardScalars(os.path.join(logs, "train"))
    shown = [progress.Progress(config.train_steps,
                               every_steps=progress.lines_every(config.train_steps,
                                                                config.log_every))
             ] if config.verbose else []
    self.window = callbacks_lib.TrainingWindow(
        config.log_every, global_batch_size=config.global_batch_size,
        seq_length=config.seq_length, learning_rate=optimization.schedule_for(config),
        clock=self.clock, listeners=[tensorboard.add, self.curves.add,
                                     *[line.add for line in shown]],
        flops_per_sequence=model_flops_per_sequence(bert_config, config.seq_length,
                                                    config.max_predictions_per_seq),
        peak_flops=config.peak_tflops * 1e12)
    self.held_out = evaluation.HeldOutEvaluation(
        (lambda: datasets.held_out_batches(config, vocabulary))
        if datasets.has_held_out(config) else None,
        steps=config.eval_steps, every=config.eval_every or config.checkpoint_every,
        train_steps=config.train_steps, log_dir=os.path.join(logs, "eval"),
        curves=self.curves, probe=self._timed_probe(config, vocabulary),
    ) if datasets.has_held_out(config) or probe.has_probe(config) else None
    self._after_guard = [
        *([callbacks_lib.Timed(self.held_out, self.clock, run_time.EVALUATIONS)]
          if self.held_out else []),
        self.curves, tensorboard, *shown]  # the curves written after the evaluation

  def _timed_probe(self, config: TrainConfig, vocabulary: Vocabulary):
    run_probe = probe.for_run(config, vocabulary)
    return self.clock.timing(run_time.PROBES, run_probe) if run_probe else None

  def callbacks(self, guard: keras.callbacks.Callback) -> list:
    """The callbacks for `fit`, around the checkpointing `guard` (timed as checkpoints): the
    window first, whose timing of the steps must come before any other callback's work."""
    return [self.window, callbacks_lib.Timed(guard, self.clock, run_time.CHECKPOINTS),
            *self._after_guard]


@contextlib.contextmanager
def _input_failures_saved(checkpointer: checkpointing.Checkpointer):
  """A read of the corpus or the held-out data that fails (a file removed, a permission lost,
  a remote read error) stops training with a checkpoint of the current step: the model is
  fine, only its input failed, and the data position is the last example trained on."""
  try:
    yield
  except tf.errors.OpError as e:
    if not failures.is_input_failure(e):
      raise
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
  guard = stopping.CheckpointEvery(checkpointer, config.checkpoint_every,
                                        config.train_steps)
  rollbacks = 0
  while checkpointer.step < config.train_steps:
    epochs, steps_per_epoch = intervals(
        checkpointer.step, config.train_steps, config.checkpoint_every)
    with _input_failures_saved(checkpointer):
      model.fit(datasets.training_stream(config, vocabulary, strategy, data_position),
                epochs=epochs, steps_per_epoch=steps_per_epoch, verbose=0,
                callbacks=watchers.callbacks(guard))
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
  if watchers.clock.seconds:  # something was trained
    log.info("%s", watchers.clock.split())


def intervals(start_step: int, train_steps: int, every: int) -> tuple[int, int]:
  """(epochs, steps_per_epoch) for `fit` to run from `start_step` to `train_steps`, one Keras
  epoch per checkpoint interval (CheckpointEvery stops it exactly at `train_steps`)."""
  steps_per_epoch = min(every, train_steps - start_step)
  return math.ceil((train_steps - start_step) / steps_per_epoch), steps_per_epoch

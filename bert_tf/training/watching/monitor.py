"""`RunMonitor`: what watches a pre-training run, gathered for `fit`: the training scalars of
each window of steps (`callbacks.TrainingWindow`) going to TensorBoard, history.jsonl and the
progress line; the held-out evaluation and the probe; and the clock that splits the run's wall
time (`run_time`)."""

import os

import keras

from bert_tf.data.tokenization import Vocabulary
from bert_tf.model.flops import model_flops_per_sequence
from bert_tf.runtime import optimization
from bert_tf.training import datasets
from bert_tf.training.train_settings import TrainConfig
from bert_tf.training.watching import callbacks as callbacks_lib
from bert_tf.training.watching import evaluation, probe, progress, run_time


class RunMonitor:
  """The callbacks that measure and show a run: the training scalars of each window of
  `log_every` steps (to TensorBoard, history.jsonl and the progress line), held-out
  evaluation (and the probe), and the clock that splits the wall time between training and the
  rest."""

  def __init__(self, config: TrainConfig, vocabulary: Vocabulary, bert_config,
               inputs: datasets.RunInputs):
    logs = os.path.join(config.model_dir, "logs")
    self.clock = run_time.Clock()
    self.curves = callbacks_lib.TrainingCurves(os.path.join(config.model_dir, "history.jsonl"))
    self.tensorboard = callbacks_lib.TensorBoardScalars(os.path.join(logs, "train"))
    shown = [progress.Progress(config.train_steps,
                               every_steps=progress.lines_every(config.train_steps,
                                                                config.log_every),
                               nsp=config.nsp)
             ] if config.verbose else []
    self.window = callbacks_lib.TrainingWindow(
        config.log_every, global_batch_size=config.global_batch_size,
        seq_length=config.seq_length, learning_rate=optimization.schedule_for(config),
        clock=self.clock, listeners=[self.tensorboard.add, self.curves.add,
                                     *[line.add for line in shown]],
        flops_per_sequence=model_flops_per_sequence(bert_config, config.seq_length,
                                                    config.max_predictions_per_seq),
        peak_flops=config.peak_tflops * 1e12)
    self.held_out = evaluation.HeldOutEvaluation(
        inputs.held_out_batches if inputs.held_out else None,
        steps=config.eval_steps, every=config.eval_every or config.checkpoint_every,
        train_steps=config.train_steps, log_dir=os.path.join(logs, "eval"),
        curves=self.curves, probe=self._timed_probe(config, vocabulary),
    ) if inputs.held_out or probe.has_probe(config) else None
    self._after_checkpoints = [
        *([callbacks_lib.Timed(self.held_out, self.clock, run_time.EVALUATIONS)]
          if self.held_out else []),
        self.curves, self.tensorboard, *shown]  # the curves written after the evaluation

  def write_curves(self) -> None:
    """Writes the training records so far (history.jsonl, TensorBoard's `train` run): before
    each checkpoint, so that a run resumed from it, after a kill or a stop at any step, finds
    every record up to its step."""
    self.curves.write()
    self.tensorboard.writer.flush()

  def _timed_probe(self, config: TrainConfig, vocabulary: Vocabulary):
    run_probe = probe.for_run(config, vocabulary)
    return self.clock.timing(run_time.PROBES, run_probe) if run_probe else None

  def callbacks(self, checkpoint_policy: keras.callbacks.Callback) -> list:
    """The callbacks for `fit`, around `checkpoint_policy` (when to save and stop; timed as
    checkpoints): the window first, whose timing of the steps must come before any other
    callback's work."""
    timed_policy = callbacks_lib.Timed(checkpoint_policy, self.clock, run_time.CHECKPOINTS)
    return [self.window, timed_policy, *self._after_checkpoints]

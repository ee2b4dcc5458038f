"""`finetune`: one fine-tuning run from a `FinetuneConfig`, usable from a notebook or the
command line, the same story for every kind of task (`tasks.py`): check the files, build the
task model under the strategy, `model.fit` for the epochs with the dev figures after each,
keep the best epoch's weights, and write the output_dir: metrics.json, task.json, the weights,
the encoder's bert_config.json and vocab.txt, what the kind adds (answer's
predictions.json) and the SavedModel serving the kind's signature on raw text."""

import logging
import math
import os

import keras
import tensorflow as tf

from bert_tf import files
from bert_tf.finetune.export import export_task
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.model import Pretrained, compile_task_model, load_pretrained
from bert_tf.finetune.tasks import TaskKind, task_kind
from bert_tf.runtime import preamble

log = logging.getLogger("bert_tf")
WEIGHTS_FILE = "model.weights.h5"


class DevEvaluation(keras.callbacks.Callback):
  """After each epoch: the kind's dev figures on the console and in TensorBoard's `dev` run;
  keeps the weights (and the dev outputs) of the best epoch by the kind's ranking (a GLUE
  task's score first) and restores those weights at the end of training."""

  def __init__(self, kind: TaskKind, log_dir: str, epochs: int):
    super().__init__()
    self.kind = kind
    self.epochs = epochs
    self.writer = tf.summary.create_file_writer(os.path.join(log_dir, "dev"))
    self.best = None  # the best epoch's figures, with "best_epoch"
    self.best_outputs = None
    self._best_weights = None

  def on_epoch_end(self, epoch, logs=None):
    figures, outputs = self.kind.evaluate(self.model)
    with self.writer.as_default():
      for name, value in figures.items():
        if isinstance(value, float):
          tf.summary.scalar("epoch_" + name.removeprefix("dev_"), value, step=epoch)
    self.writer.flush()
    log.info("epoch %d/%d: training loss %.4f, %s", epoch + 1, self.epochs,
             (logs or {}).get("loss", math.nan), self.kind.summary(figures))
    if self.best is None or self.kind.rank(figures) > self.kind.rank(self.best):
      self.best = {**figures, "best_epoch": epoch + 1}
      self.best_outputs = outputs
      self._best_weights = self.model.get_weights()

  def on_train_end(self, logs=None):
    if self._best_weights is not None:
      self.model.set_weights(self._best_weights)
      self._best_weights = None


def finetune(config: FinetuneConfig) -> dict:
  """Fine-tunes as configured; returns the metrics also written to `output_dir/metrics.json`
  (the best epoch's). Raises `UserError` for a mistake in the settings or the files, before
  anything trains."""
  config.check()
  kind = task_kind(config)
  strategy = preamble.create(config)
  with preamble.building_models(strategy, config, global_batch_size=config.batch_size):
    pretrained = load_pretrained(config.model_dir, from_scratch=config.from_scratch)
    pretrained.config.check_seq_length(config.seq_length)
    kind.encode(pretrained)
    steps_per_epoch = math.ceil(kind.train_rows / config.batch_size)
    train_steps = steps_per_epoch * config.epochs
    model = compile_task_model(
        kind.head(pretrained.encoder, len(kind.labels), pretrained.config.initializer_range),
        kind.loss(), learning_rate=config.learning_rate, train_steps=train_steps,
        warmup_steps=int(config.warmup_proportion * train_steps), jit_compile=config.jit_compile)
  tf.io.gfile.makedirs(config.output_dir)
  log.info("Fine-tuning (%s) on %d examples%s for %d epochs of %d steps; %d dev examples",
           kind.name, len(kind.train),
           f" of {len(kind.labels)} labels ({', '.join(kind.labels)})" if kind.labels else "",
           config.epochs, steps_per_epoch, len(kind.dev))
  log_dir = os.path.join(config.output_dir, "logs")
  evaluation = DevEvaluation(kind, log_dir, config.epochs)
  model.fit(kind.train_batches(config.batch_size, config.seed), epochs=config.epochs, verbose=0,
            callbacks=[evaluation, keras.callbacks.TensorBoard(log_dir)])
  results = {**evaluation.best, "ranked_by": list(kind.ranking), "epochs": config.epochs,
             "train_examples": len(kind.train), "dev_examples": len(kind.dev),
             "task": kind.name, **kind.noted(), "from_scratch": config.from_scratch}
  write_output_dir(config, kind, pretrained, model, results, evaluation.best_outputs)
  return results


def write_output_dir(config: FinetuneConfig, kind: TaskKind, pretrained: Pretrained,
                     model: keras.Model, results: dict, best_outputs) -> None:
  """The finished run's files in `config.output_dir` (see the module's docstring)."""
  directory = config.output_dir
  files.write_json(os.path.join(directory, "metrics.json"), results)
  task = {"task": kind.name, "labels": list(kind.labels), "pair": kind.pair,
          "seq_length": config.seq_length, "lower_case": pretrained.lower_case,
          **kind.task_json()}
  files.write_json(os.path.join(directory, "task.json"), task)
  model.save_weights(os.path.join(directory, WEIGHTS_FILE))
  pretrained.config.to_json_file(os.path.join(directory, "bert_config.json"))
  tf.io.gfile.copy(pretrained.vocabulary.path, os.path.join(directory, "vocab.txt"),
                   overwrite=True)
  kind.write_outputs(model, directory, best_outputs)
  export_task(model, task, pretrained.vocabulary, os.path.join(directory, "export"))

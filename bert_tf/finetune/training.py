"""`finetune`: one fine-tuning run from a `FinetuneConfig`, usable from a notebook or the
command line, the same story for every kind of task (`kinds/`): check the encoder and the
task's files, writing nothing, take the output_dir (`run_lock`), build the task model under
the strategy, go on from the output_dir's checkpoint if it has one (`checkpoints.py`, saying
what changed since: `rerun.py`), train the epochs left with the dev figures after each
(`fitting.py`, `dev_evaluation.py`), keep the best epoch's weights, and write the output_dir:
metrics.json, task.json, the weights, the encoder's bert_config.json and vocab.txt, what the
kind adds (answer's predictions.json) and the SavedModel serving the kind's signature on raw
text (unless `--noserving_export`), checked against the Keras model unless `--skip_verify`
(`finetune/verification.py`)."""

import logging
import os

import keras
import tensorflow as tf

from bert_tf import files
from bert_tf.console import counted
from bert_tf.finetune import checkpoints, fitting, rerun
from bert_tf.finetune.dev_evaluation import DevEvaluation
from bert_tf.finetune.epochs import EpochPlan
from bert_tf.finetune.export import export_task
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.kinds.base import TaskKind
from bert_tf.finetune.model import (
  Pretrained,
  checked_source,
  compile_task_model,
  load_pretrained,
)
from bert_tf.finetune.output_dir import (
  CONFIG_FILE,
  EXPORT,
  LOGS,
  METRICS_FILE,
  VOCAB_FILE,
  WEIGHTS_FILE,
)
from bert_tf.finetune.task_record import TaskRecord
from bert_tf.finetune.tasks import task_kind
from bert_tf.finetune.verification import verify_task_export
from bert_tf.runtime import preamble, precision, run_lock

log = logging.getLogger("bert_tf")


def finetune(config: FinetuneConfig) -> dict:
  """Fine-tunes as configured; returns the metrics also written to `output_dir/metrics.json`
  (the best epoch's). Raises `UserError` for a mistake in the settings or the files, before
  anything trains, and `checkpointing.TrainingStopped` when stopped by a signal (saved: the
  same call again goes on) or a non-finite loss."""
  config.check()
  # Every input checked before anything is written: the encoder, the task's files, the
  # sequence length against the encoder's positions.
  source = checked_source(config.model_dir, from_scratch=config.from_scratch)
  kind = task_kind(config)
  source.config.check_seq_length(config.seq_length)
  strategy = preamble.create(config)
  config = precision.resolved(config, config.strategy)  # auto's choice, said and recorded
  with run_lock.RunLock.acquire(config.output_dir, "--output_dir"):  # one run per output_dir
    rerun.compare(config, kind.labels)  # with the output_dir's checkpoint
    with preamble.building_models(strategy, config, global_batch_size=config.batch_size):
      pretrained = load_pretrained(config.model_dir, from_scratch=config.from_scratch)
      kind.encode(pretrained)
      plan = EpochPlan(kind.train_rows, config.batch_size, config.epochs, config.seed)
      model = compile_task_model(
          kind.head(pretrained.encoder, len(kind.labels), pretrained.config.initializer_range),
          kind.loss(), learning_rate=config.learning_rate, train_steps=plan.train_steps,
          warmup_steps=int(config.warmup_proportion * plan.train_steps),
          jit_compile=config.jit_compile)
    log.info("Fine-tuning (%s) on %d examples%s for %s of %s; %d dev examples",
             kind.name, len(kind.train),
             f" of {len(kind.labels)} labels ({', '.join(kind.labels)})" if kind.labels else "",
             counted(config.epochs, "epoch"), counted(plan.steps_per_epoch, "step"),
             len(kind.dev))
    log_dir = os.path.join(config.output_dir, LOGS)
    evaluation = DevEvaluation(kind, model, log_dir, config.epochs)
    position = fitting.TrainedBatches()
    checkpointer = checkpoints.checkpointer(config, model, rerun.record_of(config, kind.labels),
                                            trained_batches=position.variable,
                                            best_epoch=evaluation.best)
    checkpoints.resume(checkpointer, strategy, plan, position)
    fitting.fit(model, kind, plan, checkpoint_every=config.checkpoint_every,
                checkpointer=checkpointer, position=position, evaluation=evaluation,
                log_dir=log_dir)
    best, best_outputs = evaluation.restore_best()
    results = {**best, "ranked_by": list(kind.ranking), "epochs": config.epochs,
               "train_examples": len(kind.train), "dev_examples": len(kind.dev),
               "task": kind.name, **kind.noted(), "from_scratch": config.from_scratch}
    write_output_dir(config, kind, pretrained, model, results, best_outputs)
    checkpoints.remove(config)
  return results


def write_output_dir(config: FinetuneConfig, kind: TaskKind, pretrained: Pretrained,
                     model: keras.Model, results: dict, best_outputs) -> None:
  """The finished run's files in `config.output_dir` (see the module's docstring)."""
  directory = config.output_dir
  files.write_json(os.path.join(directory, METRICS_FILE), results)
  task = TaskRecord(task=kind.name, labels=list(kind.labels), pair=kind.pair,
                    seq_length=config.seq_length, lower_case=pretrained.lower_case,
                    **kind.task_settings())
  task.write(directory)
  model.save_weights(os.path.join(directory, WEIGHTS_FILE))
  pretrained.config.to_json_file(os.path.join(directory, CONFIG_FILE))
  tf.io.gfile.copy(pretrained.vocabulary.path, os.path.join(directory, VOCAB_FILE),
                   overwrite=True)
  kind.write_outputs(model, directory, best_outputs)
  if config.serving_export:
    export = export_task(model, task, pretrained.vocabulary, os.path.join(directory, EXPORT))
    if not config.skip_verify:
      log.info(verify_task_export(export, model, task, pretrained.vocabulary))

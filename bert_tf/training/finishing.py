"""The end of a run: the final weights, the final figures (metrics.json, curves.png,
summary.txt) and the serving SavedModel."""

import logging
import os

import keras

from bert_tf import files
from bert_tf.data.tokenization import Vocabulary
from bert_tf.export import trained
from bert_tf.export.savedmodel import export_savedmodel
from bert_tf.export.verification import verify_pretraining_export
from bert_tf.model_dir import METRICS_FILE
from bert_tf.training import datasets
from bert_tf.training.train_settings import TrainConfig
from bert_tf.training.watching import evaluation, report
from bert_tf.training.watching.monitor import RunMonitor

log = logging.getLogger("bert_tf")


def finish(model: keras.Model, config: TrainConfig, vocabulary: Vocabulary,
           monitor: RunMonitor) -> dict:
  """Writes what a finished run leaves; returns the metrics also in metrics.json.

  The final figures are measured on fresh batches (new pairs and masks, dropout off), so that
  they are the same whether this run trained or found its training already complete."""
  trained.save_weights(model, config.model_dir)  # the model's weights, not the optimizer's
  measured = datasets.measured_batches(config, vocabulary)
  metrics = evaluation.evaluate(model, measured, config.eval_steps, prefix="")
  metrics.update(
      steps=int(model.optimizer.iterations.numpy()),
      **monitor.window.run_rates(),
      most_frequent_token_accuracy=evaluation.most_frequent_token_accuracy(
          measured, config.eval_steps))
  if monitor.held_out:
    metrics.update(monitor.held_out.evaluate(model))
  files.write_json(os.path.join(config.model_dir, METRICS_FILE), metrics)
  report.plot_curves(os.path.join(config.model_dir, "history.jsonl"),
                     os.path.join(config.model_dir, "curves.png"),
                     metrics["most_frequent_token_accuracy"])
  files.write_text(os.path.join(config.model_dir, "summary.txt"),
                   report.summary(metrics) + "\n")
  log.info("Writing the serving SavedModel to %s", os.path.join(config.model_dir, "export"))
  export = export_savedmodel(model, vocabulary, os.path.join(config.model_dir, "export"),
                             seq_length=config.seq_length, lower_case=config.do_lower_case)
  if not config.skip_verify:
    log.info(verify_pretraining_export("savedmodel", export, model, vocabulary,
                                       lower_case=config.do_lower_case,
                                       seq_length=config.seq_length))
  return metrics

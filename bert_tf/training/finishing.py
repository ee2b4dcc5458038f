"""The end of a run: the final weights, the final figures (metrics.json, curves.png,
summary.txt) and the serving SavedModel (unless --noserving_export)."""

import json
import logging
import os

import keras
import tensorflow as tf

from bert_tf import files
from bert_tf.data.tokenization import Vocabulary
from bert_tf.export.formats.savedmodel import verify_pretrained
from bert_tf.model_dir import METRICS_FILE
from bert_tf.runtime import cluster, strategy
from bert_tf.serving import trained
from bert_tf.serving.savedmodel import export_savedmodel
from bert_tf.training import datasets
from bert_tf.training.train_settings import TrainConfig
from bert_tf.training.watching import evaluation, report
from bert_tf.training.watching.monitor import RunMonitor

log = logging.getLogger("bert_tf")

# The figures of metrics.json that time the training, not the model: a re-run that trains no
# step (its --train_steps already reached) keeps those of the run that trained.
_RATES = ("examples_per_second", "tokens_per_second", "padding_share",
          "model_flops_utilisation")


def finish(model: keras.Model, config: TrainConfig, vocabulary: Vocabulary,
           monitor: RunMonitor, inputs: datasets.RunInputs) -> dict:
  """Writes what a finished run leaves; returns the metrics also in metrics.json.

  The final figures are measured on fresh batches (new pairs and masks, dropout off), so that
  they are the same whether this run trained or found its training already complete."""
  trained.save_weights(model, config.model_dir)  # the model's weights, not the optimizer's
  # Read twice, made once: the baseline reads the batches to their end, which completes the
  # cache (a reading stopped short, as the model's `evaluate` stops, would leave it empty).
  measured = inputs.measured_batches().take(config.eval_steps).cache()
  baseline = evaluation.most_frequent_token_accuracy(measured, config.eval_steps)
  metrics = evaluation.evaluate(model, measured, config.eval_steps, prefix="")
  metrics.update(steps=int(model.optimizer.iterations.numpy()),
                 **_run_rates(monitor, config.model_dir), most_frequent_token_accuracy=baseline)
  if monitor.held_out:
    metrics.update(monitor.held_out.evaluate(model))
  files.write_json(os.path.join(config.model_dir, METRICS_FILE), metrics)
  report.plot_curves(os.path.join(config.model_dir, "history.jsonl"),
                     os.path.join(config.model_dir, "curves.png"),
                     metrics["most_frequent_token_accuracy"])
  files.write_text(os.path.join(config.model_dir, "summary.txt"),
                   report.summary(metrics, nsp=config.nsp) + "\n")
  if config.serving_export:
    _write_serving_export(model, config, vocabulary)
  return metrics


def _write_serving_export(model: keras.Model, config: TrainConfig,
                          vocabulary: Vocabulary) -> None:
  log.info("Writing the serving SavedModel to %s", os.path.join(config.model_dir, "export"))
  export = export_savedmodel(model, vocabulary, os.path.join(config.model_dir, "export"),
                             seq_length=config.seq_length, lower_case=config.do_lower_case)
  # Every worker writes its export, as collective training requires of saves; only the chief's
  # is the user's, and only it is verified (in a fresh process): not copies nobody loads.
  chief = strategy.is_chief(cluster.joined())
  if chief and not config.skip_verify:
    log.info(verify_pretrained(export, model, vocabulary, lower_case=config.do_lower_case,
                               seq_length=config.seq_length))


def _run_rates(monitor: RunMonitor, model_dir: str) -> dict:
  """This run's rates; those metrics.json has when this run trained no step."""
  path = os.path.join(model_dir, METRICS_FILE)
  if monitor.window.window_steps or not tf.io.gfile.exists(path):
    return monitor.window.run_rates()
  with tf.io.gfile.GFile(path) as f:
    recorded = json.load(f)
  return {name: recorded[name] for name in _RATES if name in recorded}

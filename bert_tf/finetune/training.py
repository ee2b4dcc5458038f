"""`finetune`: one fine-tuning run from a `FinetuneConfig`, usable from a notebook or the
command line: check the files, build the classifier under the strategy, `model.fit` for the
epochs with the dev figures after each, keep the best epoch's weights, write metrics.json and
export the `classify` SavedModel."""

import logging
import math
import os

import keras
import numpy as np
import tensorflow as tf

from bert_tf import files
from bert_tf.data import builtin_task
from bert_tf.finetune import data, metrics
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.export import export_classifier
from bert_tf.finetune.model import classifier_model, compile_classifier, load_pretrained
from bert_tf.runtime import preamble

log = logging.getLogger("bert_tf")


def predicted_classes(model: keras.Model, dataset: tf.data.Dataset) -> tuple:
  """(label ids, predicted ids) of `dataset`'s examples, dropout off."""
  labels, predictions = [], []
  for features, label in dataset:
    labels.append(label.numpy())
    predictions.append(np.argmax(model(features, training=False).numpy(), axis=-1))
  return np.concatenate(labels), np.concatenate(predictions)


class DevEvaluation(keras.callbacks.Callback):
  """After each epoch: dev accuracy and macro F1 on the console and in TensorBoard's `dev`
  run; keeps the weights of the best epoch (by accuracy, then F1) and restores them at the
  end of training."""

  def __init__(self, dev: tf.data.Dataset, log_dir: str, epochs: int):
    super().__init__()
    self.dev = dev
    self.epochs = epochs
    self.writer = tf.summary.create_file_writer(os.path.join(log_dir, "dev"))
    self.best = None  # {"dev_accuracy", "dev_macro_f1", "best_epoch"}
    self._best_weights = None

  def on_epoch_end(self, epoch, logs=None):
    labels, predictions = predicted_classes(self.model, self.dev)
    figures = {"dev_accuracy": metrics.accuracy(labels, predictions),
               "dev_macro_f1": metrics.macro_f1(labels, predictions)}
    with self.writer.as_default():
      for name, value in figures.items():
        tf.summary.scalar("epoch_" + name.removeprefix("dev_"), value, step=epoch)
    self.writer.flush()
    log.info("epoch %d/%d: training loss %.4f, dev accuracy %.4f, dev macro F1 %.4f",
             epoch + 1, self.epochs, (logs or {}).get("loss", math.nan),
             figures["dev_accuracy"], figures["dev_macro_f1"])
    key = (figures["dev_accuracy"], figures["dev_macro_f1"])
    if self.best is None or key > (self.best["dev_accuracy"], self.best["dev_macro_f1"]):
      self.best = {**figures, "best_epoch": epoch + 1}
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
  train, dev, classes = data.read_task(
      builtin_task.resolve(config.train_file, config.data_dir, "train"),
      builtin_task.resolve(config.dev_file, config.data_dir, "dev"),
      config.text_columns, config.label_column, header=not config.no_header)
  strategy = preamble.create(config)
  steps_per_epoch = math.ceil(len(train) / config.batch_size)
  train_steps = steps_per_epoch * config.epochs
  with preamble.building_models(strategy, config, global_batch_size=config.batch_size):
    pretrained = load_pretrained(config.model_dir, from_scratch=config.from_scratch)
    pretrained.config.check_seq_length(config.seq_length)
    model = compile_classifier(
        classifier_model(pretrained.encoder, len(classes),
                         initializer_range=pretrained.config.initializer_range),
        learning_rate=config.learning_rate, train_steps=train_steps,
        warmup_steps=int(config.warmup_proportion * train_steps),
        jit_compile=config.jit_compile)
  text_encoder = data.TextEncoder(pretrained.vocabulary, lower_case=pretrained.lower_case,
                                  seq_length=config.seq_length)
  tf.io.gfile.makedirs(config.output_dir)
  log.info("Fine-tuning on %d examples of %d classes (%s) for %d epochs of %d steps; %d dev "
           "examples", len(train), len(classes), ", ".join(classes), config.epochs,
           steps_per_epoch, len(dev))
  log_dir = os.path.join(config.output_dir, "logs")
  evaluation = DevEvaluation(data.dataset(dev, classes, text_encoder, batch_size=64),
                             log_dir, config.epochs)
  model.fit(data.dataset(train, classes, text_encoder, batch_size=config.batch_size,
                         shuffle_seed=config.seed),
            epochs=config.epochs, verbose=0,
            callbacks=[evaluation, keras.callbacks.TensorBoard(log_dir)])
  results = {**evaluation.best, "epochs": config.epochs, "train_examples": len(train),
             "dev_examples": len(dev), "classes": classes,
             "from_scratch": config.from_scratch}
  files.write_json(os.path.join(config.output_dir, "metrics.json"), results)
  files.write_json(os.path.join(config.output_dir, "classes.json"), {"classes": classes})
  export_classifier(model, text_encoder, classes, os.path.join(config.output_dir, "export"),
                    pair=len(train.texts) == 2)
  return results

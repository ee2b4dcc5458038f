"""The probe (--probe_train_file, --probe_dev_file): at each held-out evaluation, a copy of the
encoder as it is now is fine-tuned for --probe_steps on a labelled task and scored on its dev
file, so that a run shows whether its encoder is becoming useful, not only its MLM loss.

The probe leaves the run as it was: it reads the encoder's weights and writes none, reads
nothing of the training stream, and runs under its own seed with Python's and numpy's random
states put back afterwards (Keras draws the seeds of new layers from Python's). Its models are
dropped and collected after each use. The same probe on the random weights of the same shape
is measured once, for comparison (`probe_random_accuracy`). docs/finetuning.md.
"""

import contextlib
import gc
import logging
import random
import time

import keras
import numpy as np
import tensorflow as tf

from bert_tf.data import builtin_task
from bert_tf.data.tokenization import Vocabulary
from bert_tf.finetune import data, metrics
from bert_tf.finetune.model import classifier_model, compile_classifier
from bert_tf.finetune.tasks import predicted_classes

log = logging.getLogger("bert_tf")

BATCH_SIZE = 32
MAX_SEQ_LENGTH = 64  # the probe's texts are cut here (or at --seq_length, if shorter)
# Higher than BERT's 5e-5: the probe has a few hundred steps, not epochs; for a small encoder
# this is its best rate (docs/finetuning.md).
LEARNING_RATE = 1e-3


def has_probe(config) -> bool:
  return bool(config.probe_train_file or config.probe_dev_file)


def _task(config):
  return data.read_task(builtin_task.resolve(config.probe_train_file, config.data_dir, "train"),
                        builtin_task.resolve(config.probe_dev_file, config.data_dir, "dev"),
                        config.probe_text_columns, config.probe_label_column)


def check_probe(config) -> None:
  """The probe's files (if any) readable, with their columns and labels (its settings are
  checked by `TrainConfig.check`)."""
  if has_probe(config):
    _task(config)


@contextlib.contextmanager
def own_random_state(seed: int):
  """Seeds Python's and numpy's generators for the block, then restores their states."""
  python_state, numpy_state = random.getstate(), np.random.get_state()
  random.seed(seed)
  np.random.seed(seed)
  try:
    yield
  finally:
    random.setstate(python_state)
    np.random.set_state(numpy_state)


def _tokenized(examples: data.Examples, classes: list[str],
               text_encoder: data.TextEncoder) -> tuple[dict, np.ndarray]:
  """The examples' features and label ids, computed once: each probe trains on the same."""
  features = text_encoder.features(*[tf.constant(texts) for texts in examples.texts])
  return ({name: value.numpy() for name, value in features.items()},
          np.array([classes.index(label) for label in examples.labels], np.int32))


class Probe:
  """`probe(model)` -> {"probe_accuracy", "probe_random_accuracy"} for a pre-training model
  (its `bert_encoder` layer); the same figures again at the same optimizer step."""

  def __init__(self, config, vocabulary: Vocabulary):
    train, dev, self.classes = _task(config)
    text_encoder = data.TextEncoder(vocabulary, lower_case=config.do_lower_case,
                                    seq_length=min(MAX_SEQ_LENGTH, config.seq_length))
    self.train = _tokenized(train, self.classes, text_encoder)
    self.dev = _tokenized(dev, self.classes, text_encoder)
    self.steps = config.probe_steps
    self.seed = config.seed
    self._random_accuracy = None
    self._last = (None, None)  # (step, figures)
    self.seconds = 0.0  # spent probing, in all

  def __call__(self, model: keras.Model) -> dict:
    optimizer = getattr(model, "optimizer", None)  # None: a model never compiled
    step = int(optimizer.iterations.numpy()) if optimizer else None
    if step is None or self._last[0] != step:
      start = time.perf_counter()
      figures = self.accuracies(model.get_layer("bert_encoder"))
      self.seconds += time.perf_counter() - start
      log.info("probe: dev accuracy %.4f (random weights: %.4f), %.1f s of probing so far",
               figures["probe_accuracy"], figures["probe_random_accuracy"], self.seconds)
      self._last = (step, figures)
    return dict(self._last[1])

  def accuracies(self, encoder: keras.Model) -> dict:
    """Dev accuracy after fine-tuning a copy of `encoder`, and (the first time) after the
    same from random weights of its shape. One classifier serves both, its training step
    traced once: tracing costs more than the steps."""
    with own_random_state(self.seed):
      copy = keras.models.clone_model(encoder)  # new layers, new (seeded) initial weights
      classifier = compile_classifier(
          classifier_model(copy, len(self.classes)),
          learning_rate=LEARNING_RATE, train_steps=self.steps, warmup_steps=self.steps // 10)
      initial = classifier.get_weights()  # random encoder, new head
      if self._random_accuracy is None:
        self._random_accuracy = self._fine_tuned_accuracy(classifier)
        classifier.set_weights(initial)
        for variable in classifier.optimizer.variables:  # its step and moments to 0
          variable.assign(tf.zeros_like(variable))
      copy.set_weights(encoder.get_weights())
      accuracy = self._fine_tuned_accuracy(classifier)
    del copy, classifier, initial
    gc.collect()
    return {"probe_accuracy": accuracy, "probe_random_accuracy": self._random_accuracy}

  def _fine_tuned_accuracy(self, classifier: keras.Model) -> float:
    train = tf.data.Dataset.from_tensor_slices(self.train).shuffle(
        len(self.train[1]), seed=self.seed).batch(BATCH_SIZE).repeat()
    classifier.fit(train, steps_per_epoch=self.steps, epochs=1, verbose=0)
    dev = tf.data.Dataset.from_tensor_slices(self.dev).batch(64)
    labels, predictions = predicted_classes(classifier, dev)
    return metrics.accuracy(labels, predictions)


def for_run(config, vocabulary: Vocabulary) -> Probe | None:
  """The run's probe, or None without --probe_train_file."""
  return Probe(config, vocabulary) if has_probe(config) else None

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

from bert_tf.data import builtin_task
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.finetune import data, metrics
from bert_tf.finetune.model import classifier_model, compile_classifier
from bert_tf.finetune.training import predicted_classes

log = logging.getLogger("bert_tf")

BATCH_SIZE = 32
MAX_SEQ_LENGTH = 64  # the probe's texts are cut here (or at --seq_length, if shorter)
# Higher than BERT's 5e-5: the probe has a few hundred steps, not epochs; for a small encoder
# this is its best rate (docs/finetuning.md).
LEARNING_RATE = 1e-3


def has_probe(config) -> bool:
  return bool(config.probe_train_file or config.probe_dev_file)


def _task(config):
  return data.read_task(builtin_task.resolve(config.probe_train_file, config.data_dir, 0),
                        builtin_task.resolve(config.probe_dev_file, config.data_dir, 1),
                        config.text_columns, config.label_column)


def check_probe(config) -> None:
  """Both probe files, readable, with their columns and labels, and positive --probe_steps."""
  if not has_probe(config):
    return
  if not (config.probe_train_file and config.probe_dev_file):
    raise UserError("give both --probe_train_file and --probe_dev_file")
  if config.probe_steps <= 0:
    raise UserError(f"probe_steps {config.probe_steps} must be positive")
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


class Probe:
  """`probe(model)` -> {"probe_accuracy", "probe_random_accuracy"} for a pre-training model
  (its `bert_encoder` layer); the same figures again at the same optimizer step."""

  def __init__(self, config, vocabulary: Vocabulary):
    self.train, self.dev, self.classes = _task(config)
    self.text_encoder = data.TextEncoder(
        vocabulary, lower_case=config.do_lower_case,
        seq_length=min(MAX_SEQ_LENGTH, config.seq_length))
    self.steps = config.probe_steps
    self.seed = config.seed
    self._random_accuracy = None
    self._last = (None, None)  # (step, figures)
    self.seconds = 0.0  # spent probing, in all

  def __call__(self, model: keras.Model) -> dict:
    step = int(model.optimizer.iterations.numpy()) if model.optimizer else None
    if step is None or self._last[0] != step:
      start = time.perf_counter()
      encoder = model.get_layer("bert_encoder")
      if self._random_accuracy is None:
        self._random_accuracy = self.accuracy(encoder, random_weights=True)
      figures = {"probe_accuracy": self.accuracy(encoder),
                 "probe_random_accuracy": self._random_accuracy}
      self.seconds += time.perf_counter() - start
      log.info("probe: dev accuracy %.4f (random weights: %.4f), %.1f s of probing so far",
               figures["probe_accuracy"], self._random_accuracy, self.seconds)
      self._last = (step, figures)
    return dict(self._last[1])

  def accuracy(self, encoder: keras.Model, random_weights: bool = False) -> float:
    """Dev accuracy after fine-tuning a copy of `encoder` (with `random_weights`, a copy of
    its shape, freshly initialised)."""
    with own_random_state(self.seed):
      copy = keras.models.clone_model(encoder)  # new layers, new (seeded) initial weights
      if not random_weights:
        copy.set_weights(encoder.get_weights())
      classifier = compile_classifier(
          classifier_model(copy, len(self.classes)),
          learning_rate=LEARNING_RATE, train_steps=self.steps, warmup_steps=self.steps // 10)
      train = data.dataset(self.train, self.classes, self.text_encoder, batch_size=BATCH_SIZE,
                           shuffle_seed=self.seed).repeat()
      classifier.fit(train, steps_per_epoch=self.steps, epochs=1, verbose=0)
      labels, predictions = predicted_classes(
          classifier, data.dataset(self.dev, self.classes, self.text_encoder, batch_size=64))
    del copy, classifier, train
    gc.collect()
    return metrics.accuracy(labels, predictions)


def for_run(config, vocabulary: Vocabulary) -> Probe | None:
  """The run's probe, or None without --probe_train_file."""
  return Probe(config, vocabulary) if has_probe(config) else None

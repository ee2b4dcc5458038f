"""The probe (--probe_train_file, --probe_dev_file): at each held-out evaluation, a copy of the
encoder as it is now is fine-tuned for --probe_steps on a labelled task of any of fine-tuning's
kinds (--probe_task, or read from the files) and scored on its dev file, so that a run shows
whether its encoder is becoming useful, not only its MLM loss.

The probe leaves the run as it was: it reads the encoder's weights and writes none, reads
nothing of the training stream, and runs under its own seed with Python's and numpy's random
states put back afterwards (Keras draws the seeds of new layers from Python's). Its models are
dropped and collected after each use. The same probe on the random weights of the same shape
is measured once, for comparison (`probe_random_accuracy`, or the kind's figure).
docs/finetuning.md.
"""

import contextlib
import gc
import logging
import os
import random
import time

import keras
import numpy as np
import tensorflow as tf

from bert_tf.data import builtin_tasks
from bert_tf.data.tokenization import Vocabulary
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.kinds.base import TaskKind
from bert_tf.finetune.kinds.registry import kind_named
from bert_tf.finetune.kinds.tag import tagging
from bert_tf.finetune.model import Pretrained, compile_task_model
from bert_tf.finetune.task_files import read_text
from bert_tf.finetune.tasks import task_kind
from bert_tf.task_kinds import FILE_ENDINGS

log = logging.getLogger("bert_tf")

BATCH_SIZE = 32
# Higher than BERT's 5e-5: the probe has a few hundred steps, not epochs; for a small encoder
# this is its best rate (docs/finetuning.md).
LEARNING_RATE = 1e-3


def has_probe(config) -> bool:
  return bool(config.probe_train_file or config.probe_dev_file)


def probe_kind(config) -> str:
  """--probe_task, else the kind the training file shows: a built-in task's own, the kind of
  its name's ending (`task_kinds.FILE_ENDINGS`: answer for .json, choose for .csv and .jsonl),
  tag for a CoNLL-style file (its first line ends in a BIO tag), else classify."""
  path = config.probe_train_file
  if config.probe_task or builtin_tasks.kind_of(path):
    return config.probe_task or builtin_tasks.kind_of(path)
  ending = os.path.splitext(path)[1].lower()
  if ending in FILE_ENDINGS:
    return FILE_ENDINGS[ending]
  first = next((line for line in read_text(path, "--probe_train_file").splitlines()
                if line.strip() and not line.startswith("-DOCSTART-")), "")
  fields = tagging.line_fields(first)
  return "tag" if len(fields) >= 2 and tagging.is_tag(fields[-1]) else "classify"


def finetune_config(config) -> FinetuneConfig:
  """The probe's task as fine-tuning settings: its files, columns and kind, sequences cut
  short (at the kind's `probe_seq_length`, or --seq_length if shorter; question answering's
  windows with a third for the question, the next window starting half a window on)."""
  name = probe_kind(config)
  seq_length = min(kind_named(name).probe_seq_length, config.seq_length)
  query_length = seq_length // 3
  return FinetuneConfig(
      task=name, train_file=config.probe_train_file, dev_file=config.probe_dev_file,
      text_columns=config.probe_text_columns, label_column=config.probe_label_column,
      data_dir=config.data_dir, seed=config.seed, seq_length=seq_length,
      max_query_length=query_length, doc_stride=max(1, (seq_length - query_length - 3) // 2))


def _task(config) -> TaskKind:
  return task_kind(finetune_config(config))


def check_probe(config) -> None:
  """The probe's files (if any) readable, of their kind, with their columns and labels (its
  settings are checked by `TrainConfig.check`)."""
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


class Probe:
  """`probe(model)` -> {"probe_<figure>", "probe_random_<figure>"} for a pre-training model
  (its `bert_encoder` layer), the figure the task kind's (its `probe_figure`: accuracy,
  Pearson, entity F1 or answer F1); the same figures again at the same optimizer step."""

  def __init__(self, config, vocabulary: Vocabulary):
    self.task = _task(config)
    # The features, made once. Encoding reads no weights, only the vocabulary and case.
    self.task.encode(Pretrained(None, None, vocabulary, config.do_lower_case))
    self.figure = self.task.probe_figure
    self.steps = config.probe_steps
    self.seed = config.seed
    self.train_batches = self._train_batches()
    self._random_figure = None
    self._last = (None, None)  # (step, figures)
    self.seconds = 0.0  # spent probing, in all

  def __call__(self, model: keras.Model) -> dict:
    optimizer = getattr(model, "optimizer", None)  # None: a model never compiled
    step = int(optimizer.iterations.numpy()) if optimizer else None
    if step is None or self._last[0] != step:
      start = time.perf_counter()
      figures = self.scores(model.get_layer("bert_encoder"))
      self.seconds += time.perf_counter() - start
      log.info("probe (%s): dev %s %.4f (random weights: %.4f), %.1f s of probing so far",
               self.task.name, self.figure.replace("_", " "), figures[f"probe_{self.figure}"],
               figures[f"probe_random_{self.figure}"], self.seconds)
      self._last = (step, figures)
    return dict(self._last[1])

  def scores(self, encoder: keras.Model) -> dict:
    """The dev figure after fine-tuning a copy of `encoder`, and (the first time) after the
    same from random weights of its shape. One task model serves both, its training step
    traced once (tracing costs more than the steps), put back as it was made in between: each
    figure is a function of the encoder's weights and the seed alone."""
    with own_random_state(self.seed):
      copy = keras.models.clone_model(encoder)  # new layers, new (seeded) initial weights
      model = compile_task_model(
          self.task.head(copy, len(self.task.labels), 0.02), self.task.loss(),
          learning_rate=LEARNING_RATE, train_steps=self.steps, warmup_steps=self.steps // 10)
      if self._random_figure is None:
        initial = [variable.numpy() for variable in model.variables]
        self._random_figure = self._fine_tuned_figure(model)
        _start_again(model, initial)
      copy.set_weights(encoder.get_weights())
      figure = self._fine_tuned_figure(model)
    del copy, model
    gc.collect()
    return {f"probe_{self.figure}": figure, f"probe_random_{self.figure}": self._random_figure}

  def _train_batches(self) -> tf.data.Dataset:
    """`steps` batches of the training rows, shuffled anew each pass over them; made once
    and kept after their first pass (each probe trains on the same)."""
    rows, needed = self.task.train_rows, self.steps * BATCH_SIZE
    shuffled = np.random.default_rng(self.seed)
    order = np.concatenate([shuffled.permutation(rows) for _ in range(-(-needed // rows))])
    return self.task.train_batches(BATCH_SIZE, order[:needed]).cache()

  def _fine_tuned_figure(self, model: keras.Model) -> float:
    """`model` trained on the probe's batches, then scored on the dev file."""
    model.fit(self.train_batches, epochs=1, verbose=0, shuffle=False)  # shuffled by the order
    figures, _ = self.task.evaluate(model)
    return figures[f"dev_{self.figure}"]


def _start_again(model: keras.Model, initial: list) -> None:
  """Puts `model` back as it was made: its variables to `initial` (the weights and the
  dropout layers' random-number states, which training advances: left advanced, a probe's
  figure would depend on whether the random weights' was measured before it) and its
  optimizer's step and moments to 0."""
  for variable, value in zip(model.variables, initial):
    variable.assign(value)
  for variable in model.optimizer.variables:
    variable.assign(tf.zeros_like(variable))


def for_run(config, vocabulary: Vocabulary) -> Probe | None:
  """The run's probe, or None without --probe_train_file."""
  return Probe(config, vocabulary) if has_probe(config) else None

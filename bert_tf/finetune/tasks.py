"""The four kinds of fine-tuning task, one object each, so that `training.finetune` tells the
same story for all of them. A kind:

- is made from the `FinetuneConfig`: it reads and checks its files, so that a mistake is a
  `UserError` before anything trains;
- `encode(pretrained)`: its files as the encoder's features, once the vocabulary is known;
- `head` and `loss`: the task model on the encoder, and what training minimises;
- `train_batches`: the training rows an epoch's order names (`epochs.py`), in batches;
- `evaluate(model)`: the dev figures under their metrics.json names (and what the best
  epoch writes besides, answer's predictions); `ranking`, the figures that order epochs, the
  first deciding (a GLUE task's score, `dev_glue_score`, before a classifier's accuracy);
- `write_outputs`: what the output_dir holds beside the metrics and the weights.
"""

import logging
import os

import keras
import numpy as np
import tensorflow as tf

from bert_tf import files
from bert_tf.data import builtin_tasks
from bert_tf.errors import UserError
from bert_tf.finetune import (
  batches,
  data,
  heads,
  losses,
  metrics,
  regression,
  squad,
  squad_answers,
  tagging,
)
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.glue import reading as glue_reading
from bert_tf.finetune.glue import scoring as glue_scoring
from bert_tf.finetune.glue import tasks as glue_tasks
from bert_tf.finetune.model import Pretrained, classifier_model, compile_task_model, load_pretrained

log = logging.getLogger("bert_tf")
DEV_BATCH = 64


def predicted_classes(model: keras.Model, dataset: tf.data.Dataset) -> tuple:
  """(label ids, predicted ids) of `dataset`'s examples, dropout off."""
  labels, predictions = [], []
  for features, label in dataset:
    labels.append(label.numpy())
    predictions.append(np.argmax(model(features, training=False).numpy(), axis=-1))
  return np.concatenate(labels), np.concatenate(predictions)


def without_pooler_training(encoder: keras.Model) -> keras.Model:
  """`encoder` with its pooler (the dense layer on `[CLS]`) kept as it is: a head on every
  token does not read it, so it would have no gradient."""
  encoder.get_layer("pooled_dense").trainable = False
  return encoder


class TaskKind:
  """What every kind has: its files (`train_file`, `dev_file`, a built-in task's when named)
  read (`train`, `dev`), its labels (`labels`: classes or tags, else none), whether an
  example is a pair of texts, and the dev figures that rank epochs (`ranking`)."""

  name = ""
  labels: list[str] = []
  pair = False
  ranking: tuple[str, ...] = ()

  def __init__(self, config: FinetuneConfig):
    self.config = config
    # A built-in task's name stands for its files (`builtin_tasks`).
    self.train_file, self.dev_file = (
        builtin_tasks.resolve(path, config.data_dir, split, self.name)
        for path, split in ((config.train_file, "train"), (config.dev_file, "dev")))

  def rank(self, figures: dict) -> tuple:
    """An epoch's figures as a key: the epoch kept has the greatest."""
    return tuple(figures[name] for name in self.ranking)

  @property
  def train_rows(self) -> int:
    """The training rows an epoch goes through (a long context is several)."""
    return len(self.train)

  def noted(self) -> dict:
    """What metrics.json notes besides the figures."""
    return {}

  def task_json(self) -> dict:
    """task.json's entries of this kind, beside the common ones."""
    return {}

  def write_outputs(self, model: keras.Model, directory: str, outputs) -> None:
    """Writes what this kind adds to the output_dir; `outputs` are the best epoch's."""


# === Classification and regression: texts or pairs in a TSV ===


def text_examples(config: FinetuneConfig, given: str, path: str) -> data.Examples:
  """The examples of the TSV file `path` (`given`, as the flag names it): a built-in task's by
  its own columns (`builtin_tasks.columns`), any other file by the column flags."""
  builtin = builtin_tasks.columns(given)
  if builtin:
    return data.read_examples(path, *builtin, header=True)
  return data.read_examples(path, data.column_names(config.text_columns), config.label_column,
                            header=not config.no_header)


def text_splits(config: FinetuneConfig, train_file: str, dev_file: str) -> tuple:
  """(GLUE task or None, training set, {dev set's name: examples}) of a TSV task: a GLUE
  task's files as it ships them (`--glue_task`; MNLI has two dev sets), else `train_file`
  and `dev_file` (the one dev set named ""), by their columns (`text_examples`)."""
  if config.glue_task:
    glue = glue_tasks.glue_task(config.glue_task)
    return (glue, *glue_reading.read_splits(glue, config.glue_dir))
  train, dev = (text_examples(config, given, path) for given, path in
                ((config.train_file, train_file), (config.dev_file, dev_file)))
  return None, train, {"": dev}


class TextTask(TaskKind):
  """What classification and regression share: texts or pairs in TSV files, one dev set or
  several (MNLI's matched and mismatched), and, for a GLUE task, its own figures on every dev
  set (`glue_figures`), its score ranking epochs first."""

  def __init__(self, config: FinetuneConfig):
    super().__init__(config)
    self.glue, self.train, self.dev_sets = text_splits(config, self.train_file, self.dev_file)
    self.dev = next(iter(self.dev_sets.values()))  # the kind's own figures are the first's
    self.pair = len(self.train.texts) == 2
    if self.glue:
      self.ranking = (f"dev_{glue_tasks.SCORE}", *self.ranking)

  def glue_figures(self, predictions: dict[str, list]) -> dict:
    """The GLUE task's dev figures (`glue.scoring.dev_figures`) of `predictions`, label names
    or numbers by dev set; none for a task that is not GLUE's."""
    if self.glue is None:
      return {}
    return glue_scoring.dev_figures(
        self.glue, {name: dev.labels for name, dev in self.dev_sets.items()}, predictions)

  @staticmethod
  def glue_summary(figures: dict) -> str:
    score = figures.get(f"dev_{glue_tasks.SCORE}")
    return "" if score is None else f"; GLUE score {score:.4f}"


class Classification(TextTask):
  """A class per text or pair; ranked by dev accuracy, then macro F1."""

  name = "classify"
  ranking = ("dev_accuracy", "dev_macro_f1")

  def __init__(self, config: FinetuneConfig):
    super().__init__(config)
    self.labels = data.task_classes(self.train, *self.dev_sets.values())

  def encode(self, pretrained: Pretrained) -> None:
    self.text_encoder = data.text_encoder(
        pretrained.vocabulary, lower_case=pretrained.lower_case, seq_length=self.config.seq_length)
    self.dev_batches = {name: self._dataset(dev, batch_size=DEV_BATCH)
                        for name, dev in self.dev_sets.items()}

  def _dataset(self, examples: data.Examples, **options) -> tf.data.Dataset:
    return data.dataset(examples, self.labels, self.text_encoder, **options)

  def train_batches(self, batch_size: int, order: np.ndarray) -> tf.data.Dataset:
    return self._dataset(self.train, batch_size=batch_size, order=order)

  @staticmethod
  def head(encoder: keras.Model, num_labels: int, initializer_range: float) -> keras.Model:
    return classifier_model(encoder, num_labels, initializer_range=initializer_range)

  @staticmethod
  def loss() -> keras.losses.Loss:
    return losses.classification_loss()

  def evaluate(self, model: keras.Model) -> tuple[dict, None]:
    classes = {name: predicted_classes(model, batches)
               for name, batches in self.dev_batches.items()}
    labels, predictions = next(iter(classes.values()))
    return {"dev_accuracy": metrics.accuracy(labels, predictions),
            "dev_macro_f1": metrics.macro_f1(labels, predictions),
            **self.glue_figures({name: [self.labels[i] for i in predicted]
                                 for name, (_, predicted) in classes.items()})}, None

  @classmethod
  def summary(cls, figures: dict) -> str:
    return (f"dev accuracy {figures['dev_accuracy']:.4f}, macro F1 "
            f"{figures['dev_macro_f1']:.4f}" + cls.glue_summary(figures))

  def noted(self) -> dict:
    return {"classes": self.labels}

  def write_outputs(self, model: keras.Model, directory: str, outputs) -> None:
    files.write_json(os.path.join(directory, "classes.json"), {"classes": self.labels})


class Regression(TextTask):
  """A number per text or pair (the label column); mean squared error; ranked by dev
  Pearson, then Spearman."""

  name = "regress"
  ranking = ("dev_pearson", "dev_spearman")

  def __init__(self, config: FinetuneConfig):
    super().__init__(config)
    self.train_targets, self.dev_targets = map(regression.targets, (self.train, self.dev))

  def encode(self, pretrained: Pretrained) -> None:
    self.text_encoder = data.text_encoder(
        pretrained.vocabulary, lower_case=pretrained.lower_case, seq_length=self.config.seq_length)
    self.dev_batches = data.text_dataset(self.dev, self.dev_targets, self.text_encoder,
                                         batch_size=DEV_BATCH)

  def train_batches(self, batch_size: int, order: np.ndarray) -> tf.data.Dataset:
    return data.text_dataset(self.train, self.train_targets, self.text_encoder,
                             batch_size=batch_size, order=order)

  @staticmethod
  def head(encoder: keras.Model, num_labels: int, initializer_range: float) -> keras.Model:
    return heads.regression_model(encoder, initializer_range=initializer_range)

  @staticmethod
  def loss() -> keras.losses.Loss:
    return losses.regression_loss()

  def evaluate(self, model: keras.Model) -> tuple[dict, None]:
    scores = np.concatenate([model(features, training=False).numpy()[:, 0]
                             for features, _ in self.dev_batches])
    return {"dev_pearson": metrics.pearson(self.dev_targets, scores),
            "dev_spearman": metrics.spearman(self.dev_targets, scores),
            "dev_mse": float(np.mean((scores - self.dev_targets) ** 2)),
            **self.glue_figures({"": scores})}, None

  @classmethod
  def summary(cls, figures: dict) -> str:
    return (f"dev Pearson {figures['dev_pearson']:.4f}, Spearman "
            f"{figures['dev_spearman']:.4f}, mean squared error {figures['dev_mse']:.4f}"
            + cls.glue_summary(figures))


# === Token tagging: CoNLL-style files ===


class Tagging(TaskKind):
  """A tag per word; ranked by dev entity F1, then token accuracy."""

  name = "tag"
  ranking = ("dev_entity_f1", "dev_token_accuracy")

  def __init__(self, config: FinetuneConfig):
    super().__init__(config)
    self.train, self.dev, self.labels = tagging.read_tagging_task(self.train_file,
                                                                  self.dev_file)

  def encode(self, pretrained: Pretrained) -> None:
    self.train_features, self.dev_features = (
        tagging.tagging_features(sentences, self.labels, pretrained.vocabulary,
                                 lower_case=pretrained.lower_case,
                                 seq_length=self.config.seq_length)
        for sentences in (self.train, self.dev))
    for sentences, features in ((self.train, self.train_features),
                                (self.dev, self.dev_features)):
      if features.words_cut:
        log.warning("%s: %d words are past the end of --seq_length %d and go untagged",
                    sentences.path, features.words_cut, self.config.seq_length)

  def train_batches(self, batch_size: int, order: np.ndarray) -> tf.data.Dataset:
    return batches.batches(self.train_features.features, self.train_features.labels,
                           batch_size=batch_size, order=order)

  @staticmethod
  def head(encoder: keras.Model, num_labels: int, initializer_range: float) -> keras.Model:
    return heads.tagging_model(without_pooler_training(encoder), num_labels,
                               initializer_range=initializer_range)

  @staticmethod
  def loss() -> keras.losses.Loss:
    return losses.tagging_loss()

  def evaluate(self, model: keras.Model) -> tuple[dict, None]:
    logits = model.predict(self.dev_features.features, batch_size=DEV_BATCH, verbose=0)
    predicted = tagging.word_tags(np.argmax(logits, axis=-1), self.dev_features.first_pieces,
                                  self.labels)
    scores = metrics.entity_scores(self.dev.tags, predicted)
    return {"dev_entity_f1": scores["f1"], "dev_entity_precision": scores["precision"],
            "dev_entity_recall": scores["recall"],
            "dev_token_accuracy": float(scores["token_accuracy"]),
            "dev_entity_per_type": scores["per_type"]}, None

  @staticmethod
  def summary(figures: dict) -> str:
    return (f"dev entity F1 {figures['dev_entity_f1']:.4f} (precision "
            f"{figures['dev_entity_precision']:.4f}, recall "
            f"{figures['dev_entity_recall']:.4f}), token accuracy "
            f"{figures['dev_token_accuracy']:.4f}")


# === Extractive question answering: SQuAD JSON files ===


class Answering(TaskKind):
  """An answer's span in a context, or none (v2.0); ranked by dev F1, then exact match. The
  best epoch's dev answers are written as predictions.json."""

  name = "answer"
  pair = True  # a question and its context
  ranking = ("dev_f1", "dev_exact_match")

  def __init__(self, config: FinetuneConfig):
    super().__init__(config)
    squad.check_windows(seq_length=config.seq_length, doc_stride=config.doc_stride,
                        max_query_length=config.max_query_length)
    self.train = squad.read_squad(self.train_file, "--train_file")
    self.dev = squad.read_squad(self.dev_file, "--dev_file")
    self.version_2_with_negative = (config.version_2_with_negative or
                                    self.train.has_unanswerable or self.dev.has_unanswerable)

  @property
  def train_rows(self) -> int:
    return len(self.train_features.positions)

  def encode(self, pretrained: Pretrained) -> None:
    self.train_features, self.dev_features = (
        squad.squad_features(questions, pretrained.vocabulary, lower_case=pretrained.lower_case,
                             seq_length=self.config.seq_length,
                             doc_stride=self.config.doc_stride,
                             max_query_length=self.config.max_query_length)
        for questions in (self.train, self.dev))

  def train_batches(self, batch_size: int, order: np.ndarray) -> tf.data.Dataset:
    return batches.batches(self.train_features.features, self.train_features.positions,
                           batch_size=batch_size, order=order)

  @staticmethod
  def head(encoder: keras.Model, num_labels: int, initializer_range: float) -> keras.Model:
    return heads.span_model(without_pooler_training(encoder),
                            initializer_range=initializer_range)

  @staticmethod
  def loss() -> keras.losses.Loss:
    return losses.span_loss()

  def evaluate(self, model: keras.Model) -> tuple[dict, squad_answers.Answers]:
    logits = model.predict(self.dev_features.features, batch_size=DEV_BATCH, verbose=0)
    answers = squad_answers.best_answers(
        self.dev, self.dev_features, logits, allow_no_answer=self.version_2_with_negative,
        n_best=self.config.n_best_size, max_answer_length=self.config.max_answer_length,
        null_score_diff_threshold=self.config.null_score_diff_threshold)
    scores = metrics.squad_scores(self.dev.gold_answers(), answers.predictions)
    return {"dev_" + name: value for name, value in scores.items()
            if not name.endswith("total")}, answers

  @staticmethod
  def summary(figures: dict) -> str:
    return (f"dev exact match {figures['dev_exact_match']:.4f}, F1 {figures['dev_f1']:.4f}" +
            "".join(f", {part.replace('_', ' ')}F1 {figures[f'dev_{part}f1']:.4f}"
                    for part in ("has_answer_", "no_answer_") if f"dev_{part}f1" in figures))

  def task_json(self) -> dict:
    return {"max_query_length": self.config.max_query_length,
            "doc_stride": self.config.doc_stride,
            "max_answer_length": self.config.max_answer_length,
            "n_best_size": self.config.n_best_size,
            "null_score_diff_threshold": self.config.null_score_diff_threshold,
            "version_2_with_negative": self.version_2_with_negative}

  def write_outputs(self, model: keras.Model, directory: str,
                    outputs: squad_answers.Answers) -> None:
    squad_answers.write_predictions(directory, outputs)


KINDS = {kind.name: kind for kind in (Classification, Regression, Tagging, Answering)}


def task_kind(config: FinetuneConfig) -> TaskKind:
  """The kind `config.task` names (a GLUE task's own, with `--glue_task`), its files read and
  checked."""
  name = glue_tasks.glue_task(config.glue_task).kind if config.glue_task else config.task
  return KINDS[name](config)


def task_model(model_dir: str, task: str, *, train_steps: int, num_labels: int = 0,
               seq_length: int = 128, learning_rate: float = 5e-5,
               warmup_steps: int | None = None, from_scratch: bool = False) -> keras.Model:
  """The compiled model of a task kind on `model_dir`'s encoder, for `fit` on your own data:
  classify (`num_labels` classes), regress, tag (`num_labels` tags) or answer.

  `train_steps` is the number of updates the learning rate decays over; the warm-up is its
  first 10% unless given. `model.vocabulary` and `model.lower_case` are the encoder's, for
  `tagging.tagging_features` and `squad.squad_features`; for classify and regress,
  `model.text_features(texts)` (or `(texts_a, texts_b)`) turns raw strings into the input.
  """
  if task not in KINDS:
    raise UserError(f"unknown task {task!r}: use one of {', '.join(KINDS)}")
  kind = KINDS[task]
  if task in ("classify", "tag") and num_labels < 2:
    raise UserError(f"a {task} model needs num_labels of 2 or more, not {num_labels}")
  pretrained = load_pretrained(model_dir, from_scratch=from_scratch)
  model = compile_task_model(
      kind.head(pretrained.encoder, num_labels, pretrained.config.initializer_range),
      kind.loss(), learning_rate=learning_rate, train_steps=train_steps,
      warmup_steps=train_steps // 10 if warmup_steps is None else warmup_steps)
  model.vocabulary, model.lower_case = pretrained.vocabulary, pretrained.lower_case
  if task in ("classify", "regress"):
    text_encoder = data.text_encoder(
        pretrained.vocabulary, lower_case=pretrained.lower_case, seq_length=seq_length)
    model.text_features = lambda *texts: text_encoder.features(
        *[tf.constant(list(t), tf.string) for t in texts])
  return model

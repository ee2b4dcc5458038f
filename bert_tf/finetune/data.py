"""A labelled task's TSV files, checked, and their examples as the classifier's features.

Files are GLUE's format: tab-separated, a header row naming the columns (or none, CoLA's, the
columns then numbered from 0), no quoting (a `"` is part of the text), a row per line (a
carriage return inside a field is text). Labels are strings; the classes are the training
file's sorted distinct labels. Every mistake is a `UserError` naming the file, raised before
anything trains. Tokenization is the pre-training tokenizer's, in the
graph (`TextEncoder`), so that training, the Keras function and the exported `classify`
signature see the same ids.
"""

import dataclasses
import functools
import logging

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.data.prefetching import prefetched
from bert_tf.data.text_pairs import combined_pair
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.finetune.task_files import read_text

log = logging.getLogger("bert_tf")


@dataclasses.dataclass(frozen=True)
class Examples:
  """One TSV file's examples: a list of texts per text column, and the labels."""

  path: str
  texts: tuple[list[str], ...]
  labels: list[str]

  def __len__(self) -> int:
    return len(self.labels)


def column_names(text_columns: str) -> list[str]:
  """`--text_columns` as a list of one or two names."""
  names = [name.strip() for name in text_columns.split(",") if name.strip()]
  if not 1 <= len(names) <= 2:
    raise UserError(f"--text_columns {text_columns!r}: give one column name, or two for a "
                    "pair of texts")
  return names


def read_rows(path: str, *, header: bool = True,
              skip_malformed: bool = False) -> tuple[list[str] | None, list[list[str]]]:
  """(header row or None, example rows) of a TSV file, every row as wide as the header (or,
  without one, the first row); raises `UserError` for a missing or empty file, a row of another
  width, or no examples. With `skip_malformed`, a row of another width is left out instead,
  with a warning: GLUE's QQP training file has a few, a question cut by a line break."""
  text = read_text(path, "--train_file or --dev_file (or the probe's)")
  lines = [line.removesuffix("\r") for line in text.split("\n")]
  numbered = [(number, line.split("\t")) for number, line in enumerate(lines, start=1) if line]
  if not numbered:
    raise UserError(f"{path} is empty (it needs {'a header row and ' * header}examples)")
  names = numbered.pop(0)[1] if header else None
  if not numbered:
    raise UserError(f"{path} has a header row but no examples")
  width, first = (len(names), "the header") if header else (len(numbered[0][1]), "row 1")
  malformed = [(number, len(row)) for number, row in numbered if len(row) != width]
  if malformed and not skip_malformed:
    number, fields = malformed[0]
    raise UserError(f"{path}, row {number}: {fields} fields, {first} has {width}")
  if malformed:
    log.warning("%s: %d rows left out, their fields not the %d %s has (the first: row %d)",
                path, len(malformed), width, first, malformed[0][0])
  rows = [row for _, row in numbered if len(row) == width]
  if not rows:
    raise UserError(f"{path} has no row of {width} fields")
  return names, rows


def column_index(path: str, names: list[str] | None, column: str, width: int) -> int:
  """Where `column` is: its name in the header, or, in a file without one, its number from 0."""
  if names is not None:
    if column not in names:
      raise UserError(f"{path} has no column {column} (its header: {', '.join(names)})")
    return names.index(column)
  if not column.isdigit() or int(column) >= width:
    raise UserError(f"{path} has no header row: give its columns by number, 0 to {width - 1} "
                    f"(not {column!r})")
  return int(column)


def read_examples(path: str, text_columns: list[str], label_column: str, *,
                  header: bool = True, skip_malformed: bool = False) -> Examples:
  """Reads a TSV file's text and label columns, named by the header row or, with
  `header=False`, numbered from 0; raises `UserError` for a missing file or column, a row of
  the wrong width (unless `skip_malformed`: see `read_rows`), or a file without examples."""
  names, rows = read_rows(path, header=header, skip_malformed=skip_malformed)
  indices = [column_index(path, names, name, len(rows[0])) for name in text_columns]
  label = column_index(path, names, label_column, len(rows[0]))
  return Examples(path, tuple([row[i] for row in rows] for i in indices),
                  [row[label] for row in rows])


def task_classes(train: Examples, *dev_sets: Examples) -> list[str]:
  """The sorted distinct training labels; raises `UserError` for a single class or a dev
  label the training file does not have."""
  classes = sorted(set(train.labels))
  if len(classes) < 2:
    raise UserError(f"{train.path} has a single label {classes[0]!r}: a classifier needs two "
                    "classes or more")
  for dev in dev_sets:
    unknown = sorted(set(dev.labels) - set(classes))
    if unknown:
      raise UserError(f"{dev.path} has labels the training file has not: "
                      f"{', '.join(map(repr, unknown[:5]))}")
  return classes


def read_task(train_file: str, dev_file: str, text_columns: str, label_column: str, *,
              header: bool = True) -> tuple[Examples, Examples, list[str]]:
  """(train, dev, classes) of a task, every file and label checked."""
  names = column_names(text_columns)
  train = read_examples(train_file, names, label_column, header=header)
  dev = read_examples(dev_file, names, label_column, header=header)
  return train, dev, task_classes(train, dev)


class TextEncoder(tf.Module):
  """Raw text (one string tensor, or two for pairs) -> the encoder's features, padded to
  `seq_length` (training's fixed shape) or, `pad_to_longest`, to the batch's longest (serving:
  a batch of short texts costs their length, not the sequence's; the same outputs, padding
  being masked): `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, cut to `seq_length`, the longer
  text first, as in pre-training. An empty second text is none, as in original BERT's
  run_classifier.py: `[CLS] a [SEP]` (as the SavedModel's and the verification's inputs have
  it)."""

  def __init__(self, vocabulary: Vocabulary, *, lower_case: bool, seq_length: int,
               pad_to_longest: bool = False):
    super().__init__(name="text_encoder")
    self.tokenizer = vocabulary.tokenizer(lower_case)
    self.cls_id, self.sep_id = vocabulary.cls_id, vocabulary.sep_id
    self.seq_length = seq_length
    self.pad_to_longest = pad_to_longest
    # Traced once for one text and once for pairs. Wrapping the bound method (rather than
    # decorating it, which holds the encoder by a weak reference) keeps an encoder made and
    # called in one expression alive while it runs.
    self.features = tf.function(self._features, autograph=False, reduce_retracing=True)

  def _tokens(self, text: tf.Tensor) -> tf.RaggedTensor:
    return tf.cast(self.tokenizer.tokenize(text), tf.int64)  # [batch, (tokens)]

  def _features(self, text_a: tf.Tensor, text_b: tf.Tensor | None = None) -> dict:
    token_ids, segment_ids = combined_pair(
        self._tokens(text_a), None if text_b is None else self._tokens(text_b),
        seq_length=self.seq_length, cls_id=self.cls_id, sep_id=self.sep_id)
    if self.pad_to_longest:
      token_ids, segment_ids, padding_mask = (
          token_ids.to_tensor(), segment_ids.to_tensor(), tf.ones_like(token_ids).to_tensor())
    else:
      token_ids, padding_mask = tf_text.pad_model_inputs(token_ids, self.seq_length)
      segment_ids, _ = tf_text.pad_model_inputs(segment_ids, self.seq_length)
    return {"token_ids": tf.cast(token_ids, tf.int32),
            "segment_ids": tf.cast(segment_ids, tf.int32),
            "padding_mask": tf.cast(padding_mask, tf.int32)}


@functools.lru_cache(maxsize=8)
def text_encoder(vocabulary: Vocabulary, *, lower_case: bool, seq_length: int,
                 pad_to_longest: bool = False) -> TextEncoder:
  """The process's `TextEncoder` for these settings: its `features`, traced once, serve every
  dataset, Keras function and export of the process (a sweep's runs, GLUE's nine tasks), where
  tracing the tokenizer anew for each would cost seconds."""
  return TextEncoder(vocabulary, lower_case=lower_case, seq_length=seq_length,
                     pad_to_longest=pad_to_longest)


def dataset(examples: Examples, classes: list[str], text_encoder: TextEncoder, *,
            batch_size: int, order: np.ndarray | None = None) -> tf.data.Dataset:
  """(features, label id) batches of `examples`; see `text_dataset`."""
  return text_dataset(examples, [classes.index(label) for label in examples.labels],
                      text_encoder, batch_size=batch_size, order=order)


def text_dataset(examples: Examples, targets, text_encoder: TextEncoder, *, batch_size: int,
                 order: np.ndarray | None = None) -> tf.data.Dataset:
  """(features, target) batches of `examples`, a target per example (a class id, a number):
  of the rows `order` names, in that order (an epoch's, from `epochs.EpochPlan.order`); all
  rows in file order without it."""
  texts = examples.texts
  if order is not None:
    texts, targets = (tuple([column[i] for i in order] for column in texts),
                      [targets[i] for i in order])
  data = tf.data.Dataset.from_tensor_slices((texts, targets))
  return prefetched(data.batch(batch_size).map(
      lambda texts, target: (text_encoder.features(*texts), target),
      num_parallel_calls=tf.data.AUTOTUNE))

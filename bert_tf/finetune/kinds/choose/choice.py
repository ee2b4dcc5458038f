"""A multiple-choice task's files, checked, and their examples as the encoder's features: a
context and its endings, one of which is right (SWAG, an exam's question and its options, a
dialogue's next turn).

Two forms are read, told apart by their first line:

- **SWAG's CSV as published** (`train.csv`, `val.csv`, `test.csv`): a header row with `sent1`
  (the context), `sent2` (the start of the second sentence, which every ending goes on from),
  `ending0`, `ending1`, ... (any number, at least two) and `label` (the right ending's number);
  its other columns (`video-id`, `fold-ind`, `startphrase`, `gold-source`) are not read. The
  test file has no `label`.
- **JSON Lines**, any number of endings: a JSON object a line, `{"context": "...", "endings":
  ["...", "..."], "label": 1}`, with an optional `prefix` (what every ending goes on from, as
  SWAG's `sent2`) and `id`. Rows may have different numbers of endings (at least two): a
  task's examples are padded to the most endings any of its rows has with absent endings,
  which have no tokens, get no probability and are never the answer.

An example is the context paired with each of its endings, `[CLS] context [SEP] prefix ending
[SEP]`, as BERT's SWAG fine-tuning and transformers' run_swag.py pair them, the longer side cut
first: features [examples, endings, seq]. Every mistake is a `UserError` naming the file and
the row (SWAG's; the header is row 1) or the line (JSON Lines'), raised before anything trains:
a SWAG file without its ending columns or `sent1`, a row of another width, an empty ending,
fewer than two endings, a label that is not one of the endings' numbers.
"""

import csv
import dataclasses
import io
import json
import re

import numpy as np
import tensorflow as tf

from bert_tf.data.prefetching import prefetched
from bert_tf.errors import UserError
from bert_tf.finetune.data import TextEncoder
from bert_tf.finetune.task_files import read_text

CONTEXT, PREFIX, LABEL = "sent1", "sent2", "label"  # SWAG's columns
_ENDING = re.compile(r"ending(\d+)")
MIN_ENDINGS = 2
ABSENT = ""  # an ending that a row with fewer endings than the task's is padded with


@dataclasses.dataclass(frozen=True)
class Choices:
  """One file's examples: contexts, each one's endings (its prefix put before each, as they
  are paired), and the right ending's number of each (None for a file without labels, SWAG's
  test file)."""

  path: str
  contexts: list[str]
  endings: list[list[str]]
  labels: list[int] | None

  def __len__(self) -> int:
    return len(self.contexts)

  @property
  def most_endings(self) -> int:
    return max(len(endings) for endings in self.endings)


def read_choices(path: str, flag: str, *, labelled: bool = True) -> Choices:
  """The examples of a SWAG CSV or JSON Lines file (see the module's docstring); `flag` names
  the setting that gives the path; without `labelled` (a file to predict) labels are not
  needed."""
  text = read_text(path, flag)
  first = next((line for line in text.splitlines() if line.strip()), None)
  if first is None:
    raise UserError(f"{path} is empty (a multiple-choice file is SWAG's CSV or JSON Lines)")
  if first.lstrip().startswith("{"):
    return _json_lines(path, text, labelled)
  return _swag_csv(path, text, labelled)


def _ending_text(prefix: str, ending: str) -> str:
  return f"{prefix} {ending}".strip() if prefix.strip() else ending


def _label(path: str, where: str, label, count: int) -> int:
  """`label` (a number, or a text of one) as an ending's number, 0 to `count` - 1; else a
  UserError."""
  number = int(label) if isinstance(label, str) and label.strip().isdigit() else label
  if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number < count:
    raise UserError(f"{path}, {where}: label {label!r} is not one of the endings' numbers, 0 "
                    f"to {count - 1}")
  return number


def _checked_endings(path: str, where: str, endings: list[str]) -> list[str]:
  if len(endings) < MIN_ENDINGS:
    raise UserError(f"{path}, {where}: {len(endings)} ending(s); a choice needs at least "
                    f"{MIN_ENDINGS}")
  for i, ending in enumerate(endings):
    if not ending.strip():
      raise UserError(f"{path}, {where}: ending {i} is empty")
  return endings


def _swag_csv(path: str, text: str, labelled: bool) -> Choices:
  rows = [row for row in csv.reader(io.StringIO(text)) if any(field.strip() for field in row)]
  header = [name.strip() for name in rows[0]]
  numbered = sorted((int(match[1]), i) for i, name in enumerate(header)
                    if (match := _ENDING.fullmatch(name)))
  if not numbered:
    raise UserError(f"{path} has no ending columns (ending0, ending1, ...): a multiple-choice "
                    f"CSV has SWAG's columns (its header: {', '.join(header)})")
  if CONTEXT not in header:
    raise UserError(f"{path} has no column {CONTEXT} (the context; its header: "
                    f"{', '.join(header)})")
  if labelled and LABEL not in header:
    raise UserError(f"{path} has no column {LABEL} (the right ending's number; its header: "
                    f"{', '.join(header)})")
  if len(rows) < 2:
    raise UserError(f"{path} has a header row but no examples")
  context = header.index(CONTEXT)
  prefix = header.index(PREFIX) if PREFIX in header else None
  label = header.index(LABEL) if labelled else None
  contexts, endings, labels = [], [], []
  for number, row in enumerate(rows[1:], start=2):
    where = f"row {number}"
    if len(row) != len(header):
      raise UserError(f"{path}, {where}: {len(row)} fields, the header has {len(header)}")
    start = "" if prefix is None else row[prefix]
    contexts.append(row[context])
    endings.append([_ending_text(start, ending) for ending in _checked_endings(
        path, where, [row[i] for _, i in numbered])])
    if labelled:
      labels.append(_label(path, where, row[label], len(numbered)))
  return Choices(path, contexts, endings, labels if labelled else None)


def _json_lines(path: str, text: str, labelled: bool) -> Choices:
  contexts, endings, labels = [], [], []
  for number, line in enumerate(text.splitlines(), start=1):
    if not line.strip():
      continue
    where = f"line {number}"
    try:
      row = json.loads(line)
    except json.JSONDecodeError as e:
      raise UserError(f"{path}, {where}: not JSON ({e.msg}, column {e.colno})") from None
    if not isinstance(row, dict):
      raise UserError(f"{path}, {where}: not a JSON object with context, endings and label")
    context, row_endings, prefix = row.get("context"), row.get("endings"), row.get("prefix", "")
    if not isinstance(context, str):
      raise UserError(f"{path}, {where}: no 'context' text")
    if not isinstance(prefix, str):
      raise UserError(f"{path}, {where}: 'prefix' is not a text")
    if not isinstance(row_endings, list) or not all(isinstance(e, str) for e in row_endings):
      raise UserError(f"{path}, {where}: 'endings' is not a list of texts")
    if labelled and "label" not in row:
      raise UserError(f"{path}, {where}: no 'label' (the right ending's number)")
    contexts.append(context)
    endings.append([_ending_text(prefix, e) for e in _checked_endings(path, where, row_endings)])
    if labelled:
      labels.append(_label(path, where, row["label"], len(row_endings)))
  return Choices(path, contexts, endings, labels if labelled else None)


def padded(endings: list[list[str]], count: int | None = None) -> np.ndarray:
  """`endings` (a list per example) as an array of strings [examples, `count`], each row
  padded with `ABSENT` (to the longest row's count without `count`)."""
  count = count or max(map(len, endings))
  return np.array([list(row) + [ABSENT] * (count - len(row)) for row in endings], dtype=str)


class ChoiceEncoder(tf.Module):
  """Contexts [batch] and their endings [batch, endings] (raw text; `ABSENT` for none) -> the
  encoder's features [batch, endings, seq]: `[CLS] context [SEP] ending [SEP]` of each ending
  by `TextEncoder`, an absent ending's all 0 (no token, no padding mask)."""

  def __init__(self, text_encoder: TextEncoder):
    super().__init__(name="choice_encoder")
    self.text_encoder = text_encoder

  def features(self, contexts: tf.Tensor, endings: tf.Tensor) -> dict:
    shape = tf.shape(endings)  # [batch, endings]
    flat = self.text_encoder.features(tf.repeat(contexts, shape[1]), tf.reshape(endings, [-1]))
    present = tf.cast(tf.reshape(endings, [-1]) != ABSENT, tf.int32)[:, None]
    return {name: tf.reshape(value * present, tf.concat([shape, [-1]], axis=0))
            for name, value in flat.items()}


def dataset(choices: Choices, count: int, choice_encoder: ChoiceEncoder, *, batch_size: int,
            order: np.ndarray | None = None) -> tf.data.Dataset:
  """(features [batch, `count`, seq], label [batch]) batches of `choices` (labelled), of the
  rows `order` names in that order (an epoch's, from `epochs.EpochPlan.order`); all rows in
  file order without it."""
  contexts, endings = np.array(choices.contexts, dtype=str), padded(choices.endings, count)
  labels = np.array(choices.labels, np.int32)
  if order is not None:
    contexts, endings, labels = contexts[order], endings[order], labels[order]
  data = tf.data.Dataset.from_tensor_slices((contexts, endings, labels))
  return prefetched(data.batch(batch_size).map(
      lambda contexts, endings, label: (choice_encoder.features(contexts, endings), label),
      num_parallel_calls=tf.data.AUTOTUNE))

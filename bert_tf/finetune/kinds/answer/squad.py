"""Extractive question answering data: SQuAD v1.1 and v2.0 JSON files read as published and
checked, and their questions as the encoder's features, a long context cut into windows as
google-research/bert's run_squad.py cuts it.

A window is `[CLS] question [SEP] context piece [SEP]`: the question cut to `max_query_length`
tokens, then as many context tokens as the sequence has room for; the next window starts
`doc_stride` tokens further, until one reaches the context's end. The label of a window is the
position of the answer's first and last token in it, both 0 (`[CLS]`) when the answer is not
wholly inside the window or the question has none (v2.0). Training takes a question's first
answer, as run_squad does.

Every token keeps the character offsets of its text in the original context
(`bert_tf.data.token_offsets`), so an answer is cut from the context as written; the token ids
are the pre-training tokenizer's on the whole context.
"""

import dataclasses
import json
import logging

import numpy as np
import tensorflow as tf

from bert_tf.data.token_offsets import tokenize_with_offsets
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.finetune.task_files import read_text

log = logging.getLogger("bert_tf")

# run_squad.py's defaults.
SEQ_LENGTH, DOC_STRIDE, MAX_QUERY_LENGTH = 384, 128, 64
_BATCH = 256  # texts tokenized per call


@dataclasses.dataclass(frozen=True)
class Question:
  """A question, its context (an index into `SquadFile.contexts`) and its answers as (text,
  character offset in the context), in the file's order; none when it is unanswerable."""

  id: str
  text: str
  context: int
  answers: tuple[tuple[str, int], ...]


@dataclasses.dataclass(frozen=True)
class SquadFile:
  path: str
  contexts: list[str]
  questions: list[Question]

  def __len__(self) -> int:
    return len(self.questions)

  @property
  def has_unanswerable(self) -> bool:
    """Whether some question has no answer: a v2.0 file."""
    return any(not question.answers for question in self.questions)

  def gold_answers(self) -> dict[str, list[str]]:
    """{question id: answer texts} for `metrics.squad_scores`."""
    return {q.id: [text for text, _ in q.answers] for q in self.questions}


def _get(value, key: str, kind: type, where: str):
  """`value[key]`, which must be a `kind` (a bool is no int); else a `UserError` naming
  `where`."""
  if not isinstance(value, dict) or not isinstance(value.get(key), kind) or (
      isinstance(value.get(key), bool) and kind is not bool):
    raise UserError(f"{where} has no {key!r} ({kind.__name__})")
  return value[key]


def _answers(qa: dict, context: str, where: str, path: str, question_id: str) -> tuple:
  """A question's checked (text, start) answers; none for a v2.0 unanswerable question."""
  if qa.get("is_impossible") is True:
    return ()
  answers = []
  for k, answer in enumerate(_get(qa, "answers", list, where)):
    text = _get(answer, "text", str, f"{where}.answers[{k}]")
    start = _get(answer, "answer_start", int, f"{where}.answers[{k}]")
    if not text or start < 0 or context[start:start + len(text)] != text:
      raise UserError(f"{path}: question {question_id!r}: answer {text!r} is not at its "
                      f"answer_start {start} in the context "
                      f"({context[max(start, 0):][:len(text)]!r} is)")
    answers.append((text, start))
  return tuple(answers)


def read_squad(path: str, flag: str = "--train_file") -> SquadFile:
  """Reads a SQuAD v1.1 or v2.0 file; raises `UserError` for a file that is not JSON or lacks
  `data`, `paragraphs`, `context`, `qas`, a question's `id`, `question` or `answers`, for an
  answer whose `answer_start` does not point at its text, and for a question id used twice."""
  try:
    squad = json.loads(read_text(path, flag))
  except json.JSONDecodeError as error:
    raise UserError(f"{path} is not JSON: {error}") from None
  contexts, questions, ids = [], [], set()
  for i, article in enumerate(_get(squad, "data", list, path)):
    for j, paragraph in enumerate(_get(article, "paragraphs", list, f"{path}: data[{i}]")):
      where = f"{path}: data[{i}].paragraphs[{j}]"
      context = _get(paragraph, "context", str, where)
      for k, qa in enumerate(_get(paragraph, "qas", list, where)):
        question_id = _get(qa, "id", str, f"{where}.qas[{k}]")
        if question_id in ids:
          raise UserError(f"{path}: question id {question_id!r} is used twice")
        ids.add(question_id)
        question = _get(qa, "question", str, f"{where}.qas[{k}]")
        answers = _answers(qa, context, f"{where}.qas[{k}]", path, question_id)
        questions.append(Question(question_id, question, len(contexts), answers))
      contexts.append(context)
  if not questions:
    raise UserError(f"{path} has no questions")
  return SquadFile(path, contexts, questions)


def check_windows(*, seq_length: int, doc_stride: int, max_query_length: int) -> None:
  """Raises `UserError` unless every window has room for some context and the windows
  overlap: with a stride as long as the room they would not, and a token at a window's edge
  would never be read with context on both sides."""
  room = seq_length - max_query_length - 3
  if min(doc_stride, max_query_length) <= 0:
    raise UserError("--doc_stride and --max_query_length must be positive")
  if room <= 0:
    raise UserError(f"--seq_length {seq_length} leaves no room for the context after a "
                    f"question of --max_query_length {max_query_length} and 3 special tokens")
  if doc_stride >= room:
    raise UserError(f"--doc_stride {doc_stride} must be smaller than the room left for the "
                    f"context ({room} tokens: --seq_length {seq_length} - --max_query_length "
                    f"{max_query_length} - 3)")


@dataclasses.dataclass(frozen=True)
class ContextTokens:
  """A context's token ids and each token's character span in it, `[start, end)`."""

  ids: np.ndarray
  starts: np.ndarray
  ends: np.ndarray

  def span(self, first_char: int, end_char: int) -> tuple[int, int] | None:
    """(first, last) token overlapping the characters [first_char, end_char); None when no
    token does (an answer of only white space)."""
    first = int(np.searchsorted(self.ends, first_char, side="right"))
    last = int(np.searchsorted(self.starts, end_char, side="left")) - 1
    return (first, last) if first <= last else None


@dataclasses.dataclass(frozen=True)
class Window:
  """Where a window is: its question, its context tokens [start, start + length) and the
  position of its first context token in the sequence."""

  question: int
  start: int
  length: int
  offset: int


@dataclasses.dataclass(frozen=True)
class SquadFeatures:
  """Every window of every question as the encoder's input, with its label."""

  features: dict  # token_ids, segment_ids, padding_mask: int32 [windows, seq_length]
  positions: np.ndarray  # int32 [windows, 2]: the answer's first and last token, or 0 0
  windows: list[Window]
  contexts: list[ContextTokens]
  unreachable: int  # answerable questions whose answer no window holds whole


def _rows(ragged: tf.RaggedTensor) -> list[np.ndarray]:
  """[batch, (values)] -> a numpy array per row (one conversion, not one per row)."""
  values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
  return [values[start:end] for start, end in zip(splits[:-1], splits[1:])]


def tokenize_contexts(contexts: list[str], vocabulary: Vocabulary,
                      lower_case: bool) -> list[ContextTokens]:
  tokenizer = vocabulary.tokenizer(lower_case)
  tokens = []
  for first in range(0, len(contexts), _BATCH):
    ids, starts, ends = tokenize_with_offsets(
        tokenizer, tf.constant(contexts[first:first + _BATCH], tf.string))
    tokens.extend(map(ContextTokens, _rows(ids), _rows(starts), _rows(ends)))
  return tokens


def _tokenize(texts: list[str], vocabulary: Vocabulary, lower_case: bool) -> list[np.ndarray]:
  tokenizer = vocabulary.tokenizer(lower_case)
  return [row for first in range(0, len(texts), _BATCH)
          for row in _rows(tokenizer.tokenize(tf.constant(texts[first:first + _BATCH], tf.string)))]


def window_starts(num_tokens: int, room: int, doc_stride: int) -> list[tuple[int, int]]:
  """(start, length) of each window over `num_tokens` context tokens; one empty window for an
  empty context."""
  windows, start = [], 0
  while True:
    length = min(num_tokens - start, room)
    windows.append((start, length))
    if start + length >= num_tokens:
      return windows
    start += min(length, doc_stride)


def squad_features(squad: SquadFile, vocabulary: Vocabulary, *, lower_case: bool,
                   seq_length: int = SEQ_LENGTH, doc_stride: int = DOC_STRIDE,
                   max_query_length: int = MAX_QUERY_LENGTH) -> SquadFeatures:
  """The windows of every question (see the module's docstring); an answerable question none
  of whose windows holds its answer whole is counted, said once, and trained as no answer."""
  check_windows(seq_length=seq_length, doc_stride=doc_stride, max_query_length=max_query_length)
  contexts = tokenize_contexts(squad.contexts, vocabulary, lower_case)
  queries = _tokenize([q.text for q in squad.questions], vocabulary, lower_case)
  rows, positions, windows, unreachable = [], [], [], 0
  for index, (question, query) in enumerate(zip(squad.questions, queries)):
    query = query[:max_query_length]
    context = contexts[question.context]
    offset = len(query) + 2  # [CLS] query [SEP]
    answer = (context.span(question.answers[0][1],
                           question.answers[0][1] + len(question.answers[0][0]))
              if question.answers else None)
    reached = False
    for start, length in window_starts(len(context.ids), seq_length - offset - 1, doc_stride):
      rows.append([vocabulary.cls_id, *query, vocabulary.sep_id,
                   *context.ids[start:start + length], vocabulary.sep_id])
      windows.append(Window(index, start, length, offset))
      inside = answer is not None and start <= answer[0] and answer[1] < start + length
      reached |= inside
      positions.append([answer[0] - start + offset, answer[1] - start + offset] if inside
                       else [0, 0])
    unreachable += bool(question.answers) and not reached
  if unreachable:
    log.warning("%s: %d of %d answers are in no window whole (longer than a window, or of "
                "white space only): trained as no answer", squad.path, unreachable, len(squad))
  token_ids = np.zeros((len(rows), seq_length), np.int32)
  padding_mask = np.zeros_like(token_ids)
  segment_ids = np.zeros_like(token_ids)
  for row, (ids, window) in enumerate(zip(rows, windows)):
    token_ids[row, :len(ids)] = ids
    padding_mask[row, :len(ids)] = 1
    segment_ids[row, window.offset:len(ids)] = 1  # the context and its [SEP]
  return SquadFeatures({"token_ids": token_ids, "segment_ids": segment_ids,
                        "padding_mask": padding_mask},
                       np.array(positions, np.int32).reshape(-1, 2), windows, contexts,
                       unreachable)


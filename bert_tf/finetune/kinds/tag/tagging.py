"""Token tagging data: CoNLL-style files read and checked, the tag list, sentences as the
encoder's features with one label per word, and the way back from per-WordPiece predictions
to one tag per word (for the entity scores of `metrics.entity_scores` of this folder).

The files: one word and its tag a line, the tag in the last column, the columns separated by
tabs (then a column may hold spaces) or by spaces, so CoNLL-2003's four columns read as they
come; a blank line between sentences; `-DOCSTART-` lines skipped. Tags are BIO or IOB: `O`,
`B-TYPE`, `I-TYPE`. Every mistake is a `UserError` naming the file and line, before anything
trains.

The features: each word is tokenized on its own by the pre-training tokenizer (so a word is
never merged with its neighbour, and "U.S." may become several pieces) and labelled on its
first WordPiece; its other pieces, `[CLS]`, `[SEP]` and the padding carry `head.IGNORED_LABEL`,
which the tagging loss skips (`head.tagging_loss`), as transformers' -100. A sentence longer
than the sequence is cut: a word whose first piece is past the sequence's end has no label in
the features and is predicted `O`, as is a word the tokenizer makes nothing of (only control or
format characters).
"""

import dataclasses
import re

import numpy as np
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.finetune.kinds.tag.head import IGNORED_LABEL
from bert_tf.finetune.task_files import read_text

OUTSIDE = "O"
_TAG = re.compile(r"O|[BI]-\S+")
_DOCUMENT_START = "-DOCSTART-"


@dataclasses.dataclass(frozen=True)
class Sentences:
  """A tagging file's sentences: their words and their tags, one list each per sentence."""

  path: str
  words: list[list[str]]
  tags: list[list[str]]

  def __len__(self) -> int:
    return len(self.words)


def line_fields(line: str) -> list[str]:
  """A line's columns: split at tabs when it has any, else at runs of spaces."""
  if "\t" in line:
    return [field.strip() for field in line.split("\t") if field.strip()]
  return line.split()


def is_tag(text: str) -> bool:
  """Whether `text` is a tag in BIO form: `O`, `B-TYPE` or `I-TYPE`."""
  return bool(_TAG.fullmatch(text))


def read_sentences(path: str, flag: str = "--train_file") -> Sentences:
  """Reads a CoNLL-style file; raises `UserError` for a missing or empty file, a line without
  a tag or a tag that is not `O`, `B-TYPE` or `I-TYPE`."""
  words, tags, sentence_words, sentence_tags = [], [], [], []
  for number, line in enumerate(read_text(path, flag).splitlines(), start=1):
    fields = line_fields(line)
    if fields and fields[0] == _DOCUMENT_START:
      continue
    if not fields:
      if sentence_words:
        words.append(sentence_words)
        tags.append(sentence_tags)
      sentence_words, sentence_tags = [], []
      continue
    if len(fields) < 2:
      raise UserError(f"{path}:{number}: {line.strip()!r} has no tag (a line is a word and "
                      "its tag, the tag last)")
    if not is_tag(fields[-1]):
      raise UserError(f"{path}:{number}: tag {fields[-1]!r} is not in BIO form (O, B-TYPE or "
                      "I-TYPE)")
    sentence_words.append(fields[0])
    sentence_tags.append(fields[-1])
  if sentence_words:
    words.append(sentence_words)
    tags.append(sentence_tags)
  if not words:
    raise UserError(f"{path} has no tagged sentence")
  return Sentences(path, words, tags)


def tag_list(train: Sentences, dev: Sentences) -> list[str]:
  """The training file's sorted distinct tags; raises `UserError` when it has a single tag or
  the dev file has a tag the training file has not."""
  tags = sorted({tag for sentence in train.tags for tag in sentence})
  if len(tags) < 2:
    raise UserError(f"{train.path} has the single tag {tags[0]!r}: tagging needs two tags or "
                    "more")
  unknown = sorted({tag for sentence in dev.tags for tag in sentence} - set(tags))
  if unknown:
    raise UserError(f"{dev.path} has tags the training file has not: "
                    f"{', '.join(map(repr, unknown[:5]))}")
  return tags


def read_tagging_task(train_file: str, dev_file: str) -> tuple[Sentences, Sentences, list[str]]:
  """(train, dev, tags) of a tagging task, every line checked."""
  train = read_sentences(train_file, "--train_file")
  dev = read_sentences(dev_file, "--dev_file")
  return train, dev, tag_list(train, dev)


@dataclasses.dataclass(frozen=True)
class TaggingFeatures:
  """Sentences as the encoder's input, with their labels and where each word is."""

  features: dict  # token_ids, segment_ids, padding_mask: int32 [sentences, seq_length]
  labels: np.ndarray  # int32 [sentences, seq_length]: tag ids on first pieces, else IGNORED_LABEL
  first_pieces: list[np.ndarray]  # per sentence, each word's first piece's position, or -1
  words_cut: int  # words past the sequence's end, in all sentences


def _word_pieces(vocabulary: Vocabulary, lower_case: bool, words: list[str]) -> list:
  """Each word's WordPiece ids, tokenized one word at a time."""
  pieces = vocabulary.tokenizer(lower_case).tokenize(tf.constant(words, tf.string))
  ids, splits = pieces.flat_values.numpy(), pieces.row_splits.numpy()
  return [ids[start:end] for start, end in zip(splits[:-1], splits[1:])]


def tagging_features(sentences: Sentences, tags: list[str], vocabulary: Vocabulary, *,
                     lower_case: bool, seq_length: int) -> TaggingFeatures:
  """`[CLS] pieces [SEP]` of each sentence padded to `seq_length`, each word labelled on its
  first piece (see the module's docstring)."""
  tag_ids = {tag: i for i, tag in enumerate(tags)}
  pieces = iter(_word_pieces(vocabulary, lower_case,
                             [word for sentence in sentences.words for word in sentence]))
  token_ids = np.zeros((len(sentences), seq_length), np.int32)  # [PAD] is id 0
  padding_mask = np.zeros_like(token_ids)
  labels = np.full_like(token_ids, IGNORED_LABEL)
  first_pieces, words_cut = [], 0
  for row, sentence_tags in enumerate(sentences.tags):
    sequence, positions = [vocabulary.cls_id], []
    for tag in sentence_tags:
      word = next(pieces)
      room = seq_length - 1 - len(sequence)  # before the [SEP]
      if len(word) and room > 0:
        labels[row, len(sequence)] = tag_ids[tag]
        positions.append(len(sequence))
        sequence.extend(word[:room])
      else:
        positions.append(-1)
        words_cut += len(word) > 0
    sequence.append(vocabulary.sep_id)
    token_ids[row, :len(sequence)] = sequence
    padding_mask[row, :len(sequence)] = 1
    first_pieces.append(np.array(positions, np.int64))
  return TaggingFeatures(
      {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
       "padding_mask": padding_mask}, labels, first_pieces, words_cut)


def word_tags(predicted: np.ndarray, first_pieces: list[np.ndarray],
              tags: list[str]) -> list[list[str]]:
  """predicted: tag ids [sentences, seq_length] (the argmax of the logits) -> each word's tag,
  read on its first piece; `O` for a word without a piece."""
  return [[tags[predicted[row, position]] if position >= 0 else OUTSIDE
           for position in positions] for row, positions in enumerate(first_pieces)]

"""Holding out a share of a corpus's documents for evaluation, by a hash of each document.

A document is held out when a fingerprint of its text falls below `fraction`: the same choice
whatever file, shard, epoch or window it is read in, and in every process, so a held-out
document never reaches the training stream. The share realised is `fraction` up to chance
(each document is a coin toss).
"""

import dataclasses

import tensorflow as tf

from bert_tf.data import corpus
from bert_tf.errors import UserError

_BUCKETS = 1 << 30


def held_out_mask(texts: tf.Tensor, fraction: float) -> tf.Tensor:
  """texts: string [...], each a document's sentences joined by newlines. Bool [...]."""
  return tf.strings.to_hash_bucket_fast(texts, _BUCKETS) < int(round(fraction * _BUCKETS))


@dataclasses.dataclass(frozen=True)
class Holdout:
  """Keeps the held-out documents (`held_out=True`, the evaluation stream) or the others."""

  fraction: float
  held_out: bool

  def is_held_out(self, document: tf.Tensor) -> tf.Tensor:
    """document: string [sentences]. A scalar bool."""
    return held_out_mask(tf.strings.reduce_join(document, separator="\n"), self.fraction)

  def __call__(self, documents: tf.data.Dataset) -> tf.data.Dataset:
    """Filters a dataset of documents."""
    if self.held_out:
      return documents.filter(self.is_held_out)
    return documents.filter(lambda document: tf.logical_not(self.is_held_out(document)))


def check_split(files: list[str], input_format: str, fraction: float, needed: int) -> None:
  """Fails clearly unless both sides of the split get at least `needed` documents (NSP needs
  two); a stream with none would wait for one forever. Reads files only until both have."""
  held_out = kept = 0
  for path in files:
    documents = corpus.documents_from_text(tf.io.read_file(path), input_format)
    mask = held_out_mask(tf.strings.reduce_join(documents, axis=1, separator="\n"), fraction)
    held_out += int(tf.reduce_sum(tf.cast(mask, tf.int32)))
    kept += int(tf.reduce_sum(tf.cast(~mask, tf.int32)))
    if min(held_out, kept) >= needed:
      return
  raise UserError(
      f"--eval_fraction={fraction} holds out {held_out} of the corpus's {held_out + kept} "
      f"documents and trains on {kept}: each side needs at least {needed}")

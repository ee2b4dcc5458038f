"""A bounded sample of a corpus, in pieces spread evenly over it, read as the pipeline reads
its sentences: what the vocabulary learner learns from and what a vocabulary's fit to the
corpus is measured on (`vocabulary_fit`), so that their time and memory stay those of the
sample whatever the corpus's size."""

import tensorflow as tf

from bert_tf.data import corpus, pieces
from bert_tf.data.data_settings import PIECE_BYTES


def sample_ranges(file_patterns, max_bytes: int, data_dir: str = "data"
                  ) -> tuple[list[pieces.FileRange], int]:
  """(the file ranges of the sample, the number of corpus files): pieces of at most 1/16 of
  `max_bytes`, so that the sample is spread over at least 16 places; the whole corpus when it
  is no larger."""
  paths = corpus.list_files(file_patterns, data_dir)
  planned = pieces.plan_pieces(paths, piece_bytes=min(PIECE_BYTES, max_bytes // 16))
  return [r for piece in pieces.sample_pieces(planned, max_bytes) for r in piece], len(paths)


def sentences(ranges: list[pieces.FileRange], input_format: str,
              batch_size: int = 1024) -> tf.data.Dataset:
  """Batches of the sentences in `ranges`, string [batch]."""
  return corpus.read_ranges(ranges, input_format).unbatch().batch(batch_size)

"""Text pairs as the encoder reads them when fine-tuning and serving: the same ids as the
verification's plain-Python `pair_ids` for every mix of lengths, empty texts and rows cut to
nothing included."""

import itertools

import numpy as np
import tensorflow as tf

from bert_tf.data.text_pairs import combined_pair, row_prefixes
from bert_tf.export.verification import pair_ids


class Ids:  # the two ids `pair_ids` reads of a vocabulary
  cls_id, sep_id = 101, 102


def test_row_prefixes_keep_the_first_items_of_each_row():
  rows = tf.ragged.constant([[1, 2, 3], [], [4, 5], [6]], tf.int32)
  kept = row_prefixes(rows, tf.constant([2, 0, 2, 0], tf.int64))
  assert kept.to_list() == [[1, 2], [], [4, 5], []]


def test_every_mix_of_lengths_gives_the_plain_python_pair():
  rng = np.random.default_rng(0)
  lengths = [0, 1, 3, 6, 9, 14]
  rows_a, rows_b = [], []
  for length_a, length_b in itertools.product(lengths, lengths):
    rows_a.append(rng.integers(1000, 2000, length_a).tolist())
    rows_b.append(rng.integers(1000, 2000, length_b).tolist())
  for seq_length in (5, 8, 16, 40):
    token_ids, segment_ids = combined_pair(
        tf.ragged.constant(rows_a, tf.int64), tf.ragged.constant(rows_b, tf.int64),
        seq_length=seq_length, cls_id=Ids.cls_id, sep_id=Ids.sep_id)
    expected = [pair_ids(Ids, a, b, seq_length) for a, b in zip(rows_a, rows_b)]
    assert token_ids.to_list() == [ids for ids, _ in expected]
    assert segment_ids.to_list() == [segments for _, segments in expected]

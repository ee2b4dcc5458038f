"""Texts as the encoder reads them when fine-tuning and serving: the same ids as the
verification's plain-Python `pair_ids` for every mix of lengths and sequence lengths, empty
texts, single texts and segments cut to nothing included; whole segments joined as
tensorflow-text's `combine_segments` joins them."""

import itertools

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.data.text_pairs import combined_pair, combined_segments
from bert_tf.serving.verification import pair_ids


class Ids:  # the two ids `pair_ids` reads of a vocabulary
  cls_id, sep_id = 101, 102


def rows(lengths, rng):
  return [rng.integers(1000, 2000, length).tolist() for length in lengths]


def test_every_mix_of_lengths_gives_the_plain_python_pair():
  rng = np.random.default_rng(0)
  lengths = list(itertools.product([0, 1, 3, 6, 9, 14], repeat=2))
  rows_a, rows_b = rows([a for a, _ in lengths], rng), rows([b for _, b in lengths], rng)
  for seq_length, dtype in itertools.product((3, 4, 5, 8, 16, 40), (tf.int32, tf.int64)):
    token_ids, segment_ids = combined_pair(
        tf.ragged.constant(rows_a, dtype), tf.ragged.constant(rows_b, dtype),
        seq_length=seq_length, cls_id=Ids.cls_id, sep_id=Ids.sep_id)
    expected = [pair_ids(Ids, a, b, seq_length) for a, b in zip(rows_a, rows_b)]
    assert token_ids.dtype == segment_ids.dtype == dtype
    assert token_ids.to_list() == [ids for ids, _ in expected], seq_length
    assert segment_ids.to_list() == [segments for _, segments in expected], seq_length


def test_a_single_text_is_a_pair_with_an_empty_second():
  rows_a = rows([0, 2, 7, 20], np.random.default_rng(1))
  token_ids, segment_ids = combined_pair(tf.ragged.constant(rows_a, tf.int64), seq_length=8,
                                         cls_id=Ids.cls_id, sep_id=Ids.sep_id)
  assert token_ids.to_list() == [[101, 102], [101, *rows_a[1], 102],
                                 [101, *rows_a[2][:6], 102], [101, *rows_a[3][:6], 102]]
  assert segment_ids.to_list() == [[0] * len(ids) for ids in token_ids.to_list()]


def test_whole_segments_join_as_tensorflow_texts_combine_segments():
  rng = np.random.default_rng(2)
  lengths = list(itertools.product([0, 1, 4, 9], repeat=2))
  for dtype in (tf.int32, tf.int64):
    segment_a = tf.ragged.constant(rows([a for a, _ in lengths], rng), dtype)
    segment_b = tf.ragged.constant(rows([b for _, b in lengths], rng), dtype)
    for segments in ([segment_a], [segment_a, segment_b]):
      ours = combined_segments(*segments, cls_id=Ids.cls_id, sep_id=Ids.sep_id)
      theirs = tf_text.combine_segments(segments, Ids.cls_id, Ids.sep_id)
      for mine, reference in zip(ours, theirs):
        assert mine.dtype == reference.dtype
        assert mine.to_list() == reference.to_list()

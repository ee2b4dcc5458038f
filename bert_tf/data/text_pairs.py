"""Token rows joined as the encoder reads them: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`.

`combined_segments` joins them as they are, as tensorflow-text's `combine_segments` does (the
pre-training pipeline, whose pairs are already cut to fit; SQuAD's windows).
`combined_pair` first cuts the longer segment, as pre-training cuts its pairs
(`pairing.trimmed_lengths`), and makes an empty b none, as original BERT's run_classifier.py
makes a missing text_b (fine-tuning's texts, the SavedModels' signatures).

Both are written with flat-value ops rather than with `combine_segments` and ragged
comparisons, which broadcast through dynamic ragged shapes: their checks made each function
that joins segments (a dataset's map, a fine-tuning dataset, each signature of a SavedModel)
take about half a second to a second and a half longer to trace. The ids are the same.
"""

import tensorflow as tf

from bert_tf.data.pairing import trimmed_lengths

# A row is five pieces: [CLS], a, [SEP], b, [SEP]; their segment ids.
_PIECE_SEGMENTS = (0, 0, 0, 1, 1)


def combined_segments(segment_a: tf.RaggedTensor, segment_b: tf.RaggedTensor | None = None, *,
                      cls_id: int, sep_id: int) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
  """(token_ids, segment_ids) [batch, (tokens)] of whole token rows ([batch, (tokens)]): every
  b, even an empty one, ends with [SEP]."""
  with_b = segment_b is not None
  segment_b = segment_b if with_b else segment_a[:, :0]
  return _joined(segment_a, segment_b, segment_a.row_lengths(), segment_b.row_lengths(),
                 tf.fill(tf.shape(segment_a.row_lengths()), tf.constant(int(with_b), tf.int64)),
                 cls_id, sep_id)


def combined_pair(segment_a: tf.RaggedTensor, segment_b: tf.RaggedTensor | None = None, *,
                  seq_length: int, cls_id: int, sep_id: int
                  ) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
  """(token_ids, segment_ids) [batch, (tokens)], each row at most `seq_length` long, of token
  rows ([batch, (tokens)]) cut to fit; an empty b (or no b) adds nothing."""
  segment_b = segment_a[:, :0] if segment_b is None else segment_b
  len_a, len_b = segment_a.row_lengths(), segment_b.row_lengths()
  has_b = tf.cast(len_b > 0, tf.int64)
  fit_a, fit_b = trimmed_lengths(len_a, len_b, seq_length - 2 - has_b)
  return _joined(segment_a, segment_b, fit_a, fit_b, has_b, cls_id, sep_id)


def _joined(segment_a, segment_b, fit_a, fit_b, b_ends, cls_id, sep_id):
  """`[CLS] a[:fit_a] [SEP] b[:fit_b]`, then [SEP] where `b_ends` is 1; with segment ids."""
  size_a, size_b = (tf.size(s.values, tf.int64) for s in (segment_a, segment_b))
  # The pieces' items, all in one pool: a's, b's, then [CLS] and [SEP].
  pool = tf.concat([segment_a.values, segment_b.values,
                    tf.constant([cls_id, sep_id], segment_a.dtype)], axis=0)
  cls = tf.fill(tf.shape(fit_a), size_a + size_b)
  starts = tf.stack([cls, segment_a.row_starts(), cls + 1, size_a + segment_b.row_starts(),
                     cls + 1], axis=1)
  one = tf.ones_like(fit_a)
  lengths = tf.stack([one, fit_a, one, fit_b, b_ends], axis=1)  # [batch, 5]
  items = tf.ragged.range(tf.reshape(starts, [-1]), tf.reshape(starts + lengths, [-1]))
  token_ids = tf.RaggedTensor.from_row_lengths(tf.gather(pool, items.flat_values),
                                               tf.reduce_sum(lengths, axis=1))
  segments = tf.tile(tf.constant(_PIECE_SEGMENTS, segment_a.dtype), tf.shape(fit_a)[:1])
  return token_ids, token_ids.with_flat_values(tf.repeat(segments, tf.reshape(lengths, [-1])))

"""A text pair as the encoder reads it when fine-tuning and serving: `[CLS] a [SEP] b [SEP]`, or
`[CLS] a [SEP]` when b is empty (as original BERT's run_classifier.py has a missing text_b), the
longer segment cut first as pre-training cuts its pairs (`pairing.trimmed_lengths`).

Rows are cut with flat-value ops: a ragged tensor compared with a dense column
(`ragged < lengths[:, None]`) broadcasts through a dynamic ragged shape, whose checks added a
second and a half to the tracing of every function that made a pair.
"""

import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.data.pairing import trimmed_lengths


def row_prefixes(rows: tf.RaggedTensor, lengths: tf.Tensor) -> tf.RaggedTensor:
  """The first `lengths[i]` items of each row `i` of `rows` ([batch, (items)]); each length at
  most its row's."""
  starts = rows.row_starts()
  return tf.gather(rows.values, tf.ragged.range(starts, starts + tf.cast(lengths, starts.dtype)))


def combined_pair(segment_a: tf.RaggedTensor, segment_b: tf.RaggedTensor, *, seq_length: int,
                  cls_id: int, sep_id: int) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
  """(token_ids, segment_ids), each [batch, (tokens)] and at most `seq_length` long, of the
  pairs of token rows `segment_a` and `segment_b` (a row of b may be empty)."""
  has_b = segment_b.row_lengths() > 0
  budget = seq_length - 2 - tf.cast(has_b, tf.int64)
  fit_a, fit_b = trimmed_lengths(segment_a.row_lengths(), segment_b.row_lengths(), budget)
  token_ids, segment_ids = tf_text.combine_segments(
      [row_prefixes(segment_a, fit_a), row_prefixes(segment_b, fit_b)], cls_id, sep_id)
  # combine_segments ends an empty b with a [SEP] too, the row's last item: not kept.
  kept = token_ids.row_lengths() - tf.cast(~has_b, tf.int64)
  return row_prefixes(token_ids, kept), row_prefixes(segment_ids, kept)

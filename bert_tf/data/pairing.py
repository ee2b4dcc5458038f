"""Sentence pairs for next sentence prediction as original BERT makes them (docs/design.md#pairing).

`create_pairs` runs the original's per-document loop (`create_instances_from_document`) inside
the graph over a window of documents. Two deliberate improvements over the original:
- a NotNext segment B always comes from another document of the window, and
- the realised IsNext share is 50%: when IsNext is impossible (the chunk is the document's last
  single sentence), the forced NotNext is paid back by making the next free choice IsNext.
  A one-sentence chunk that is not at the end of its document takes the next sentence too, so
  that it can be IsNext.
"""

import tensorflow as tf

IS_NEXT, NOT_NEXT = 1, 0


def trimmed_lengths(len_a, len_b, max_num_tokens):
  """Lengths after original BERT's `truncate_seq_pair`, in closed form.

  The original removes one token at a time from the longer segment (from B on a tie) until
  the pair fits; this computes where that process ends without the loop.
  """
  half_down = max_num_tokens // 2
  half_up = max_num_tokens - half_down
  a_longer = len_a >= len_b
  fit_b = tf.where(a_longer, tf.minimum(len_b, half_down), 0)
  fit_a = tf.where(a_longer, tf.minimum(len_a, max_num_tokens - fit_b),
                   tf.minimum(len_a, half_up))
  fit_b = tf.where(a_longer, fit_b, tf.minimum(len_b, max_num_tokens - fit_a))
  return fit_a, fit_b


class Pairs(tf.experimental.ExtensionType):
  """Sentence pairs of one window: token ranges into the window's flat token list."""

  a_start: tf.Tensor  # [instances] int64
  a_end: tf.Tensor
  b_start: tf.Tensor  # b_start == b_end when there is no segment B (MLM-only)
  b_end: tf.Tensor
  is_next: tf.Tensor  # [instances] int32, 1 IsNext, 0 NotNext
  document_a: tf.Tensor  # [instances] int64, window-local document of A
  document_b: tf.Tensor
  is_short: tf.Tensor  # [instances] bool, a short target length was drawn


def _first_reaching(token_splits, offsets):
  """For each token offset, the first sentence boundary at or after it."""
  return tf.searchsorted(token_splits, offsets, side="left", out_type=tf.int64)


def _instance_loop(sentence_splits, token_splits, seed, *, max_num_tokens, short_seq_prob,
                   nsp):
  """The sequential part: chunks, split points, IsNext decisions. Returns [instances, 9].

  Each iteration makes the next instance of every document of the window at once, so the loop
  runs as many times as the longest document has instances, not once per instance.
  """
  num_documents = tf.shape(sentence_splits, out_type=tf.int64)[0] - 1
  document = tf.range(num_documents)
  document_start, document_end = sentence_splits[:-1], sentence_splits[1:]
  can_be_not_next = num_documents > 1

  def body(step, start, owed, rows):
    u = tf.random.stateless_uniform([6, num_documents],
                                    tf.random.experimental.stateless_fold_in(seed, step))
    active = start < document_end

    is_short = u[0] < short_seq_prob
    short_target = 2 + tf.cast(u[1] * tf.cast(max_num_tokens - 1, tf.float32), tf.int64)
    target = tf.where(is_short, tf.minimum(short_target, max_num_tokens), max_num_tokens)

    # Whole sentences until the chunk reaches the target or the document ends.
    start_in_bounds = tf.minimum(start, document_end - 1)
    end = _first_reaching(token_splits, tf.gather(token_splits, start_in_bounds) + target)
    end = tf.clip_by_value(end, start_in_bounds + 1, document_end)
    if nsp:
      end = tf.where((end - start_in_bounds == 1) & (end < document_end), end + 1, end)
    size = end - start_in_bounds

    if nsp:
      a_size = 1 + tf.minimum(
          tf.cast(u[2] * tf.cast(tf.maximum(size - 1, 1), tf.float32), tf.int64),
          tf.maximum(size - 2, 0))
      a_size = tf.where(size > 1, a_size, 1)
    else:
      a_size = size
    a_end = start_in_bounds + a_size

    # IsNext with chance 1/2, except that a forced NotNext (one-sentence chunk at a
    # document's end) makes the next free choice IsNext. (Measured: this keeps the share at
    # 1/2 on real corpora; a NotNext also puts sentences back, which makes more instances.)
    can_be_next = size > 1
    forced = active & ~can_be_next & can_be_not_next
    free = active & can_be_next & can_be_not_next
    owed += tf.reduce_sum(tf.cast(forced, tf.int64))  # other documents can pay at once
    paid = free & (tf.cumsum(tf.cast(free, tf.int64)) <= owed)
    is_next = tf.where(can_be_not_next, can_be_next & (paid | (u[3] < 0.5)), True)
    owed -= tf.reduce_sum(tf.cast(paid, tf.int64))

    # NotNext: sentences from a random other document, from a random sentence on, filling
    # what A left of the target.
    other = tf.cast(u[4] * tf.cast(tf.maximum(num_documents - 1, 1), tf.float32), tf.int64)
    other = tf.minimum(other, tf.maximum(num_documents - 2, 0))
    other = tf.minimum(tf.where(other >= document, other + 1, other), num_documents - 1)
    other_start, other_end = tf.gather(document_start, other), tf.gather(document_end, other)
    other_first = other_start + tf.minimum(
        tf.cast(u[5] * tf.cast(other_end - other_start, tf.float32), tf.int64),
        other_end - other_start - 1)
    b_target = target - (tf.gather(token_splits, a_end)
                         - tf.gather(token_splits, start_in_bounds))
    other_last = _first_reaching(token_splits, tf.gather(token_splits, other_first) + b_target)
    other_last = tf.clip_by_value(other_last, other_first + 1, other_end)

    if nsp:
      b_first = tf.where(is_next, a_end, other_first)
      b_last = tf.where(is_next, end, other_last)
      document_b = tf.where(is_next, document, other)
      # An instance without any segment B (one-sentence document alone in its window) is
      # dropped rather than emitted without a pair.
      valid = active & (b_last > b_first)
      # NotNext puts the chunk's unused sentences back for the next instance.
      next_start = tf.where(is_next, end, a_end)
    else:
      b_first = b_last = a_end
      document_b = document
      valid = active
      next_start = end

    row = tf.stack([
        tf.gather(token_splits, start_in_bounds), tf.gather(token_splits, a_end),
        tf.gather(token_splits, b_first), tf.gather(token_splits, b_last),
        tf.cast(is_next, tf.int64), document, document_b, tf.cast(is_short, tf.int64),
        tf.cast(valid, tf.int64)], axis=1)  # [documents, 9]
    start = tf.where(active, next_start, start)
    return step + 1, start, owed, rows.write(tf.cast(step, tf.int32), row)

  rows = tf.TensorArray(tf.int64, size=0, dynamic_size=True, element_shape=[None, 9],
                        infer_shape=False)
  _, _, _, rows = tf.while_loop(
      lambda step, start, owed, rows: tf.reduce_any(start < document_end),
      body,
      (tf.constant(0, tf.int64), document_start, tf.constant(0, tf.int64), rows))
  return tf.cond(rows.size() > 0, rows.concat, lambda: tf.zeros([0, 9], tf.int64))


def create_pairs(sentence_tokens: tf.RaggedTensor, seed: tf.Tensor, *, seq_length: int,
                 short_seq_prob: float, nsp: bool = True) -> Pairs:
  """Builds the instances of one window of documents.

  Args:
    sentence_tokens: int32 [documents, (sentences), (tokens)] of the window.
    seed: [2] int stateless seed for this window.
    seq_length: full sequence length; segments get `seq_length - 3` tokens together.
    short_seq_prob: chance of a target length drawn uniformly from [2, seq_length - 3].
    nsp: False for MLM-only: each instance is one chunk, no segment B.
  """
  # Sentences without tokens (only control characters, say) and documents without sentences
  # carry nothing to pair.
  sentence_tokens = tf.ragged.boolean_mask(
      sentence_tokens, sentence_tokens.row_lengths(axis=2) > 0)
  sentence_tokens = tf.ragged.boolean_mask(sentence_tokens, sentence_tokens.row_lengths() > 0)
  sentence_splits = sentence_tokens.row_splits  # [documents + 1]
  token_splits = sentence_tokens.values.row_splits  # [sentences + 1]
  max_num_tokens = seq_length - (3 if nsp else 2)

  loop_seed, trim_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
  rows = _instance_loop(sentence_splits, token_splits, loop_seed,
                        max_num_tokens=tf.constant(max_num_tokens, tf.int64),
                        short_seq_prob=short_seq_prob, nsp=nsp)
  rows = tf.boolean_mask(rows, rows[:, 8] > 0)
  a_start, a_end, b_start, b_end = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]

  # truncate_seq_pair: each removed token comes from the front or the back with equal chance.
  fit_a, fit_b = trimmed_lengths(a_end - a_start, b_end - b_start, max_num_tokens)
  excess = tf.cast(tf.stack([a_end - a_start - fit_a, b_end - b_start - fit_b], axis=1),
                   tf.float32)
  from_front = tf.cast(tf.random.stateless_binomial(
      tf.shape(excess), trim_seed, counts=excess, probs=0.5, output_dtype=tf.float32), tf.int64)
  a_start += from_front[:, 0]
  b_start += from_front[:, 1]
  return Pairs(
      a_start=a_start, a_end=a_start + fit_a, b_start=b_start, b_end=b_start + fit_b,
      is_next=tf.cast(rows[:, 4], tf.int32), document_a=rows[:, 5], document_b=rows[:, 6],
      is_short=rows[:, 7] > 0)


def gather_segments(flat_tokens: tf.Tensor, pairs: Pairs):
  """The token ids of each pair's segments: two int32 [instances, (tokens)] tensors."""
  segment_a = tf.gather(flat_tokens, tf.ragged.range(pairs.a_start, pairs.a_end))
  segment_b = tf.gather(flat_tokens, tf.ragged.range(pairs.b_start, pairs.b_end))
  return segment_a, segment_b

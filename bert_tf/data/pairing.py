"""Sentence pairs for next sentence prediction as original BERT makes them (docs/design.md#pairing).

`create_pairs` runs the original's per-document loop (`create_instances_from_document`) inside
the graph over a window of documents. Two deliberate improvements over the original:
- a NotNext segment B always comes from another document of the window, and
- the realised IsNext share is 50%, on corpora of short documents too. A one-sentence chunk
  that is not at the end of its document takes the next sentence too, so that it can be
  IsNext. Where IsNext is impossible (the chunk is the document's last single sentence), the
  choice that left that sentence alone has counted its forced NotNext (`_choose_is_next`); a
  one-sentence document's NotNext is paid back by making the next free choice IsNext.
"""

from typing import NamedTuple

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


class _Window(NamedTuple):
  """A window's sentences as offsets: what the instance loop reads."""

  token_splits: tf.Tensor  # [sentences + 1] int64, where each sentence's tokens start
  document_start: tf.Tensor  # [documents] int64, each document's first sentence
  document_end: tf.Tensor  # [documents] int64, one past its last sentence
  last_sentence: tf.Tensor  # [documents] int64, its last sentence
  document: tf.Tensor  # [documents] int64, 0, 1, 2, ...

  @property
  def num_documents(self):
    return tf.size(self.document, out_type=tf.int64)


class _Draws(NamedTuple):
  """The uniform [0, 1) draws of one step of the instance loop, each [documents] float32."""

  is_short: tf.Tensor  # below short_seq_prob: a short target length
  short_target: tf.Tensor  # that length, uniform in [2, max_num_tokens]
  a_size: tf.Tensor  # how many of the chunk's sentences go to A
  is_next: tf.Tensor  # below 1/2 (or 2/3): IsNext, when the choice is free
  other_document: tf.Tensor  # NotNext: the other document B comes from
  other_sentence: tf.Tensor  # NotNext: its sentence B starts at


class _Chunk(NamedTuple):
  """One step's chunk of each document: whole sentences, A their first `a_end - start`."""

  start: tf.Tensor  # [documents] int64 sentence index, kept inside the document
  end: tf.Tensor  # one past the chunk's last sentence
  a_end: tf.Tensor  # one past A's last sentence
  target: tf.Tensor  # [documents] int64, the target length in tokens
  is_short: tf.Tensor  # [documents] bool, the target is a short one


class _Instance(NamedTuple):
  """What one step makes for each document: token offsets into the window's flat token list,
  and how the pair was made. Also the loop's output, one TensorArray a field."""

  a_start: tf.Tensor  # int64
  a_end: tf.Tensor
  b_start: tf.Tensor  # == b_end when there is no segment B (MLM-only)
  b_end: tf.Tensor
  is_next: tf.Tensor  # bool
  document_a: tf.Tensor  # int64, window-local
  document_b: tf.Tensor
  is_short: tf.Tensor  # bool
  valid: tf.Tensor  # bool, False for a document done already or a pair without B


def _first_reaching(token_splits, offsets):
  """For each token offset, the first sentence boundary at or after it."""
  return tf.searchsorted(token_splits, offsets, side="left", out_type=tf.int64)


def _draws(seed, step, num_documents) -> _Draws:
  """The step's draws, all from one stateless op keyed on (seed, step)."""
  uniform = tf.random.stateless_uniform(
      [len(_Draws.__annotations__), num_documents],
      tf.random.experimental.stateless_fold_in(seed, step))
  return _Draws(*tf.unstack(uniform))


def _chunk(window: _Window, start, draws: _Draws, *, max_num_tokens, short_seq_prob,
           nsp) -> _Chunk:
  """Whole sentences from `start` until the chunk reaches its target length or the document
  ends, and where A ends in it."""
  is_short = draws.is_short < short_seq_prob
  short_target = 2 + tf.cast(draws.short_target * tf.cast(max_num_tokens - 1, tf.float32),
                             tf.int64)
  target = tf.where(is_short, tf.minimum(short_target, max_num_tokens), max_num_tokens)

  start = tf.minimum(start, window.last_sentence)
  token_splits, document_end = window.token_splits, window.document_end
  end = _first_reaching(token_splits, tf.gather(token_splits, start) + target)
  end = tf.clip_by_value(end, start + 1, document_end)
  if not nsp:
    return _Chunk(start=start, end=end, a_end=end, target=target, is_short=is_short)
  # A one-sentence chunk that is not at its document's end takes the next sentence too.
  end = tf.where((end - start == 1) & (end < document_end), end + 1, end)
  size = end - start
  a_size = 1 + tf.minimum(
      tf.cast(draws.a_size * tf.cast(tf.maximum(size - 1, 1), tf.float32), tf.int64),
      tf.maximum(size - 2, 0))
  a_size = tf.where(size > 1, a_size, 1)
  return _Chunk(start=start, end=end, a_end=start + a_size, target=target, is_short=is_short)


def _choose_is_next(window: _Window, chunk: _Chunk, active, owed, draw):
  """The IsNext decisions of one step, made so that IsNext and NotNext are equally many in
  expectation, counting the forced NotNext (IsNext impossible: a one-sentence chunk at its
  document's end) that a decision leaves behind. Returns (is_next [documents] bool, what is
  still owed).

  A choice that would leave the document's last sentence alone makes one more NotNext:
  - if NotNext would (A ends one sentence before the document, so the put-back is that
    sentence), the choice is IsNext with chance 2/3, since NotNext makes two: 2/3 IsNext
    against 2 * 1/3 NotNext;
  - if IsNext would (the chunk ends one sentence before the document), it is IsNext, which
    with its forced NotNext is one of each.
  Any other choice is IsNext with chance 1/2; what it puts back is balanced in its turn. So
  every document of two or more sentences is balanced whatever its length. What one-sentence
  documents owe (`_owed_at_start`) is paid by the window's first free choices, which are made
  IsNext.
  """
  can_be_next = chunk.end - chunk.start > 1
  lone_after_next = chunk.end == window.last_sentence
  free = active & can_be_next & ~lone_after_next
  paid = free & (tf.cumsum(tf.cast(free, tf.int64)) <= owed)
  chance = tf.where(chunk.a_end == window.last_sentence, 2 / 3, 1 / 2)
  is_next = can_be_next & (paid | lone_after_next | (draw < chance))
  return is_next, owed - tf.reduce_sum(tf.cast(paid, tf.int64))


def _owed_at_start(window: _Window):
  """The NotNexts of the window's one-sentence documents (forced, at its first step), for its
  free choices to pay back; none in a window of one document, where every pair is IsNext."""
  one_sentence = tf.reduce_sum(tf.cast(window.last_sentence == window.document_start, tf.int64))
  return tf.where(window.num_documents > 1, one_sentence, 0)


def _not_next_b(window: _Window, chunk: _Chunk, draws: _Draws):
  """NotNext's segment B: sentences of a random other document, from a random sentence on,
  filling what A left of the target. Returns (document, first sentence, one past the last)."""
  num_documents = window.num_documents
  other = tf.cast(draws.other_document * tf.cast(tf.maximum(num_documents - 1, 1), tf.float32),
                  tf.int64)
  other = tf.minimum(other, tf.maximum(num_documents - 2, 0))
  other = tf.minimum(tf.where(other >= window.document, other + 1, other), num_documents - 1)
  other_start = tf.gather(window.document_start, other)
  other_end = tf.gather(window.document_end, other)
  first = other_start + tf.minimum(
      tf.cast(draws.other_sentence * tf.cast(other_end - other_start, tf.float32), tf.int64),
      other_end - other_start - 1)
  token_splits = window.token_splits
  b_target = chunk.target - (tf.gather(token_splits, chunk.a_end)
                             - tf.gather(token_splits, chunk.start))
  last = _first_reaching(token_splits, tf.gather(token_splits, first) + b_target)
  return other, first, tf.clip_by_value(last, first + 1, other_end)


def _step(window: _Window, start, owed, draws: _Draws, *, nsp, **chunk_options):
  """The next instance of every document. Returns (instance, next start, what is owed)."""
  active = start < window.document_end
  chunk = _chunk(window, start, draws, nsp=nsp, **chunk_options)
  # Without NSP the label is drawn all the same, and B is empty whatever it says.
  is_next, owed = _choose_is_next(window, chunk, active, owed, draws.is_next)
  is_next = tf.where(window.num_documents > 1, is_next, True)
  if nsp:
    other, other_first, other_last = _not_next_b(window, chunk, draws)
    b_first = tf.where(is_next, chunk.a_end, other_first)
    b_last = tf.where(is_next, chunk.end, other_last)
    document_b = tf.where(is_next, window.document, other)
    # An instance without any segment B (one-sentence document alone in its window) is
    # dropped rather than emitted without a pair.
    valid = active & (b_last > b_first)
    # NotNext puts the chunk's unused sentences back for the next instance.
    next_start = tf.where(is_next, chunk.end, chunk.a_end)
  else:
    b_first = b_last = chunk.a_end
    document_b, valid, next_start = window.document, active, chunk.end
  offsets = [tf.gather(window.token_splits, sentence)
             for sentence in (chunk.start, chunk.a_end, b_first, b_last)]
  instance = _Instance(*offsets, is_next=is_next, document_a=window.document,
                       document_b=document_b, is_short=chunk.is_short, valid=valid)
  return instance, tf.where(active, next_start, start), owed


def _instance_loop(window: _Window, seed, **step_options) -> _Instance:
  """The sequential part: chunks, split points, IsNext decisions. Fields [instances].

  Each step makes the next instance of every document of the window at once, so the loop
  runs as many times as the longest document has instances, not once per instance.
  """
  def body(step, start, owed, written):
    draws = _draws(seed, step, window.num_documents)
    instance, start, owed = _step(window, start, owed, draws, **step_options)
    written = _Instance(*(array.write(tf.cast(step, tf.int32), value)
                          for array, value in zip(written, instance)))
    return step + 1, start, owed, written

  empty = _Instance(*(tf.TensorArray(tf.bool if name in ("is_next", "is_short", "valid")
                                     else tf.int64, size=0, dynamic_size=True,
                                     element_shape=[None], infer_shape=False)
                      for name in _Instance.__annotations__))
  _, _, _, written = tf.while_loop(
      lambda step, start, owed, written: tf.reduce_any(start < window.document_end),
      body,
      (tf.constant(0, tf.int64), window.document_start, _owed_at_start(window), empty))
  return tf.cond(
      written.valid.size() > 0,
      lambda: _Instance(*(array.concat() for array in written)),
      lambda: _Instance(*(tf.zeros([0], array.dtype) for array in written)))


def _trimmed(instances: _Instance, max_num_tokens: int, seed) -> Pairs:
  """The pairs after `truncate_seq_pair`: each removed token comes from the front or the back
  with equal chance."""
  a_start, b_start = instances.a_start, instances.b_start
  a_length, b_length = instances.a_end - a_start, instances.b_end - b_start
  fit_a, fit_b = trimmed_lengths(a_length, b_length, max_num_tokens)
  excess = tf.cast(tf.stack([a_length - fit_a, b_length - fit_b], axis=1), tf.float32)
  from_front = tf.cast(tf.random.stateless_binomial(
      tf.shape(excess), seed, counts=excess, probs=0.5, output_dtype=tf.float32), tf.int64)
  a_from_front, b_from_front = tf.unstack(from_front, axis=1)
  a_start += a_from_front
  b_start += b_from_front
  return Pairs(
      a_start=a_start, a_end=a_start + fit_a, b_start=b_start, b_end=b_start + fit_b,
      is_next=tf.cast(instances.is_next, tf.int32), document_a=instances.document_a,
      document_b=instances.document_b, is_short=instances.is_short)


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
  window = _Window(
      token_splits=sentence_tokens.values.row_splits, document_start=sentence_splits[:-1],
      document_end=sentence_splits[1:], last_sentence=sentence_splits[1:] - 1,
      document=tf.range(tf.size(sentence_splits, out_type=tf.int64) - 1))
  max_num_tokens = seq_length - (3 if nsp else 2)

  loop_seed, trim_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
  instances = _instance_loop(window, loop_seed, nsp=nsp, short_seq_prob=short_seq_prob,
                             max_num_tokens=tf.constant(max_num_tokens, tf.int64))
  instances = _Instance(*(tf.boolean_mask(field, instances.valid) for field in instances))
  return _trimmed(instances, max_num_tokens, trim_seed)


def gather_segments(flat_tokens: tf.Tensor, pairs: Pairs):
  """The token ids of each pair's segments: two int32 [instances, (tokens)] tensors."""
  segment_a = tf.gather(flat_tokens, tf.ragged.range(pairs.a_start, pairs.a_end))
  segment_b = tf.gather(flat_tokens, tf.ragged.range(pairs.b_start, pairs.b_end))
  return segment_a, segment_b

"""Masked-LM targets as original BERT's `create_masked_lm_predictions` (docs/design.md#masking).

Every sequence of a batch gets `min(max_predictions, max(1, round(length * masked_lm_prob)))`
predictions (length counts [CLS] and [SEP]), chosen uniformly among the positions that are not
[CLS], [SEP] or padding. Each chosen word is replaced by [MASK] (80%), by a random ordinary
token (10%) or kept (10%). With whole-word masking a word and all its `##` pieces are chosen
together and share one decision; without it every piece is a word of its own, so both modes
are the same code.
"""

import dataclasses
from typing import NamedTuple

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class Masking:
  """How a sequence is masked: `max_predictions` slots (`max_predictions_per_seq`), and the
  `PipelineConfig` settings of the same names (docs/design.md#masking)."""

  max_predictions: int
  masked_lm_prob: float = 0.15
  mask_token_rate: float = 0.8
  random_token_rate: float = 0.1
  whole_word_masking: bool = False

  @classmethod
  def of(cls, config, max_predictions: int | None = None) -> "Masking":
    """The masking of a `PipelineConfig` (`max_predictions`: records' own slots, in place of
    its `max_predictions_per_seq`)."""
    return cls(max_predictions or config.max_predictions_per_seq, config.masked_lm_prob,
               config.mask_token_rate, config.random_token_rate, config.whole_word_masking)


class MaskingIds(NamedTuple):
  """What masking needs of the vocabulary, as tensors."""

  special_ids: tf.Tensor  # int32: never predicted ([CLS], [SEP], [PAD])
  mask_id: int  # [MASK]
  replacement_ids: tf.Tensor  # int32: the ids a random replacement is drawn from
  continuation: tf.Tensor  # bool [vocab]: True for `##` pieces (whole-word masking)

  @classmethod
  def of(cls, vocabulary) -> "MaskingIds":
    """The ids of a `tokenization.Vocabulary`."""
    return cls(tf.constant([vocabulary.cls_id, vocabulary.sep_id, vocabulary.pad_id], tf.int32),
               vocabulary.mask_id, tf.constant(vocabulary.replacement_ids(), tf.int32),
               tf.constant(vocabulary.continuation_flags(), tf.bool))


class MaskedTokens(tf.experimental.ExtensionType):
  """Masked inputs and targets of a batch of sequences."""

  token_ids: tf.Tensor  # [batch, seq] int32, the model's input after masking.
  masked_positions: tf.Tensor  # [batch, predictions] int32, 0 on padding slots.
  masked_ids: tf.Tensor  # [batch, predictions] int32, original ids (the MLM labels).
  masked_weights: tf.Tensor  # [batch, predictions] float32, 1.0 real slot, 0.0 padding.


class _Draws(NamedTuple):
  """The random draws of a batch of sequences, each from its own stateless op."""

  word_order: tf.Tensor  # [batch, seq] float32 uniform: words are taken in its order
  decision: tf.Tensor  # [batch, seq + 1] float32 uniform: a word's [MASK]/random/keep
  replacement: tf.Tensor  # [batch, seq] int32: a piece's random token, as an index


class _Words(NamedTuple):
  """The words a batch's sequences are cut into, for choosing."""

  index: tf.Tensor  # [batch, seq] int32: each position's word; `seq` for non-candidates
  length: tf.Tensor  # [batch, words] int32: pieces of each word (words == seq), 0 after


def _draws(seed, batch, seq, num_replacements) -> _Draws:
  word_order_seed, decision_seed, replacement_seed = tf.unstack(
      tf.random.experimental.stateless_split(seed, 3))
  return _Draws(
      word_order=tf.random.stateless_uniform([batch, seq], word_order_seed),
      decision=tf.random.stateless_uniform([batch, seq + 1], decision_seed),
      replacement=tf.random.stateless_uniform(
          [batch, seq], replacement_seed, maxval=num_replacements, dtype=tf.int32))


def _words(token_ids, lengths, special_ids, continuation, whole_word_masking) -> _Words:
  """Candidates are the real positions that are not special; a candidate piece starts a word
  unless whole-word masking joins it to the previous one."""
  seq = tf.shape(token_ids)[1]
  is_real = tf.range(seq)[None, :] < lengths[:, None]
  is_candidate = is_real & ~tf.reduce_any(token_ids[..., None] == special_ids, axis=-1)
  starts_word = is_candidate
  if whole_word_masking:
    previous_is_candidate = tf.pad(is_candidate[:, :-1], [[0, 0], [1, 0]])
    starts_word &= ~(tf.gather(continuation, token_ids) & previous_is_candidate)
  index = tf.cumsum(tf.cast(starts_word, tf.int32), axis=1) - 1
  index = tf.where(is_candidate, index, seq)  # non-candidates go to an extra bucket
  length = tf.math.bincount(index, minlength=seq + 1, maxlength=seq + 1, axis=-1)
  return _Words(index=index, length=length[:, :seq])


def _num_to_predict(lengths, max_predictions, masked_lm_prob):
  """Original BERT's count, [batch] int32: `round` halves to even, as Python 3's does."""
  num_to_predict = tf.cast(tf.round(tf.cast(lengths, tf.float64) * masked_lm_prob), tf.int32)
  return tf.minimum(max_predictions, tf.maximum(1, num_to_predict))


def _take_words_that_fit(length_in_order, num_to_predict):
  """Original BERT's greedy choice: walk the words in order, take each one whose pieces still
  fit in `num_to_predict`, skip the others. bool [batch, words]."""
  def step(state, length):
    taken_so_far, _ = state  # pieces taken so far, and whether the previous word was taken
    # [batch] each; the static shape kept from one step to the next, as `tf.scan` requires.
    length = tf.ensure_shape(length, taken_so_far.shape)
    take = (length > 0) & (taken_so_far + length <= num_to_predict)
    return taken_so_far + tf.where(take, length, 0), take

  _, taken = tf.scan(
      step,
      tf.transpose(length_in_order),
      initializer=(tf.zeros_like(num_to_predict), tf.zeros_like(num_to_predict, tf.bool)))
  return tf.transpose(taken)


def _chosen(words: _Words, num_to_predict, word_order, whole_word_masking):
  """The positions to predict, bool [batch, seq]: whole words taken in a random order while
  they fit in `num_to_predict`."""
  scores = tf.where(words.length > 0, word_order, 2.0)
  order = tf.argsort(scores, axis=1, stable=True)
  length_in_order = tf.gather(words.length, order, batch_dims=1)  # [batch, words]
  if whole_word_masking:
    chosen_in_order = _take_words_that_fit(length_in_order, num_to_predict)
  else:
    # One-piece words always fit until the count is reached: a prefix of the order.
    chosen_in_order = (tf.cumsum(length_in_order, axis=1) <= num_to_predict[:, None]) & (
        length_in_order > 0)
  rank = tf.argsort(order, axis=1, stable=True)
  word_chosen = tf.gather(chosen_in_order, rank, batch_dims=1)  # [batch, words]
  word_chosen = tf.pad(word_chosen, [[0, 0], [0, 1]])  # the non-candidate bucket: never
  return tf.gather(word_chosen, words.index, batch_dims=1)


def _corrupted(token_ids, chosen, words: _Words, draws: _Draws, ids: MaskingIds,
               masking: Masking):
  """The input ids: one 80/10/10 decision per chosen word, a random replacement per piece."""
  decision = tf.gather(draws.decision, words.index, batch_dims=1)  # [batch, seq]
  replacement = tf.gather(ids.replacement_ids, draws.replacement)
  mask_rate = masking.mask_token_rate
  masked = tf.where(decision < mask_rate, ids.mask_id,
                    tf.where(decision < mask_rate + masking.random_token_rate,
                             replacement, token_ids))
  return tf.where(chosen, masked, token_ids)


def _prediction_slots(token_ids, chosen, max_predictions):
  """(positions, original ids, is a real slot): the chosen positions in increasing order,
  padded with 0 to `max_predictions` slots, each [batch, max_predictions]."""
  seq = tf.shape(token_ids)[1]
  sorted_positions = tf.sort(tf.where(chosen, tf.range(seq)[None, :], seq), axis=1)
  sorted_positions = tf.pad(sorted_positions, [[0, 0], [0, max_predictions]],
                            constant_values=seq)[:, :max_predictions]
  is_slot = sorted_positions < seq
  positions = tf.where(is_slot, sorted_positions, 0)
  return positions, tf.where(is_slot, tf.gather(token_ids, positions, batch_dims=1), 0), is_slot


def mask_tokens(token_ids: tf.Tensor, lengths: tf.Tensor, seed: tf.Tensor, ids: MaskingIds,
                masking: Masking) -> MaskedTokens:
  """Chooses and corrupts the positions to predict: the one entry point of masking, for the
  pipeline's fresh sequences and for any caller that has token ids already.

  A pure function of its arguments: the same ids, lengths and seed give the same result bit
  for bit, eagerly or in a graph; nothing but `lengths` and `ids.special_ids` tells it where
  the segments are, so any `[CLS] A [SEP] (B [SEP])` layout works.

  Args:
    token_ids: int32 [batch, seq], unmasked, padded with 0 after `lengths`.
    lengths: int32 [batch] real tokens per sequence, [CLS] and [SEP] included.
    seed: [2] int stateless seed; every draw comes from it.
    ids: the vocabulary's special, [MASK], replacement and `##` ids.
    masking: the number of slots and the rates.
  """
  batch, seq = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
  draws = _draws(seed, batch, seq, tf.shape(ids.replacement_ids)[0])
  words = _words(token_ids, lengths, ids.special_ids, ids.continuation,
                 masking.whole_word_masking)
  chosen = _chosen(words, _num_to_predict(lengths, masking.max_predictions,
                                          masking.masked_lm_prob),
                   draws.word_order, masking.whole_word_masking)  # [batch, seq]
  positions, original_ids, is_slot = _prediction_slots(token_ids, chosen,
                                                       masking.max_predictions)
  return MaskedTokens(
      token_ids=_corrupted(token_ids, chosen, words, draws, ids, masking),
      masked_positions=positions,
      masked_ids=original_ids,
      masked_weights=tf.cast(is_slot, tf.float32))

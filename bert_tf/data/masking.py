"""Masked-LM targets as original BERT's `create_masked_lm_predictions` (docs/design.md#masking).

Every sequence of a batch gets `min(max_predictions, max(1, round(length * masked_lm_prob)))`
predictions (length counts [CLS] and [SEP]), chosen uniformly among the positions that are not
[CLS], [SEP] or padding. Each chosen word is replaced by [MASK] (80%), by a random ordinary
token (10%) or kept (10%). With whole-word masking a word and all its `##` pieces are chosen
together and share one decision; without it every piece is a word of its own, so both modes
are the same code.
"""

import tensorflow as tf


class MaskedTokens(tf.experimental.ExtensionType):
  """Masked inputs and targets of a batch of sequences."""

  token_ids: tf.Tensor  # [batch, seq] int32, the model's input after masking.
  masked_positions: tf.Tensor  # [batch, predictions] int32, 0 on padding slots.
  masked_ids: tf.Tensor  # [batch, predictions] int32, original ids (the MLM labels).
  masked_weights: tf.Tensor  # [batch, predictions] float32, 1.0 real slot, 0.0 padding.


def _take_words_that_fit(length_in_order, num_to_predict):
  """Original BERT's greedy choice: walk the words in order, take each one whose pieces still
  fit in `num_to_predict`, skip the others. bool [batch, words]."""
  def step(taken_so_far, length):
    take = (length > 0) & (taken_so_far + length <= num_to_predict)
    return taken_so_far + tf.where(take, length, 0), take

  _, taken = tf.scan(
      lambda state, length: step(state[0], length),
      tf.transpose(length_in_order),
      initializer=(tf.zeros_like(num_to_predict), tf.zeros_like(num_to_predict, tf.bool)))
  return tf.transpose(taken)


def mask_tokens(token_ids: tf.Tensor, lengths: tf.Tensor, seed: tf.Tensor, *,
                special_ids: tf.Tensor, mask_id: int, replacement_ids: tf.Tensor,
                continuation: tf.Tensor, max_predictions: int, masked_lm_prob: float,
                mask_token_rate: float = 0.8, random_token_rate: float = 0.1,
                whole_word_masking: bool = False) -> MaskedTokens:
  """Chooses and corrupts the positions to predict.

  Args:
    token_ids: int32 [batch, seq], padded with 0 after `lengths`.
    lengths: int32 [batch] real tokens per sequence, [CLS] and [SEP] included.
    seed: [2] stateless seed.
    special_ids: ids never predicted ([CLS], [SEP], [PAD]).
    mask_id: id of [MASK].
    replacement_ids: ids a random replacement is drawn from.
    continuation: bool [vocab], True for `##` pieces (used with whole-word masking).
  """
  choose_seed, decide_seed, replace_seed = tf.unstack(
      tf.random.experimental.stateless_split(seed, 3))
  batch, seq = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
  positions = tf.range(seq)[None, :]  # [1, seq]
  is_real = positions < lengths[:, None]
  is_candidate = is_real & ~tf.reduce_any(token_ids[..., None] == special_ids, axis=-1)

  # Words: a candidate piece starts a word unless whole-word masking joins it to the previous.
  starts_word = is_candidate
  if whole_word_masking:
    previous_is_candidate = tf.pad(is_candidate[:, :-1], [[0, 0], [1, 0]])
    starts_word &= ~(tf.gather(continuation, token_ids) & previous_is_candidate)
  word = tf.cumsum(tf.cast(starts_word, tf.int32), axis=1) - 1  # [batch, seq] word index
  word = tf.where(is_candidate, word, seq)  # non-candidates go to an extra bucket
  word_length = tf.math.bincount(word, minlength=seq + 1, maxlength=seq + 1, axis=-1)
  word_length = word_length[:, :seq]  # [batch, words]

  # A random order of the words; whole words are taken in that order when they fit.
  num_to_predict = tf.cast(tf.round(tf.cast(lengths, tf.float64) * masked_lm_prob), tf.int32)
  num_to_predict = tf.minimum(max_predictions, tf.maximum(1, num_to_predict))
  scores = tf.random.stateless_uniform([batch, seq], choose_seed)
  scores = tf.where(word_length > 0, scores, 2.0)
  order = tf.argsort(scores, axis=1, stable=True)
  length_in_order = tf.gather(word_length, order, batch_dims=1)  # [batch, words]
  if whole_word_masking:
    chosen_in_order = _take_words_that_fit(length_in_order, num_to_predict)
  else:
    # One-piece words always fit until the count is reached: a prefix of the order.
    chosen_in_order = (tf.cumsum(length_in_order, axis=1) <= num_to_predict[:, None]) & (
        length_in_order > 0)
  rank = tf.argsort(order, axis=1, stable=True)
  word_chosen = tf.gather(chosen_in_order, rank, batch_dims=1)  # [batch, words]
  word_chosen = tf.pad(word_chosen, [[0, 0], [0, 1]])  # the non-candidate bucket: never
  chosen = tf.gather(word_chosen, word, batch_dims=1)  # [batch, seq]

  # One 80/10/10 decision per word; a random replacement per piece.
  decision = tf.gather(tf.random.stateless_uniform([batch, seq + 1], decide_seed), word,
                       batch_dims=1)
  replacement = tf.gather(replacement_ids, tf.random.stateless_uniform(
      [batch, seq], replace_seed, maxval=tf.shape(replacement_ids)[0], dtype=tf.int32))
  masked = tf.where(decision < mask_token_rate, mask_id,
                    tf.where(decision < mask_token_rate + random_token_rate,
                             replacement, token_ids))
  masked = tf.where(chosen, masked, token_ids)

  # Chosen positions in increasing order, padded with 0 to `max_predictions` slots.
  sorted_positions = tf.sort(tf.where(chosen, positions, seq), axis=1)
  sorted_positions = tf.pad(sorted_positions, [[0, 0], [0, max_predictions]],
                            constant_values=seq)[:, :max_predictions]
  is_slot = sorted_positions < seq
  masked_positions = tf.where(is_slot, sorted_positions, 0)
  masked_ids = tf.where(is_slot, tf.gather(token_ids, masked_positions, batch_dims=1), 0)
  return MaskedTokens(
      token_ids=masked,
      masked_positions=masked_positions,
      masked_ids=masked_ids,
      masked_weights=tf.cast(is_slot, tf.float32))

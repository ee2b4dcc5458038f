"""Masking pre-generated records anew (`--remask`): the true tokens go back to the masked
positions, then `masking.mask_tokens` chooses and corrupts new ones, so that records masked
once when they were written get a new mask each epoch (RoBERTa's dynamic masking).

The number of predictions per record is the original's formula, `min(P, max(1, round(length *
masked_lm_prob)))`: the same as the records' own when they were made with the same
masked_lm_prob (0.15 by default, in both).
"""

import tensorflow as tf

from bert_tf.data import masking
from bert_tf.data.tokenization import Vocabulary


def restore(token_ids: tf.Tensor, masked_positions: tf.Tensor, masked_ids: tf.Tensor,
            masked_weights: tf.Tensor) -> tf.Tensor:
  """token_ids [batch, seq] with the true ids back at the real prediction slots."""
  slots = tf.where(masked_weights > 0)  # [real slots, 2]: (row, slot)
  positions = tf.cast(tf.gather_nd(masked_positions, slots), tf.int64)
  indices = tf.stack([slots[:, 0], positions], axis=1)
  return tf.tensor_scatter_nd_update(token_ids, indices, tf.gather_nd(masked_ids, slots))


class Remasker:
  """Masks a batch of parsed records (`records.parse`) afresh from a stateless seed."""

  def __init__(self, vocabulary: Vocabulary, masking_settings: masking.Masking):
    self.ids = masking.MaskingIds.of(vocabulary)
    self.masking = masking_settings

  def __call__(self, features: dict, labels: dict, weights: dict, seed: tf.Tensor):
    token_ids = restore(features["token_ids"], features["masked_positions"], labels["mlm"],
                        weights["mlm"])
    lengths = tf.reduce_sum(features["padding_mask"], axis=1)
    masked = masking.mask_tokens(token_ids, lengths, seed, self.ids, self.masking)
    features = {**features, "token_ids": masked.token_ids,
                "masked_positions": masked.masked_positions}
    labels = {**labels, "mlm": masked.masked_ids}
    weights = {**weights, "mlm": masked.masked_weights}
    return features, labels, weights

"""The masked-LM loss (SPEC §7): cross-entropy over real masked positions only.

Keras's default reduction divides by every prediction slot, padding slots included; BERT
divides by the number of real masked tokens (`sum(w * ce) / sum(w)`), which is Keras's
`mean_with_sample_weight` reduction once the padding slots have weight 0. The seed document's
summed form (`-sum log p` over masked tokens) is the `sum` reduction.
"""

import keras

from bert_tf.errors import UserError

REDUCTIONS = {"mean": "mean_with_sample_weight", "sum": "sum"}


def masked_lm_loss(reduction: str = "mean") -> keras.losses.Loss:
  if reduction not in REDUCTIONS:
    raise UserError(f"unknown MLM loss reduction {reduction!r}: use 'mean' or 'sum'")
  return keras.losses.SparseCategoricalCrossentropy(
      from_logits=True, reduction=REDUCTIONS[reduction], name="mlm_loss")

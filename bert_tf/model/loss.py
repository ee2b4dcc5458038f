"""The pre-training losses (docs/design.md#loss) and their normalisation over the global batch.

L_MLM is the cross-entropy over real masked tokens divided by their number (`sum(w * ce) /
sum(w)`), or, with `mlm_loss_reduction="sum"`, the summed cross-entropy; L_NSP is the
mean over examples. Both are normalised over the *global* batch of one optimizer update (all
replicas, all accumulated parts), not per replica: Keras's `mean_with_sample_weight` would
average per-replica means, which weighs a replica's tokens by how few masked tokens it drew.

So both Keras losses sum (`reduction="sum"`), and `normalised_sample_weights` turns each
example's weights into its share of the global loss. Summed over replicas (the optimizer's
all-reduce) and averaged over accumulated parts (the training step), the parts' losses and
gradients are exactly those of the global batch.
"""

import keras
import tensorflow as tf


def masked_lm_loss() -> keras.losses.Loss:
  """The MLM loss to compile with: summed; `normalised_sample_weights` makes it a mean (or
  keeps the sum) over the global batch."""
  return keras.losses.SparseCategoricalCrossentropy(
      from_logits=True, reduction="sum", name="mlm_loss")


def next_sentence_loss() -> keras.losses.Loss:
  return keras.losses.SparseCategoricalCrossentropy(
      from_logits=True, reduction="sum", name="nsp_loss")


def global_sum(value):
  context = tf.distribute.get_replica_context()
  return context.all_reduce(tf.distribute.ReduceOp.SUM, value) if context else value


def normalised_sample_weights(sample_weight: dict, mlm_loss_reduction: str,
                              parts: int = 1) -> dict:
  """Weights for one replica's batch that make its summed losses its share of the global
  losses, times `parts` (the batch is then split into `parts` accumulated parts, whose losses
  the training step averages; Keras reports each part's loss, so each must be full-sized)."""
  mlm = tf.cast(sample_weight["mlm"], tf.float32)
  nsp = tf.cast(sample_weight["nsp"], tf.float32)
  # One all-reduce for both totals: it runs every step.
  mlm_total, nsp_total = tf.unstack(global_sum(tf.stack([tf.reduce_sum(mlm),
                                                          tf.reduce_sum(nsp)])))
  if mlm_loss_reduction == "mean":
    mlm = tf.math.divide_no_nan(mlm, mlm_total)
  nsp = tf.math.divide_no_nan(nsp, nsp_total)
  return {"mlm": mlm * parts, "nsp": nsp * parts}

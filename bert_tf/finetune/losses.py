"""What the fine-tuning losses share: each a mean over the *global* batch (`GlobalMean`), and
classification's cross-entropy of the logits, per example, which classify and choose (the right
ending's number against the endings' logits) both minimise. Each other kind's loss is in its
folder (`kinds/<kind>/head.py`).

Keras's own mean divides each replica's sum by that replica's count, and a strategy averages
the replicas' means: a replica that got fewer examples (the odd one of an epoch's last batch)
or fewer labelled tokens (tagging) then weighs more than on one device. `GlobalMean` sums the
element losses of its replica and divides by the element count of every replica together
(one all-reduce, as the pre-training loss does, `model.loss`), so that the replicas' summed
gradients are those of the global batch's mean: `--strategy=mirrored` trains as one device.
"""

from collections.abc import Callable

import keras
from keras import ops

from bert_tf.model.loss import global_sum


class GlobalMean(keras.losses.Loss):
  """The mean of `elements(y_true, y_pred)` (a loss per example, token or position) over the
  global batch, its labels equal to `ignored` left out."""

  def __init__(self, elements: Callable, name: str, ignored: int | None = None):
    super().__init__(reduction="sum", name=name)
    self.elements, self.ignored = elements, ignored

  def call(self, y_true, y_pred):
    kept = None if self.ignored is None else ops.not_equal(y_true, self.ignored)
    if kept is not None:
      y_true = ops.where(kept, y_true, 0)  # any class: its loss is weighed 0
    values = ops.cast(self.elements(y_true, y_pred), "float32")
    weights = ops.ones_like(values) if kept is None else ops.cast(kept, "float32")
    return ops.divide_no_nan(values * weights, global_sum(ops.sum(weights)))


def cross_entropy(y_true, y_pred):
  """Per element, of integer labels against logits."""
  return keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)


def classification_loss() -> keras.losses.Loss:
  """labels [batch] against logits [batch, classes]."""
  return GlobalMean(cross_entropy, "classification_loss")

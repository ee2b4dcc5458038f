"""The fine-tuning losses of the four task kinds, each a mean over the *global* batch.

Keras's own mean divides each replica's sum by that replica's count, and a strategy averages
the replicas' means: a replica that got fewer examples (the odd one of an epoch's last batch)
or fewer labelled tokens (tagging) then weighs more than on one device. `GlobalMean` sums the
element losses of its replica and divides by the element count of every replica together
(one all-reduce, as the pre-training loss does, `model.loss`), so that the replicas' summed
gradients are those of the global batch's mean: `--strategy=mirrored` trains as one device.

- classify: cross-entropy of the class logits, per example;
- regress: squared error of the score, per example (STS-B's mean squared error);
- tag: cross-entropy per labelled token, a word's first piece (`IGNORED_LABEL`
  elsewhere is skipped, as transformers' -100);
- answer: cross-entropy of the start and of the end position, per example, both averaged
  (run_squad.py's loss).
"""

from collections.abc import Callable

import keras
from keras import ops

from bert_tf.model.loss import global_sum

# The label of a token no loss is taken on (a tagged word's other pieces, [CLS], [SEP], the
# padding), as transformers' -100.
IGNORED_LABEL = -100


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


def _cross_entropy(y_true, y_pred):
  return keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)


def classification_loss() -> keras.losses.Loss:
  """labels [batch] against logits [batch, classes]."""
  return GlobalMean(_cross_entropy, "classification_loss")


def regression_loss() -> keras.losses.Loss:
  """scores [batch] or [batch, 1] against outputs [batch, 1]."""
  def squared_error(y_true, y_pred):
    return ops.square(ops.reshape(ops.cast(y_true, "float32"), [-1]) - y_pred[:, 0])
  return GlobalMean(squared_error, "regression_loss")


def tagging_loss() -> keras.losses.Loss:
  """tags [batch, seq] (`IGNORED_LABEL` off a word's first piece) against logits [batch, seq,
  tags]."""
  return GlobalMean(_cross_entropy, "tagging_loss", ignored=IGNORED_LABEL)


def span_loss() -> keras.losses.Loss:
  """positions [batch, 2] (start, end) against span logits [batch, 2, seq]."""
  return GlobalMean(_cross_entropy, "span_loss")

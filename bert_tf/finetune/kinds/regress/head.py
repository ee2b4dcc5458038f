"""regress's head and loss: BERT's classification head with one output, `classifier` [hidden,
1] on the pooled `[CLS]` output (transformers' `BertForSequenceClassification`, `num_labels=1`,
`problem_type="regression"`), and the squared error of the score (STS-B's mean squared error),
a mean over the global batch."""

import keras
from keras import ops

from bert_tf.finetune.losses import GlobalMean
from bert_tf.finetune.model import classifier_model


def regression_model(encoder: keras.Model, *, initializer_range: float = 0.02) -> keras.Model:
  """features -> score [batch, 1]."""
  return classifier_model(encoder, 1, initializer_range=initializer_range)


def regression_loss() -> keras.losses.Loss:
  """scores [batch] or [batch, 1] against outputs [batch, 1]."""
  def squared_error(y_true, y_pred):
    return ops.square(ops.reshape(ops.cast(y_true, "float32"), [-1]) - y_pred[:, 0])
  return GlobalMean(squared_error, "regression_loss")

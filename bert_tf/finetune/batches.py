"""Features and labels made in memory (numpy arrays) as `tf.data` batches for `fit`."""

import numpy as np
import tensorflow as tf


def batches(features: dict, labels: np.ndarray, *, batch_size: int,
            order: np.ndarray | None = None) -> tf.data.Dataset:
  """(features, labels) batches of the rows `order` names, in that order (an epoch's, from
  `epochs.EpochPlan.order`); all rows in the arrays' order without it."""
  if order is not None:
    features, labels = {name: values[order] for name, values in features.items()}, labels[order]
  data = tf.data.Dataset.from_tensor_slices((features, labels))
  return data.batch(batch_size).prefetch(tf.data.AUTOTUNE)

"""Features and labels made in memory (numpy arrays) as `tf.data` batches for `fit`."""

import numpy as np
import tensorflow as tf

from bert_tf.data.prefetching import prefetched


def batches(features: dict, labels: np.ndarray, *, batch_size: int,
            order: np.ndarray | None = None) -> tf.data.Dataset:
  """(features, labels) batches of the rows `order` names, in that order (an epoch's, from
  `epochs.EpochPlan.order`); all rows in the arrays' order without it."""
  if order is not None:
    features, labels = {name: values[order] for name, values in features.items()}, labels[order]
  data = tf.data.Dataset.from_tensor_slices((features, labels))
  return prefetched(data.batch(batch_size))

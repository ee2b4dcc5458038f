"""Features and labels made in memory (numpy arrays) as `tf.data` batches for `fit`."""

import numpy as np
import tensorflow as tf


def batches(features: dict, labels: np.ndarray, *, batch_size: int,
            shuffle_seed: int | None = None) -> tf.data.Dataset:
  """(features, labels) batches; reshuffled on each pass when `shuffle_seed` is given (the same
  order for the same seed), in the arrays' order otherwise."""
  data = tf.data.Dataset.from_tensor_slices((features, labels))
  if shuffle_seed is not None:
    data = data.shuffle(len(labels), seed=shuffle_seed, reshuffle_each_iteration=True)
  return data.batch(batch_size).prefetch(tf.data.AUTOTUNE)

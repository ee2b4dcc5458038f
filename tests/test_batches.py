"""In-memory features and labels as batches: every example once a pass, the order fixed by
the seed and new on each pass, the arrays' order without a seed."""

import numpy as np

from bert_tf.finetune.batches import batches


def passes(data, count):
  results = []
  for _ in range(count):
    results.append(np.concatenate([labels.numpy() for _, labels in data]).tolist())
  return results


def test_batches_shuffle_by_seed():
  features = {"token_ids": np.arange(20, dtype=np.int32).reshape(10, 2)}
  labels = np.arange(10, dtype=np.int32)
  first, second = passes(batches(features, labels, batch_size=4, shuffle_seed=3), 2)
  assert sorted(first) == sorted(second) == list(range(10))
  assert first != second  # reshuffled on each pass
  assert passes(batches(features, labels, batch_size=4, shuffle_seed=3), 2) == [first, second]
  assert passes(batches(features, labels, batch_size=4), 1) == [list(range(10))]
  batch_features, batch_labels = next(iter(batches(features, labels, batch_size=4)))
  assert batch_features["token_ids"].numpy().tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
  assert batch_labels.shape == (4,)

"""In-memory features and labels as batches, in the order an epoch names; each epoch's order a
permutation fixed by the seed and the epoch alone, so that a resumed run takes the rest of an
epoch as the uninterrupted run did."""

import numpy as np

from bert_tf.finetune.batches import batches
from bert_tf.finetune.epochs import EpochPlan


def labels_of(data):
  return np.concatenate([labels.numpy() for _, labels in data]).tolist()


def test_batches_in_the_order_given():
  features = {"token_ids": np.arange(20, dtype=np.int32).reshape(10, 2)}
  labels = np.arange(10, dtype=np.int32)
  assert labels_of(batches(features, labels, batch_size=4, order=np.array([3, 1, 2]))) == [
      3, 1, 2]
  assert labels_of(batches(features, labels, batch_size=4)) == list(range(10))
  batch_features, batch_labels = next(iter(batches(features, labels, batch_size=4)))
  assert batch_features["token_ids"].numpy().tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]
  assert batch_labels.shape == (4,)


def test_each_epoch_order_is_fixed_by_the_seed_and_the_epoch():
  plan = EpochPlan(rows=10, batch_size=4, epochs=3, seed=3)
  assert (plan.steps_per_epoch, plan.train_steps) == (3, 9)  # the last batch of 2
  first, second = plan.order(0), plan.order(1)
  assert sorted(first) == sorted(second) == list(range(10))
  assert first.tolist() != second.tolist()  # a new order each epoch
  assert plan.order(1).tolist() == second.tolist()  # the same without the epochs before
  assert EpochPlan(10, 4, 3, seed=4).order(0).tolist() != first.tolist()
  assert plan.position(7) == (2, 1)  # 7 batches trained: epoch 2's batch 1 is next
  assert plan.order(2, first_batch=1).tolist() == plan.order(2)[4:].tolist()

"""Dev accuracy and macro F1, against values worked out by hand."""

import numpy as np
import pytest

from bert_tf.finetune import metrics


def test_accuracy():
  assert metrics.accuracy(np.array([0, 1, 2, 2]), np.array([0, 1, 1, 2])) == 0.75
  assert metrics.accuracy(np.array([], int), np.array([], int)) == 0.0


def test_macro_f1_by_hand():
  labels, predictions = np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])
  # class 0: TP 1, FP 0, FN 1 -> 2/3; class 1: TP 2, FP 1, FN 0 -> 4/5.
  assert metrics.macro_f1(labels, predictions) == pytest.approx((2 / 3 + 4 / 5) / 2)


def test_macro_f1_counts_a_class_only_predicted_and_is_one_when_perfect():
  assert metrics.macro_f1(np.array([0, 0]), np.array([0, 2])) == pytest.approx((2 / 3 + 0) / 2)
  assert metrics.macro_f1(np.array([3, 1, 3]), np.array([3, 1, 3])) == 1.0

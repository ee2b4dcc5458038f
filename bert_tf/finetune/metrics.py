"""Dev-set figures of a classifier: accuracy and macro F1 (numpy; no TensorFlow)."""

import numpy as np


def accuracy(labels: np.ndarray, predictions: np.ndarray) -> float:
  return float(np.mean(labels == predictions)) if len(labels) else 0.0


def macro_f1(labels: np.ndarray, predictions: np.ndarray) -> float:
  """The unweighted mean of the per-class F1 over the classes that occur among the labels or
  the predictions (a class that is neither has no F1 to count); 0 for a class with no true
  positive."""
  scores = []
  for label in np.union1d(labels, predictions):
    true_positives = np.sum((predictions == label) & (labels == label))
    predicted, actual = np.sum(predictions == label), np.sum(labels == label)
    scores.append(2 * true_positives / (predicted + actual))  # F1 = 2TP / (2TP + FP + FN)
  return float(np.mean(scores)) if scores else 0.0

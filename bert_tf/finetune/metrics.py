"""The dev figures several kinds share, each written once (numpy and Python; no TensorFlow):
accuracy (classify, choose) and F1 of counts (classify's, answer's), and a GLUE task's own
figures, by which classify and regress both rank a GLUE task (`glue/scoring.py`): the F1 of the
positive class (MRPC, QQP), Matthews correlation (CoLA), Pearson and Spearman correlation
(STS-B; regress's figures). Each kind's own figures are in its folder
(`kinds/<kind>/metrics.py`).

Every figure is a fraction in [0, 1]. A figure that is undefined on the data (a correlation
with a constant list, a precision with no prediction) is 0, so that epochs still compare.
"""

import numpy as np

# === Classification ===


def accuracy(labels: np.ndarray, predictions: np.ndarray) -> float:
  return float(np.mean(labels == predictions)) if len(labels) else 0.0


def f1(true_positives, predicted, actual) -> float:
  """2TP / (2TP + FP + FN); 0 when nothing is predicted or expected."""
  return 2 * true_positives / (predicted + actual) if predicted + actual else 0.0


def positive_f1(labels: np.ndarray, predictions: np.ndarray, positive=1) -> float:
  """The F1 of one class, `positive` (GLUE's for MRPC and QQP: the paraphrase class, 1)."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  true_positives = np.sum((predictions == positive) & (labels == positive))
  return float(f1(true_positives, np.sum(predictions == positive), np.sum(labels == positive)))


def matthews_correlation(labels: np.ndarray, predictions: np.ndarray) -> float:
  """Matthews correlation coefficient (GLUE's for CoLA), in its multi-class form (Gorodkin's
  R_K, which is the phi coefficient for two classes); 0 when labels or predictions are all
  one class."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  classes = np.union1d(labels, predictions)
  # confusion[i, j]: examples of class i predicted as class j.
  confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
  np.add.at(confusion, (np.searchsorted(classes, labels),
                        np.searchsorted(classes, predictions)), 1)
  total, correct = confusion.sum(), np.trace(confusion)
  actual, predicted = confusion.sum(axis=1), confusion.sum(axis=0)
  denominator = np.sqrt((total**2 - predicted @ predicted) * (total**2 - actual @ actual))
  return float((correct * total - actual @ predicted) / denominator) if denominator else 0.0


# === Regression ===


def pearson(labels, predictions) -> float:
  """Pearson's correlation coefficient; 0 when either list is constant (it is undefined)."""
  x = np.asarray(labels, np.float64) - np.mean(labels)
  y = np.asarray(predictions, np.float64) - np.mean(predictions)
  denominator = np.sqrt((x @ x) * (y @ y))
  return float(x @ y / denominator) if denominator else 0.0


def average_ranks(values) -> np.ndarray:
  """Ranks from 1, tied values sharing the mean of the ranks they span: [10, 20, 20, 30] ->
  [1, 2.5, 2.5, 4]."""
  _, inverse, counts = np.unique(np.asarray(values), return_inverse=True, return_counts=True)
  first_rank = np.cumsum(counts) - counts + 1  # of each distinct value, in sorted order
  return (first_rank + (counts - 1) / 2)[inverse]


def spearman(labels, predictions) -> float:
  """Spearman's rank correlation: Pearson's on the average ranks (ties as in scipy)."""
  return pearson(average_ranks(labels), average_ranks(predictions))

"""classify's own dev figure: macro F1 (its accuracy, and a GLUE task's figures, are shared:
`finetune/metrics.py`)."""

import numpy as np

from bert_tf.finetune.metrics import positive_f1


def macro_f1(labels: np.ndarray, predictions: np.ndarray) -> float:
  """The unweighted mean of the per-class F1 over the classes that occur among the labels or
  the predictions (a class that is neither has no F1 to count); 0 for a class with no true
  positive."""
  scores = [positive_f1(labels, predictions, label)
            for label in np.union1d(labels, predictions)]
  return float(np.mean(scores)) if scores else 0.0

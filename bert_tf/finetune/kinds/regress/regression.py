"""A regression task's labels: the TSV label column read as numbers (STS-B's similarity
scores, say); anything else is a `UserError` naming the file and the row."""

import math

import numpy as np

from bert_tf.errors import UserError
from bert_tf.finetune.data import Examples


def targets(examples: Examples) -> np.ndarray:
  """float32 [examples]: each label as a number; rows are counted as in `data.read_examples`,
  the header being row 1."""
  values = []
  for row, label in enumerate(examples.labels, start=2):
    try:
      value = float(label)
    except ValueError:
      value = math.nan
    if not math.isfinite(value):
      raise UserError(f"{examples.path}, row {row}: label {label!r} is not a number (a "
                      "regression task's labels are)")
    values.append(value)
  return np.array(values, np.float32)

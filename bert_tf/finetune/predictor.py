"""A fine-tuned run's exported SavedModel (`output_dir/export`, the model a user serves) as a
predictor of any kind, and its predictions of files to predict written in the GLUE server's
layout (`glue/scoring.py`): shared by every kind, so above them (it dispatches on the run's
kind, by the registry)."""

import os

import tensorflow as tf

from bert_tf.finetune.glue.scoring import write_predictions
from bert_tf.finetune.kinds.registry import kind_named
from bert_tf.finetune.output_dir import EXPORT
from bert_tf.finetune.task_record import read_task


class Predictor:
  """A fine-tuned run's exported model as a function from the rows of a file to predict to
  their predictions, by its kind's signature (`signature_inputs`, `predictions`): label names
  (`classify`), numbers (`score`) or endings' numbers (`choose`), as the run's task.json says."""

  def __init__(self, output_dir: str):
    self.task = read_task(output_dir)
    self.task_kind = kind_named(self.task.task)
    self.model = tf.saved_model.load(os.path.join(output_dir, EXPORT))

  def __call__(self, columns: tuple[list, ...], batch_size: int = 64) -> list:
    signature = self.model.signatures[self.task_kind.signature]
    predictions = []
    for start in range(0, len(columns[0]), batch_size):
      outputs = signature(**self.task_kind.signature_inputs(
          self.task, tuple(column[start:start + batch_size] for column in columns)))
      predictions += self.task_kind.predictions(outputs)
    return predictions


def write_all(predicted: list, run_dir: str, output_dir: str) -> list[str]:
  """Predicts each (file, indices, texts) of `predicted` with the run in `run_dir` into
  `output_dir`/file; returns the paths written."""
  predict = Predictor(run_dir)
  written = []
  for file, indices, texts in predicted:
    written.append(os.path.join(output_dir, file))
    write_predictions(written[-1], indices, predict(texts), predict.task.task)
  return written

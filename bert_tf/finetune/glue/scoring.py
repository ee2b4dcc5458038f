"""A GLUE task's dev figures, by the task's own metrics (fine-tuning computes them after each
epoch and keeps the epoch with the best task score), and its test predictions in the files the
GLUE server takes, made by the run's exported SavedModel (`output_dir/export`), the model a
user serves."""

import os

import numpy as np
import tensorflow as tf

from bert_tf import files
from bert_tf.finetune import metrics
from bert_tf.finetune.glue import tasks
from bert_tf.finetune.glue.tasks import GlueTask
from bert_tf.finetune.kinds import kind
from bert_tf.finetune.output_dir import EXPORT
from bert_tf.finetune.task_record import read_task

_METRIC = {tasks.ACCURACY: metrics.accuracy, tasks.F1: metrics.positive_f1,
           tasks.MATTHEWS: metrics.matthews_correlation, tasks.PEARSON: metrics.pearson,
           tasks.SPEARMAN: metrics.spearman}


def scores(task: GlueTask, labels: dict[str, list[str]], predictions: dict[str, list]) -> dict:
  """The task's metrics on each dev set, by `task.score_names`: labels and predictions are the
  label names (a classification) or numbers (a regression), by dev set."""
  figures = {}
  for dev in task.dev_names:
    gold, predicted = np.asarray(labels[dev]), np.asarray(predictions[dev])
    if task.kind == "regress":
      gold, predicted = gold.astype(np.float64), predicted.astype(np.float64)
    for metric in task.metrics:
      value = (_METRIC[metric](gold, predicted, "1") if metric == tasks.F1
               else _METRIC[metric](gold, predicted))
      figures[f"{dev}_{metric}" if dev else metric] = float(value)
  return figures


def dev_figures(task: GlueTask, labels: dict[str, list], predictions: dict[str, list]) -> dict:
  """`scores` as metrics.json names them (`dev_matthews_correlation`, `dev_matched_accuracy`),
  with the task's score, `dev_glue_score`."""
  figures = {f"dev_{name}": value for name, value in scores(task, labels, predictions).items()}
  return {**figures, f"dev_{tasks.SCORE}": task.score(figures, "dev_")}


class Predictor:
  """A fine-tuned run's exported model as a function from the rows of a file to predict to
  their predictions, by its kind's signature (`signature_inputs`, `predictions`): label names
  (`classify`), numbers (`score`) or endings' numbers (`choose`), as the run's task.json says."""

  def __init__(self, output_dir: str):
    self.task = read_task(output_dir)
    self.kind = self.task.task
    self.task_kind = kind(self.task.task)
    self.model = tf.saved_model.load(os.path.join(output_dir, EXPORT))

  def __call__(self, columns: tuple[list, ...], batch_size: int = 64) -> list:
    signature = self.model.signatures[self.task_kind.signature]
    predictions = []
    for start in range(0, len(columns[0]), batch_size):
      outputs = signature(**self.task_kind.signature_inputs(
          self.task, tuple(column[start:start + batch_size] for column in columns)))
      predictions += self.task_kind.predictions(outputs)
    return predictions


def prediction_text(prediction, kind: str) -> str:
  return f"{prediction:.3f}" if kind == "regress" else str(prediction)


def write_predictions(path: str, indices: list[str], predictions: list, kind: str) -> None:
  """The GLUE server's layout: a header row `index<TAB>prediction`, then a row per example."""
  rows = ["index\tprediction"] + [f"{index}\t{prediction_text(prediction, kind)}"
                                  for index, prediction in zip(indices, predictions)]
  tf.io.gfile.makedirs(os.path.dirname(path))
  files.write_text(path, "\n".join(rows) + "\n")


def write_all(predicted: list, run_dir: str, output_dir: str) -> list[str]:
  """Predicts each (file, indices, texts) of `predicted` with the run in `run_dir` into
  `output_dir`/file; returns the paths written."""
  predict = Predictor(run_dir)
  written = []
  for file, indices, texts in predicted:
    written.append(os.path.join(output_dir, file))
    write_predictions(written[-1], indices, predict(texts), predict.kind)
  return written

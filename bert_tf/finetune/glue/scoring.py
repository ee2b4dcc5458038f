"""A GLUE task's dev figures, by the task's own metrics (fine-tuning computes them after each
epoch and keeps the epoch with the best task score), and its test predictions in the files the
GLUE server takes (the run's exported SavedModel, the model a user serves, predicts them:
`finetune/predictor.py`)."""

import os

import numpy as np
import tensorflow as tf

from bert_tf import files
from bert_tf.finetune import metrics
from bert_tf.finetune.glue import tasks
from bert_tf.finetune.glue.tasks import GlueTask

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


def prediction_text(prediction, kind: str) -> str:
  return f"{prediction:.3f}" if kind == "regress" else str(prediction)


def write_predictions(path: str, indices: list[str], predictions: list, kind: str) -> None:
  """The GLUE server's layout: a header row `index<TAB>prediction`, then a row per example."""
  rows = ["index\tprediction"] + [f"{index}\t{prediction_text(prediction, kind)}"
                                  for index, prediction in zip(indices, predictions)]
  tf.io.gfile.makedirs(os.path.dirname(path))
  files.write_text(path, "\n".join(rows) + "\n")

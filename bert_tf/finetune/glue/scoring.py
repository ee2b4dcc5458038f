"""A fine-tuned GLUE task's dev scores, by the task's own metrics, and its test predictions in
the files the GLUE server takes. Predictions come from the run's exported SavedModel
(`output_dir/export`), the model a user serves, so the figures are those of what ships."""

import os

import numpy as np
import tensorflow as tf

from bert_tf import files
from bert_tf.errors import UserError
from bert_tf.finetune import data, metrics
from bert_tf.finetune.glue import tasks
from bert_tf.finetune.glue.tasks import GlueTask

SUBMISSION = "submission"  # the output directory's folder of server files

_METRIC = {tasks.ACCURACY: metrics.accuracy, tasks.F1: metrics.positive_f1,
           tasks.MATTHEWS: metrics.matthews_correlation, tasks.PEARSON: metrics.pearson,
           tasks.SPEARMAN: metrics.spearman}


def read_dev(task: GlueTask, glue_dir: str) -> dict[str, data.Examples]:
  """The task's dev sets by name ("" for a task with one), labels checked against GLUE's."""
  dev = {name: data.read_examples(task.path(glue_dir, file), list(task.text_columns),
                                  task.label_column, header=task.header)
         for name, file in task.dev_files}
  for examples in dev.values():
    check_labels(task, examples)
  return dev


def check_labels(task: GlueTask, examples: data.Examples) -> None:
  """Raises `UserError` when a file's labels are not the task's (a file of another layout)."""
  if task.kind == "regress":
    return
  unknown = sorted(set(examples.labels) - set(task.labels))
  if unknown:
    raise UserError(f"{examples.path}: labels {', '.join(map(repr, unknown[:3]))} are not "
                    f"{task.directory}'s ({', '.join(task.labels)}); is it GLUE's layout?")


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


class Predictor:
  """A fine-tuned run's exported model as a function from texts to predictions: label names
  (the `classify` signature) or numbers (`score`)."""

  def __init__(self, output_dir: str, kind: str, pair: bool):
    self.model = tf.saved_model.load(os.path.join(output_dir, "export"))
    self.kind, self.pair = kind, pair

  def __call__(self, texts: tuple[list[str], ...], batch_size: int = 64) -> list:
    names = ("text_a", "text_b") if self.pair else ("text",)
    signature = self.model.signatures["score" if self.kind == "regress" else "classify"]
    predictions = []
    for start in range(0, len(texts[0]), batch_size):
      outputs = signature(**{name: tf.constant(column[start:start + batch_size])
                             for name, column in zip(names, texts)})
      if self.kind == "regress":
        predictions += [float(v) for v in np.reshape(outputs["score"].numpy(), [-1])]
      else:
        predictions += [label.decode() for label in outputs["label"].numpy()]
    return predictions


def dev_scores(task: GlueTask, dev: dict[str, data.Examples], output_dir: str) -> dict:
  """The fine-tuned run in `output_dir` scored on each of the task's dev sets (`read_dev`)."""
  predict = Predictor(output_dir, task.kind, pair=len(task.text_columns) == 2)
  return scores(task, {name: examples.labels for name, examples in dev.items()},
                {name: predict(examples.texts) for name, examples in dev.items()})


def read_test(path: str, text_columns, index_column: str | None = "index", *,
              header: bool = True) -> tuple[list[str], tuple[list[str], ...]]:
  """(indices, texts) of a file to predict: its `index_column` when it has one (by name, in a
  file with a header row), else the rows' numbers from 0."""
  names, rows = data.read_rows(path, header=header)
  columns = [data.column_index(path, names, column, len(rows[0])) for column in text_columns]
  if names is not None and index_column in names:
    indices = [row[names.index(index_column)] for row in rows]
  else:
    indices = [str(i) for i in range(len(rows))]
  return indices, tuple([row[i] for row in rows] for i in columns)


def prediction_text(prediction, kind: str) -> str:
  return f"{prediction:.3f}" if kind == "regress" else prediction


def write_predictions(path: str, indices: list[str], predictions: list, kind: str) -> None:
  """The GLUE server's layout: a header row `index<TAB>prediction`, then a row per example."""
  rows = ["index\tprediction"] + [f"{index}\t{prediction_text(prediction, kind)}"
                                  for index, prediction in zip(indices, predictions)]
  tf.io.gfile.makedirs(os.path.dirname(path))
  files.write_text(path, "\n".join(rows) + "\n")


def read_test_files(task: GlueTask, glue_dir: str) -> list:
  """[(server's file name, indices, texts)] of the task's test files (AX.tsv's when GLUE's
  diagnostic set is there)."""
  found = []
  for server_file, test_file in task.test_files:
    path = task.path(glue_dir, test_file)
    if server_file == "AX.tsv" and not tf.io.gfile.exists(path):
      continue  # the diagnostic set is optional
    found.append((os.path.join(SUBMISSION, server_file),
                  *read_test(path, task.columns_of_test, task.test_index_column)))
  return found


def write_all(predicted: list, run_dir: str, *, kind: str, pair: bool,
              output_dir: str) -> list[str]:
  """Predicts each (file, indices, texts) of `predicted` with the run in `run_dir` into
  `output_dir`/file; returns the paths written."""
  predict = Predictor(run_dir, kind, pair)
  written = []
  for file, indices, texts in predicted:
    written.append(os.path.join(output_dir, file))
    write_predictions(written[-1], indices, predict(texts), kind)
  return written

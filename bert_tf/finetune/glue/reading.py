"""A GLUE task's files read as the benchmark ships them (`tasks.TASKS` gives each one's
columns, header row or none, dev sets and test files): the training set and every dev set,
labels checked against the task's, and the test files' indices and texts.

GLUE's files are not quite clean: QQP's training file has a few rows missing fields (a question
cut by a line break), which the reference readers skip; so are they here, training and dev,
with a warning counting them. A test file is read whole, since the server wants every index.
"""

import os

import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.finetune import data
from bert_tf.finetune.glue.tasks import GlueTask

SUBMISSION = "submission"  # the output directory's folder of the server's files


def check_labels(task: GlueTask, examples: data.Examples) -> None:
  """Raises `UserError` when a file's labels are not the task's (a file of another layout)."""
  if task.kind == "regress":
    return
  unknown = sorted(set(examples.labels) - set(task.labels))
  if unknown:
    raise UserError(f"{examples.path}: labels {', '.join(map(repr, unknown[:3]))} are not "
                    f"{task.directory}'s ({', '.join(task.labels)}); is it GLUE's layout?")


def read_examples(task: GlueTask, glue_dir: str, file: str) -> data.Examples:
  """One labelled file of the task (train.tsv, a dev file), its labels checked."""
  examples = data.read_examples(task.path(glue_dir, file), list(task.text_columns),
                                task.label_column, header=task.header, skip_malformed=True)
  check_labels(task, examples)
  return examples


def read_splits(task: GlueTask, glue_dir: str) -> tuple[data.Examples, dict[str, data.Examples]]:
  """(the training set, {dev set's name ("" for a task with one): its examples})."""
  return (read_examples(task, glue_dir, task.train_file),
          {name: read_examples(task, glue_dir, file) for name, file in task.dev_files})


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


def read_test_files(task: GlueTask, glue_dir: str) -> list:
  """[(server's file name under `SUBMISSION`, indices, texts)] of the task's test files
  (AX.tsv's when GLUE's diagnostic set is there)."""
  found = []
  for server_file, test_file in task.test_files:
    path = task.path(glue_dir, test_file)
    if server_file == "AX.tsv" and not tf.io.gfile.exists(path):
      continue  # the diagnostic set is optional
    found.append((os.path.join(SUBMISSION, server_file),
                  *read_test(path, task.columns_of_test, task.test_index_column)))
  return found

"""The built-in labelled tasks, one of each kind the corpus lends itself to, made by project
code from Python's language reference (the built-in corpus), so that fine-tuning and the probe
have tasks on every machine without a download:

- `builtin` (classify): which help topic a sentence is from (`builtin_task`);
- `builtin_tag` (tag): the quoted code terms of the prose, in BIO form (`builtin_tagging`);
- `builtin_answer` (answer): SQuAD questions restating a sentence with its quoted term asked
  for (`builtin_answering`);
- `builtin_similar` (regress): how much of a sentence a second one keeps, STS-B-style pairs
  (`builtin_similarity`);
- `builtin_swap` (tag): the words of a sentence swapped for another sentence's, in BIO form
  (`builtin_swaps`): a tagging task that needs the context, as `builtin_tag` does not;
- `builtin_choice` (choose): which of four sentences comes next after a sentence, JSON Lines
  (`builtin_choice`).

A task's name stands for its file of either split wherever a task file is given
(--train_file, --dev_file and their probe_ forms), and a TSV task's for its columns too
(`columns`), as a GLUE task's name does: the column flags are for the user's own files. The
files are written under the data directory, `<data_dir>/<directory>/train<suffix>` and
`dev<suffix>`, on first use.
"""

import os

import tensorflow as tf

from bert_tf import files
from bert_tf.data import (
  builtin_answering,
  builtin_choice,
  builtin_similarity,
  builtin_swaps,
  builtin_tagging,
  builtin_task,
)
from bert_tf.errors import UserError

TASKS = {module.NAME: module for module in (builtin_task, builtin_tagging, builtin_answering,
                                            builtin_similarity, builtin_swaps, builtin_choice)}
_DIRECTORIES = {builtin_task.NAME: "builtin_task"}  # the classification task's, as before
SPLITS = ("train", "dev")


def kind_of(path: str) -> str | None:
  """The task kind of a built-in task's name (`classify`, `regress`, `tag`, `answer`,
  `choose`); None for a file."""
  return TASKS[path].KIND if path in TASKS else None


def columns(path: str) -> tuple[list[str], str] | None:
  """(text columns, label column) of a built-in TSV task's name; None for a file or a task
  of another format."""
  task = TASKS.get(path)
  return (list(task.TEXT_COLUMNS), task.LABEL_COLUMN) if task and task.SUFFIX == ".tsv" else None


def task_files(name: str, data_dir: str) -> tuple[str, str]:
  """The paths of the built-in task `name`'s training and dev files under `data_dir`, written
  when first needed (atomically, so that concurrent first uses do not collide)."""
  task = TASKS[name]
  directory = os.path.join(data_dir, _DIRECTORIES.get(name, name))
  paths = tuple(os.path.join(directory, split + task.SUFFIX) for split in SPLITS)
  if not all(tf.io.gfile.exists(path) for path in paths):
    tf.io.gfile.makedirs(directory)
    for path, text in zip(paths, task.texts()):
      files.write_text(path, text)
  return paths


def resolve(path: str, data_dir: str, split: str, kind: str) -> str:
  """`path`, or the file of `split` ("train" or "dev") of the built-in task `path` names,
  which must be of the task kind `kind` (else a `UserError`)."""
  if split not in SPLITS:
    raise ValueError(f"split {split!r} is not one of {', '.join(SPLITS)}")
  if path not in TASKS:
    return path
  if TASKS[path].KIND != kind:
    same_kind = [name for name, task in TASKS.items() if task.KIND == kind]
    raise UserError(f"{path} is the built-in {TASKS[path].KIND} task, not a {kind} task: use "
                    f"--task={TASKS[path].KIND} (" + (
                        f"the built-in {kind} task is {same_kind[0]})" if same_kind else
                        f"there is no built-in {kind} task)"))
  return task_files(path, data_dir)[SPLITS.index(split)]

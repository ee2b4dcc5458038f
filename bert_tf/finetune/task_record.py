"""task.json: what a fine-tuned model needs to be served, exported or checked, beside its
weights: the task's kind, labels and text settings, and question answering's windows and
answer settings. Written by the run (`training.write_output_dir`), read by the export, the
GLUE predictions and `python -m bert_tf.export`, here and only here."""

import dataclasses
import json
import os

import tensorflow as tf

from bert_tf import files
from bert_tf.errors import UserError
from bert_tf.finetune.output_dir import TASK_FILE
from bert_tf.task_kinds import NAMES


@dataclasses.dataclass(frozen=True)
class TaskRecord:
  """A fine-tuned model's task, as task.json holds it (its field names are the file's)."""

  task: str  # the kind's name (`bert_tf.task_kinds.NAMES`)
  labels: list[str]  # class or tag names, in the order of the logits; [] for the others
  pair: bool  # whether an example is a pair of texts
  seq_length: int
  lower_case: bool
  # answer: its windows and how an answer is chosen (the flags of the same names); absent
  # from the file of any other kind.
  max_query_length: int | None = None
  doc_stride: int | None = None
  max_answer_length: int | None = None
  n_best_size: int | None = None
  null_score_diff_threshold: float | None = None
  version_2_with_negative: bool | None = None

  def to_json(self) -> dict:
    """The record as task.json holds it: the fields of its kind."""
    return {name: value for name, value in dataclasses.asdict(self).items()
            if value is not None}

  @classmethod
  def from_json(cls, values, path: str = TASK_FILE) -> "TaskRecord":
    """The record of task.json's `values` (read from `path`); a one-line UserError for a file
    of no known kind, or without a field its kind needs."""
    if not isinstance(values, dict) or values.get("task") not in NAMES:
      raise UserError(f"{path}: 'task' is none of {', '.join(NAMES)}")
    fields = dataclasses.fields(cls)
    missing = [field.name for field in fields
               if field.default is dataclasses.MISSING and field.name not in values]
    if missing:
      raise UserError(f"{path}: a {values['task']} task needs {', '.join(missing)}")
    return cls(**{field.name: values[field.name] for field in fields if field.name in values})

  def write(self, directory: str) -> None:
    files.write_json(os.path.join(directory, TASK_FILE), self.to_json())


def read_task(directory: str) -> TaskRecord:
  """The task.json of the output_dir `directory`."""
  path = os.path.join(directory, TASK_FILE)
  with tf.io.gfile.GFile(path) as f:
    try:
      values = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
      raise UserError(f"{path} is not valid JSON: {e}") from None
  return TaskRecord.from_json(values, path)

"""The GLUE tasks as the benchmark distributes them: for each, its directory, files, columns,
header row or none, label names, kind and metrics. Plain data, no TensorFlow.

The layouts are those of the files GLUE's download gives: a header row everywhere except
CoLA's train.tsv and dev.tsv (source, label, original label, sentence); test files have an
index column and no label; MNLI has a matched and a mismatched dev and test set; the
diagnostic set (AX) sits in `diagnostic/diagnostic.tsv` and is predicted by the MNLI model.
"""

import dataclasses
import os

from bert_tf.errors import UserError
from bert_tf.finetune.finetune_settings import FinetuneConfig

# Metric names: the keys of a task's dev scores (`scoring.dev_scores`), prefixed with the dev
# set's name where a task has two (MNLI's `matched_accuracy`).
ACCURACY, F1, MATTHEWS, PEARSON, SPEARMAN = (
    "accuracy", "f1", "matthews_correlation", "pearson", "spearman")


@dataclasses.dataclass(frozen=True)
class GlueTask:
  """One GLUE task's files and scoring."""

  name: str                       # the --glue_task value
  directory: str                  # under --glue_dir
  kind: str                       # classify or regress (FinetuneConfig.task)
  text_columns: tuple[str, ...]   # one, or two for a pair; numbers when there is no header
  label_column: str
  metrics: tuple[str, ...]
  labels: tuple[str, ...] = ()    # the label names GLUE uses (a classification's)
  header: bool = True             # train.tsv and dev.tsv have a header row
  dev_files: tuple[tuple[str, str], ...] = (("", "dev.tsv"),)  # (dev set's name, file)
  # (file the server takes, test file); test files always have a header row.
  test_files: tuple[tuple[str, str], ...] = ()
  test_text_columns: tuple[str, ...] = ()  # when they differ from the training file's
  test_index_column: str = "index"

  @property
  def train_file(self) -> str:
    return "train.tsv"

  @property
  def dev_names(self) -> list[str]:
    return [name for name, _ in self.dev_files]

  @property
  def score_names(self) -> list[str]:
    """Every dev figure the task reports: its metrics on each dev set."""
    return [f"{dev}_{metric}" if dev else metric
            for dev in self.dev_names for metric in self.metrics]

  @property
  def columns_of_test(self) -> tuple[str, ...]:
    return self.test_text_columns or self.text_columns

  def path(self, glue_dir: str, file: str) -> str:
    return os.path.join(glue_dir, self.directory, file)


_BINARY = ("0", "1")
_TWO_WAY = ("entailment", "not_entailment")
_PAIR = ("sentence1", "sentence2")

TASKS = {task.name: task for task in [
    GlueTask("cola", "CoLA", "classify", ("3",), "1", (MATTHEWS,), _BINARY, header=False,
             test_files=(("CoLA.tsv", "test.tsv"),), test_text_columns=("sentence",)),
    GlueTask("sst2", "SST-2", "classify", ("sentence",), "label", (ACCURACY,), _BINARY,
             test_files=(("SST-2.tsv", "test.tsv"),)),
    GlueTask("mrpc", "MRPC", "classify", ("#1 String", "#2 String"), "Quality", (F1, ACCURACY),
             _BINARY, test_files=(("MRPC.tsv", "test.tsv"),)),
    GlueTask("qqp", "QQP", "classify", ("question1", "question2"), "is_duplicate",
             (F1, ACCURACY), _BINARY, test_files=(("QQP.tsv", "test.tsv"),),
             test_index_column="id"),
    GlueTask("stsb", "STS-B", "regress", _PAIR, "score", (PEARSON, SPEARMAN),
             test_files=(("STS-B.tsv", "test.tsv"),)),
    GlueTask("mnli", "MNLI", "classify", _PAIR, "gold_label", (ACCURACY,),
             ("contradiction", "entailment", "neutral"),
             dev_files=(("matched", "dev_matched.tsv"), ("mismatched", "dev_mismatched.tsv")),
             test_files=(("MNLI-m.tsv", "test_matched.tsv"),
                         ("MNLI-mm.tsv", "test_mismatched.tsv"),
                         ("AX.tsv", os.path.join("..", "diagnostic", "diagnostic.tsv")))),
    GlueTask("qnli", "QNLI", "classify", ("question", "sentence"), "label", (ACCURACY,),
             _TWO_WAY, test_files=(("QNLI.tsv", "test.tsv"),)),
    GlueTask("rte", "RTE", "classify", _PAIR, "label", (ACCURACY,), _TWO_WAY,
             test_files=(("RTE.tsv", "test.tsv"),)),
    GlueTask("wnli", "WNLI", "classify", _PAIR, "label", (ACCURACY,), _BINARY,
             test_files=(("WNLI.tsv", "test.tsv"),)),
]}


def glue_task(name: str) -> GlueTask:
  if name not in TASKS:
    raise UserError(f"unknown --glue_task {name!r}: use one of {', '.join(TASKS)}")
  return TASKS[name]


def present_tasks(glue_dir: str) -> list[GlueTask]:
  """The tasks whose training file is in `glue_dir`, in GLUE's order."""
  return [task for task in TASKS.values()
          if os.path.isfile(task.path(glue_dir, task.train_file))]


def task_config(task: GlueTask, config: FinetuneConfig) -> FinetuneConfig:
  """`config` with the task's training and first dev file, columns, header
  and kind in place of its own."""
  return dataclasses.replace(
      config, train_file=task.path(config.glue_dir, task.train_file),
      dev_file=task.path(config.glue_dir, task.dev_files[0][1]),
      text_columns=",".join(task.text_columns), label_column=task.label_column,
      no_header=not task.header, task=task.kind)

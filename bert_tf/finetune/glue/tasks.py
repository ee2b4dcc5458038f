"""The GLUE tasks as the benchmark distributes them: for each, its directory, files, columns,
header row or none, label names, kind and metrics. Plain data, no TensorFlow.

The layouts are those of the files GLUE's download gives: a header row everywhere except
CoLA's train.tsv and dev.tsv (source, label, original label, sentence); test files have an
index column and no label; MNLI has a matched and a mismatched dev and test set; the
diagnostic set (AX) sits in `diagnostic/diagnostic.tsv` and is predicted by the MNLI model.
"""

import dataclasses
import os

import numpy as np

from bert_tf.errors import UserError

# Metric names: the keys of a task's dev figures (`scoring.scores`), prefixed with the dev
# set's name where a task has two (MNLI's `matched_accuracy`).
ACCURACY, F1, MATTHEWS, PEARSON, SPEARMAN = (
    "accuracy", "f1", "matthews_correlation", "pearson", "spearman")
SCORE = "glue_score"  # a task's score (`GlueTask.score`) among its figures


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

  def score(self, figures: dict, prefix: str = "") -> float:
    """The task's score, as GLUE scores a task: the mean of its figures (`score_names`, each
    read as `prefix` + name), so MRPC's and QQP's F1 and accuracy, STS-B's Pearson and
    Spearman, MNLI's matched and mismatched accuracy count alike, and CoLA's Matthews
    correlation alone. The one number that picks the epoch a run keeps, the grid's best cell
    and its best seed, and the table's score."""
    return float(np.mean([figures[prefix + name] for name in self.score_names]))

  @property
  def pair(self) -> bool:
    return len(self.text_columns) == 2

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


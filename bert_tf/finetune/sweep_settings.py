"""`SweepConfig`: the settings of `python -m bert_tf.finetune` beyond one run: a GLUE task read
as distributed, predictions of a test file, and the same fine-tune over seeds and a grid of
learning rates and batch sizes. No TensorFlow import."""

import dataclasses

from bert_tf.errors import UserError
from bert_tf.finetune.glue.tasks import glue_task
from bert_tf.settings import NOTED, setting


def number_list(text: str, number_type: type, flag: str) -> list:
  """`--seeds=0,1,2` as [0, 1, 2]; [] for an empty value."""
  try:
    return [number_type(value) for value in text.split(",") if value.strip()]
  except ValueError:
    raise UserError(f"--{flag} {text!r}: give numbers separated by commas") from None


@dataclasses.dataclass(frozen=True)
class SweepConfig:
  """GLUE's tasks as distributed, test predictions, and runs over seeds and a grid."""

  glue_task: str = setting(
      "", "A GLUE task read from --glue_dir as distributed (cola, sst2, mrpc, qqp, stsb, "
      "mnli, qnli, rte, wnli): its files, columns, kind and metrics, its score choosing the "
      "epoch kept; replaces --train_file, --dev_file, the columns and --task.", change=NOTED)
  glue_dir: str = setting("", "GLUE's directory: CoLA/, SST-2/, MRPC/, ... (and diagnostic/).",
                          change=NOTED)
  predict_file: str = setting(
      "", "After fine-tuning, predict this TSV (its --text_columns; an `index` column if it "
      "has one) into output_dir/predictions.tsv as `index<TAB>prediction`; with --glue_task, "
      "`test` predicts the task's test files into output_dir/submission/ as the GLUE server "
      "takes them.", change=NOTED)
  seeds: str = setting("", "Seeds to fine-tune with, one run each (`0,1,2`); mean and "
                       "standard deviation reported. Default: --seed alone.", change=NOTED)
  learning_rates: str = setting("", "A grid's learning rates (`3e-4,1e-4,5e-5,3e-5`); the "
                                "best mean dev score is kept. Default: --learning_rate.",
                                change=NOTED)
  batch_sizes: str = setting("", "A grid's batch sizes (`8,16,32,64,128`). Default: "
                             "--batch_size.", change=NOTED)

  def check_sweep(self) -> None:
    """Rejects sweep settings that could only fail, before anything trains."""
    if self.glue_task:
      glue_task(self.glue_task)  # a known name
    if self.glue_task and not self.glue_dir:
      raise UserError("--glue_task needs --glue_dir")
    if self.glue_task and self.predict_file not in ("", "test"):
      raise UserError("with --glue_task, --predict_file=test predicts the task's test files "
                      f"(not {self.predict_file!r})")
    lists = [number_list(self.seeds, int, "seeds"),
             number_list(self.learning_rates, float, "learning_rates"),
             number_list(self.batch_sizes, int, "batch_sizes")]
    if min([*lists[1], *lists[2], 1]) <= 0:
      raise UserError("learning rates and batch sizes must be positive")
    if len(set(lists[0])) != len(lists[0]):
      raise UserError(f"--seeds {self.seeds!r} repeats a seed")

  @property
  def sweeps(self) -> bool:
    """Whether the command runs through the sweep (a GLUE task, predictions, several runs)."""
    return bool(self.glue_task or self.predict_file or self.seeds or self.learning_rates
                or self.batch_sizes)

"""`TrainConfig`: every setting of a pre-training run, each declared once.

`TrainConfig` gathers the data settings (`bert_tf.data.data_settings`), the model's
(`bert_tf.model.model_settings`), how the run executes and optimises
(`bert_tf.runtime.runtime_settings`) and the ones declared here: how it is checkpointed,
evaluated and shown. Its fields are `train.py`'s flags (see `bert_tf.settings`). No
TensorFlow import: `train.py` reads its flagfile before TensorFlow loads. How a run goes:
docs/training.md; the design behind the settings: docs/design.md.
"""

import dataclasses

from bert_tf.data.data_settings import (
  RECORDS,
  MixtureConfig,
  PipelineConfig,
  RecordsConfig,
  VocabularyConfig,
)
from bert_tf.errors import UserError
from bert_tf.model.model_settings import ModelConfig
from bert_tf.runtime.runtime_settings import ExecutionConfig, OptimizerConfig
from bert_tf.serving.export_settings import ServingExportConfig
from bert_tf.settings import NOTED, STREAM, setting
from bert_tf.task_kinds import NAMES

ON_NAN = ("stop", "rollback")
MAX_ROLLBACKS = 3  # with --on_nan=rollback, before giving up


@dataclasses.dataclass(frozen=True)
class ProbeConfig:
  """The probe: a labelled task fine-tuned on a copy of the encoder at each evaluation.

  See docs/finetuning.md.
  """

  probe_train_file: str = setting(
      "", "The probe's training file, of any task kind (--probe_task): a TSV with a header row "
      "(--probe_text_columns, --probe_label_column), CoNLL-style, SQuAD JSON, SWAG's CSV or "
      "JSON Lines; or a built-in task: `builtin` (classify), `builtin_similar` (regress), "
      "`builtin_tag` (tag), `builtin_answer` (answer), `builtin_choice` (choose), a TSV one "
      "read by its own columns. Empty: no probe.",
      change=NOTED)
  probe_dev_file: str = setting("", "The probe's dev file, of the training file's kind, or the "
                                "training file's built-in task.", change=NOTED)
  probe_task: str = setting(
      "", "The probe's task kind: classify, regress, tag, answer or choose (as fine-tuning's "
      "--task). Empty: read from --probe_train_file (a built-in task's kind; answer for .json; "
      "choose for .csv and .jsonl; tag for a file whose first line ends in a BIO tag; else "
      "classify).", choices=("", *NAMES),
      change=NOTED)
  probe_text_columns: str = setting(
      "text", "The probe's text column, or two for a pair of texts (`sentence1,sentence2`); "
      "a built-in task's files are read by their own.", change=NOTED)
  probe_label_column: str = setting("label", "The probe's label column.", change=NOTED)
  probe_steps: int = setting(50, "Fine-tuning steps of each probe (batches of 32).",
                             change=NOTED)

  def check(self) -> None:
    """Both probe files or neither, and positive --probe_steps (the files are read later)."""
    if not (self.probe_train_file or self.probe_dev_file):
      return
    if not (self.probe_train_file and self.probe_dev_file):
      raise UserError("give both --probe_train_file and --probe_dev_file")
    if self.probe_steps <= 0:
      raise UserError(f"probe_steps {self.probe_steps} must be positive")


@dataclasses.dataclass(frozen=True)
class TrainConfig(ServingExportConfig, ProbeConfig, OptimizerConfig, ExecutionConfig,
                  ModelConfig, RecordsConfig, PipelineConfig, MixtureConfig, VocabularyConfig):
  """Everything one run needs; field names are `train.py`'s flag names.

  The defaults are a small BERT on the built-in corpus in minutes on a laptop, with original
  BERT's masking rate and dropout; configs/quickstart.flags (also what a bare `python train.py`
  runs) raises the one and removes the other, so that a short run learns words sooner.
  """

  model_dir: str = setting("runs/quickstart", "Checkpoints, TensorBoard logs, flags.txt, "
                           "metrics.json and export/.", change=NOTED)
  eval_files: str = setting("", "Held-out corpus evaluated while training and at the end (same "
                            "forms as --input_files).", change=NOTED)
  eval_fraction: float = setting(
      0.0, "Instead of --eval_files: hold out this share of the training corpus's documents, "
      "chosen by a hash of each document's text (never trained on, whatever the shard or "
      "epoch), and evaluate on them.", change=STREAM)
  eval_every: int = setting(0, "Steps between held-out evaluations, a multiple of "
                            "--checkpoint_every (0: every checkpoint).", change=NOTED)
  eval_steps: int = setting(50, "Batches measured for the final metrics and each held-out "
                            "evaluation.", change=NOTED)
  steps_per_execution: int = setting(1, "Train steps per call into the graph.", change=NOTED)
  checkpoint_every: int = setting(500, "Steps between checkpoints (a re-run resumes from the "
                                  "last one).", change=NOTED)
  keep_checkpoints: int = setting(3, "Checkpoints kept.", change=NOTED)
  on_nan: str = setting(
      "stop", "On a non-finite loss: stop (nothing saved), or roll back to the last checkpoint "
      f"and go on after the offending batches (at most {MAX_ROLLBACKS} times).", choices=ON_NAN,
      change=NOTED)
  log_every: int = setting(
      20, "Steps between training scalars (TensorBoard, history.jsonl, the progress line): "
      "each the mean over those steps only, at the global step.", change=NOTED)
  peak_tflops: float = setting(0.0, "The device's dense peak TFLOP/s at this precision, all "
                               "devices together: model-FLOPs utilisation is logged with it.",
                               change=NOTED)
  verbose: bool = setting(True, "Show one progress line for the run, rewritten in place on a "
                          "terminal, a line every few steps otherwise.", change=NOTED)

  def check(self) -> None:
    """Rejects settings that could only fail or train wrongly, before any file is read: each
    group's own fields (its `check`), this class's, then every check across settings of
    different groups, all of them here."""
    for group in (PipelineConfig, MixtureConfig, RecordsConfig, ModelConfig, OptimizerConfig,
                  ProbeConfig, ExecutionConfig):
      group.check(self)
    if min(self.checkpoint_every, self.keep_checkpoints, self.log_every, self.eval_steps) <= 0:
      raise UserError("checkpoint_every, keep_checkpoints, log_every and eval_steps must be "
                      "positive")
    if self.input_format != RECORDS and (self.remask or self.record_compression or
                                         not self.shuffle_records):
      raise UserError("--remask, --record_compression and --noshuffle_records are for "
                      "records: give --input_format=tfrecord")
    if self.input_format == RECORDS and self.input_weights:
      raise UserError("--input_weights mixes text corpora: records are not mixed")
    if self.input_format == RECORDS and self.add_vocabulary:
      raise UserError("--add_vocabulary is not for records: they hold the ids of the vocabulary "
                      "they were made with")
    if self.input_format == RECORDS and not self.nsp:
      raise UserError("--nonsp is not for records: they hold their pairs and labels")
    if self.eval_files and self.eval_fraction:
      raise UserError("give --eval_files or --eval_fraction, not both")
    if not 0 <= self.eval_fraction < 1:
      raise UserError(f"eval_fraction {self.eval_fraction} is not in [0, 1)")
    if self.steps_per_execution <= 0:
      raise UserError("steps_per_execution must be positive")
    # Across groups. Keras calls back once per `steps_per_execution` updates: every checkpoint
    # and the end of training must fall on a call.
    for name, value in (("checkpoint_every", self.checkpoint_every),
                        ("train_steps", self.train_steps)):
      if value % self.steps_per_execution:
        raise UserError(f"{name} {value} is not a multiple of steps_per_execution "
                        f"{self.steps_per_execution}: checkpoints and the end of training fall "
                        "only between executions")
    if self.eval_every < 0 or self.eval_every % self.checkpoint_every:
      raise UserError(f"eval_every {self.eval_every} is not a multiple of checkpoint_every "
                      f"{self.checkpoint_every} (evaluations run at checkpoint intervals' ends)")
    if self.eval_every and not (self.eval_files or self.eval_fraction or self.probe_train_file):
      raise UserError("--eval_every needs held-out data (--eval_files or --eval_fraction) or a "
                      "probe (--probe_train_file)")

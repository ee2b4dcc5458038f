"""`FinetuneConfig`: every setting of `python -m bert_tf.finetune`, each declared once (see
`bert_tf.settings`). The defaults are in the range the BERT paper used for GLUE (3 epochs, a
peak learning rate of 5e-5, batches of 32, warm-up over the first 10% of the steps); question
answering's are run_squad.py's (sequences of 384 tokens, a stride of 128, questions of 64). No
TensorFlow import: the flags are read before TensorFlow loads."""

import dataclasses

from bert_tf.data.data_settings import ColumnsConfig, DataDirConfig
from bert_tf.errors import UserError
from bert_tf.finetune.sweep_settings import SweepConfig
from bert_tf.runtime.runtime_settings import ExecutionConfig
from bert_tf.serving.export_settings import ServingExportConfig
from bert_tf.settings import MODEL, NOTED, STREAM, check_choices, setting
from bert_tf.task_kinds import DEFAULT_SEQ_LENGTH, NAMES, SEQ_LENGTHS


@dataclasses.dataclass(frozen=True)
class FinetuneConfig(ServingExportConfig, ColumnsConfig, ExecutionConfig, DataDirConfig,
                     SweepConfig):
  """Fine-tuning an encoder on a task of any of the five kinds; field names are the flags."""

  task: str = setting(
      "classify", "The task's kind. classify: a label per text or pair (TSV). regress: a number "
      "per text or pair (TSV). tag: a tag per word (CoNLL-style). answer: the answer's span in "
      "a context (SQuAD v1.1/v2.0 JSON). choose: the right ending of a context (SWAG's CSV, or "
      "JSON Lines of context, endings and label).", choices=NAMES, change=MODEL)
  model_dir: str = setting(
      "", "The encoder: a finished train.py model_dir, an original BERT checkpoint (with "
      "bert_config.json and vocab.txt beside it) or a Hugging Face BERT directory.",
      change=NOTED)
  train_file: str = setting("", "Training file: a TSV with a header row (classify, regress), "
                            "CoNLL-style (tag), SQuAD JSON (answer), SWAG's CSV or JSON Lines "
                            "(choose); or a built-in task: `builtin` (classify), "
                            "`builtin_similar` (regress), `builtin_tag` (tag), `builtin_answer` "
                            "(answer), `builtin_choice` (choose), a TSV one read by its own "
                            "columns.", change=STREAM)
  dev_file: str = setting("", "Dev file, of the training file's kind, scored after each epoch; "
                          "or the training file's built-in task.", change=NOTED)
  output_dir: str = setting("", "Where metrics.json, task.json, the best epoch's "
                            "model.weights.h5, logs/ and export/ go.", change=NOTED)
  epochs: int = setting(3, "Passes over the training file.", change=NOTED)
  learning_rate: float = setting(5e-5, "Peak learning rate (AdamW, linear warm-up and decay).",
                                 change=NOTED)
  batch_size: int = setting(32, "Examples per update, across all replicas.", change=STREAM)
  seq_length: int | None = setting(
      None, f"Tokens per example, [CLS] and [SEP]s included; longer texts are cut, the longer "
      f"of a pair first. Default {DEFAULT_SEQ_LENGTH}" + "".join(
          f", {length} for --task={name}" for name, length in SEQ_LENGTHS.items()
          if length != DEFAULT_SEQ_LENGTH) + ".",
      change=STREAM)
  warmup_proportion: float = setting(0.1, "Share of the updates over which the learning rate "
                                     "warms up.", change=NOTED)
  from_scratch: bool = setting(False, "Random weights instead of the encoder's (the same "
                               "model and recipe): what pre-training bought.", change=NOTED)
  checkpoint_every: int = setting(
      1000, "Steps between checkpoints in output_dir/checkpoints, besides one at the end of "
      "training; the same command run again resumes from the latest. Removed once the "
      "output_dir is written.", change=NOTED)
  max_query_length: int = setting(64, "answer: a question's tokens kept, the rest cut.",
                                  change=STREAM)
  doc_stride: int = setting(128, "answer: tokens between the starts of a long context's "
                            "windows; smaller than the room a window leaves the context.",
                            change=STREAM)
  max_answer_length: int = setting(30, "answer: the longest answer chosen, in tokens.",
                                   change=NOTED)
  n_best_size: int = setting(20, "answer: the starts and ends paired in each window, and the "
                             "candidates kept in nbest_predictions.json.", change=NOTED)
  null_score_diff_threshold: float = setting(
      0.0, "answer, v2.0: answer nothing when the no-answer score beats the best span's by "
      "more than this.", change=NOTED)
  version_2_with_negative: bool = setting(
      False, "answer: questions may have no answer (SQuAD v2.0); also on when either file "
      "has an unanswerable question.", change=NOTED)

  def __post_init__(self):
    super().__post_init__()  # the strategy --cluster implies
    if self.seq_length is None:  # the kind's default: a frozen field set once, here
      object.__setattr__(self, "seq_length", SEQ_LENGTHS.get(self.task, DEFAULT_SEQ_LENGTH))

  def check(self) -> None:
    """Rejects settings that could only fail, before any file is read."""
    check_choices(self)
    ExecutionConfig.check(self)
    if not self.model_dir or not self.output_dir:
      raise UserError("--model_dir and --output_dir are needed")
    if min(self.epochs, self.batch_size, self.checkpoint_every) <= 0 or self.learning_rate <= 0:
      raise UserError("epochs, batch_size, checkpoint_every and learning_rate must be positive")
    if self.seq_length < 4:
      raise UserError(f"seq_length {self.seq_length} is too short (at least 4)")
    if not 0 <= self.warmup_proportion <= 1:
      raise UserError(f"warmup_proportion {self.warmup_proportion} is not in [0, 1]")
    if min(self.max_answer_length, self.n_best_size) <= 0:
      raise UserError("max_answer_length and n_best_size must be positive")
    if self.predict_file and not self.serving_export:
      raise UserError("--predict_file is predicted by the serving SavedModel: drop "
                      "--noserving_export")
    self.check_sweep()

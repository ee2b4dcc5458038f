"""`FinetuneConfig`: every setting of `python -m bert_tf.finetune`, each declared once (see
`bert_tf.settings`). The defaults are in the range the BERT paper used for GLUE (3 epochs, a
peak learning rate of 5e-5, batches of 32, warm-up over the first 10% of the steps). No
TensorFlow import: the flags are read before TensorFlow loads."""

import dataclasses

from bert_tf.data.data_settings import ColumnsConfig, DataDirConfig
from bert_tf.errors import UserError
from bert_tf.settings import check_choices, setting
from bert_tf.runtime.runtime_settings import ExecutionConfig
from bert_tf.finetune.sweep_settings import SweepConfig


@dataclasses.dataclass(frozen=True)
class FinetuneConfig(ColumnsConfig, ExecutionConfig, DataDirConfig, SweepConfig):
  """Fine-tuning an encoder on text classification; field names are the flag names."""

  model_dir: str = setting(
      "", "The encoder: a finished train.py model_dir, an original BERT checkpoint (with "
      "bert_config.json and vocab.txt beside it) or a Hugging Face BERT directory.")
  train_file: str = setting("", "Training TSV with a header row, or `builtin` for the "
                            "built-in task.")
  dev_file: str = setting("", "Dev TSV scored after each epoch, or `builtin`.")
  output_dir: str = setting("", "Where metrics.json, classes.json, logs/ and export/ go.")
  epochs: int = setting(3, "Passes over the training file.")
  learning_rate: float = setting(5e-5, "Peak learning rate (AdamW, linear warm-up and decay).")
  batch_size: int = setting(32, "Examples per update, across all replicas.")
  seq_length: int = setting(128, "Tokens per example, [CLS] and [SEP]s included; longer "
                            "texts are cut, the longer of a pair first.")
  warmup_proportion: float = setting(0.1, "Share of the updates over which the learning rate "
                                     "warms up.")
  from_scratch: bool = setting(False, "Random weights instead of the encoder's (the same "
                               "model and recipe): what pre-training bought.")

  def check(self) -> None:
    """Rejects settings that could only fail, before any file is read."""
    check_choices(self)
    if not self.model_dir or not self.output_dir:
      raise UserError("--model_dir and --output_dir are needed")
    if min(self.epochs, self.batch_size) <= 0 or self.learning_rate <= 0:
      raise UserError("epochs, batch_size and learning_rate must be positive")
    if self.seq_length < 4:
      raise UserError(f"seq_length {self.seq_length} is too short (at least 4)")
    if not 0 <= self.warmup_proportion <= 1:
      raise UserError(f"warmup_proportion {self.warmup_proportion} is not in [0, 1]")

"""`ExportConfig`: the settings of `python -m bert_tf.export`; `ServingExportConfig`: those of
the SavedModel a pre-training or fine-tuning run writes when it ends. Each declared once (see
`bert_tf.settings`). No TensorFlow import: the flags are read before TensorFlow loads."""

import dataclasses

from bert_tf.errors import UserError
from bert_tf.settings import NOTED, check_choices, setting

FORMATS = ("savedmodel", "hf", "keras_hub")


@dataclasses.dataclass(frozen=True)
class ServingExportConfig:
  """The serving SavedModel a run writes when it ends, and its check.

  Pre-training's (train.py) and fine-tuning's (`python -m bert_tf.finetune`) alike."""

  serving_export: bool = setting(
      True, "Write the serving SavedModel (export/) when the run ends; --noserving_export "
      "leaves it out (a phase that another continues, a run judged by its weights; `python -m "
      "bert_tf.export --model_dir=...` writes it from the run's directory at any time).",
      change=NOTED)
  skip_verify: bool = setting(False, "Do not check the serving SavedModel (export/) against "
                              "the Keras model after writing it.", change=NOTED)


@dataclasses.dataclass(frozen=True)
class ExportConfig:
  """Exporting a trained model; field names are the flag names."""

  model_dir: str = setting("", "A train.py model_dir, or a fine-tune's output_dir.")
  format: str = setting("savedmodel", "Export format: savedmodel (serving, raw text in), hf "
                        "(Hugging Face BertForPreTraining, or a fine-tuned model's task class) "
                        "or keras_hub (a preset).",
                        choices=FORMATS)
  output: str = setting("", "Directory to write (replaced if it exists).")
  top_k: int = setting(5, "fill_mask: predictions per [MASK] (savedmodel).")
  skip_verify: bool = setting(False, "Do not load the export as its user will and compare its "
                              "ids and outputs with the trained model's.")

  def check(self) -> None:
    """Rejects settings that could only fail, before any file is read."""
    check_choices(self)
    if not self.model_dir or not self.output:
      raise UserError("--model_dir and --output are needed")
    if self.top_k <= 0:
      raise UserError(f"top_k {self.top_k} must be positive")

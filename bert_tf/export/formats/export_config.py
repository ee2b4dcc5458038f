"""`ExportConfig`: the settings of `python -m bert_tf.export`, declared once (see
`bert_tf.settings`); its choice of format is the registry's (`formats/__init__.py`). No
TensorFlow import: the flags are read before TensorFlow loads."""

import dataclasses

from bert_tf.data.data_settings import ColumnsConfig, DataDirConfig
from bert_tf.errors import UserError
from bert_tf.export.formats import FORMATS
from bert_tf.replaced_outputs import check_apart
from bert_tf.settings import check_choices, setting

QUANTIZATIONS = ("none", "fp16", "int8")


@dataclasses.dataclass(frozen=True)
class ExportConfig(DataDirConfig, ColumnsConfig):
  """Exporting a trained model; field names are the flag names.

  --data_dir and the columns are --dev_file's (litert, onnx)."""

  model_dir: str = setting("", "A train.py model_dir, or a fine-tune's output_dir.")
  format: str = setting("savedmodel", "Export format: " + "; ".join(
      f"{f.name} ({f.description})" for f in FORMATS.values()) + ". litert and onnx write "
      "the model on ids with tokenizer.json (the tokenizers library's), vocab.txt and "
      "portable.json.", choices=tuple(FORMATS))
  output: str = setting("", "Directory to write (replaced if it exists); neither the "
                        "--model_dir, a folder holding it, its checkpoints or files, the "
                        "--dev_file, nor the current directory.")
  top_k: int = setting(5, "fill_mask: predictions per [MASK] (savedmodel).")
  quantize: str = setting("none", "litert, onnx: none (float32), fp16 (float16 weights) or "
                          "int8 (dynamic-range int8 weights).", choices=QUANTIZATIONS)
  seq_length: int = setting(0, "litert, onnx: the tokens of the model's inputs; 0: the run's "
                            "or the fine-tune's sequence length.")
  dev_file: str = setting("", "litert, onnx of a fine-tune: a dev file of its task (or its "
                          "built-in task's name) on which the converted model's dev figure "
                          "(its kind's first) is printed beside the Keras model's.")
  skip_verify: bool = setting(False, "Do not load the export as its user will and compare its "
                              "ids and outputs with the trained model's.")

  def check(self) -> None:
    """Rejects settings that could only fail, before any file is read."""
    check_choices(self)
    if not self.model_dir or not self.output:
      raise UserError("--model_dir and --output are needed")
    check_apart(self.output, {"--model_dir": self.model_dir, "--dev_file": self.dev_file})
    if self.top_k <= 0:
      raise UserError(f"top_k {self.top_k} must be positive")
    chosen = FORMATS[self.format]
    if not chosen.portable and (self.quantize != "none" or self.seq_length or self.dev_file):
      raise UserError("--quantize, --seq_length and --dev_file are for --format=litert or onnx")
    if self.seq_length < 0 or 0 < self.seq_length < 4:
      raise UserError(f"seq_length {self.seq_length} is too short (at least 4, or 0)")
    if self.dev_file and self.skip_verify:
      raise UserError("--dev_file's figures are part of the check: drop --skip_verify")
    if missing := chosen.missing():
      raise UserError(f"--format={self.format} needs {', '.join(missing)}: pip install "
                      "'bert_tf[portable]'")

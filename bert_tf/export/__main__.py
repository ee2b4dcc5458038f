"""Exports a trained model: `python -m bert_tf.export --model_dir=... --format=... --output=...`.

Formats (`formats/`, one module each, in the registry `formats.FORMATS`): `savedmodel` (serving,
raw text in), `hf` (Hugging Face `BertForPreTraining` directory), `keras_hub` (a `BertBackbone` +
`BertTokenizer` preset), `litert` and `onnx` (the encoder or a fine-tuned model's head on ids,
quantized or not, with a `tokenizers` tokenizer.json: `portable.py`). `--model_dir` may also be
a fine-tune's output_dir (it has task.json): `savedmodel` then serves its task, and `hf` is the
transformers class of its task. Before `wrote`, the export is loaded as its user will load it
and checked against the Keras model (each format's `verify`), unless --skip_verify.
"""

import logging
import sys

from bert_tf import console
from bert_tf.errors import UserError

console.start(sys.argv)  # before TensorFlow is imported: its start-up lines, unless debug
from bert_tf.export.formats import FORMATS  # noqa: E402  (no TensorFlow import)
from bert_tf.export.formats.export_config import ExportConfig  # noqa: E402

log = logging.getLogger("bert_tf")


def export(config: ExportConfig) -> None:
  config.check()
  from bert_tf import model_dir
  from bert_tf.replaced_outputs import check_apart
  check_apart(config.output, model_dir.trained_parts(config.model_dir))  # runs/mine/checkpoints
  from bert_tf.export.formats import export, export_finetuned, verify, verify_finetuned
  from bert_tf.finetune import finetuned
  from bert_tf.serving.trained import load_trained
  if FORMATS[config.format].portable:
    portable_export(config)
  elif finetuned.is_finetuned(config.model_dir):
    model = finetuned.load_finetuned(config.model_dir)
    exporting(config)
    export_finetuned(model, config.format, config.output)
    if not config.skip_verify:
      print(verify_finetuned(model, config.format, config.output))
  else:
    trained = load_trained(config.model_dir)
    exporting(config)
    export(trained, config.format, config.output, top_k=config.top_k)
    if not config.skip_verify:
      print(verify(trained, config.format, config.output))
  print(f"wrote {config.output}")


def exporting(config: ExportConfig) -> None:
  """Says what is exported where, once the model is read: a model_dir that cannot be read is
  its one error line alone."""
  log.info("Exporting %s as %s to %s", config.model_dir, config.format, config.output)


def portable_export(config: ExportConfig) -> None:
  """`litert` or `onnx`: the encoder of a run, or a fine-tune's task model, on ids; checked
  in its runtime, and with --dev_file its dev figure beside the Keras model's."""
  from bert_tf.export.formats import export_portable, runtime_runner
  from bert_tf.export.formats.portable_verification import verify_portable
  from bert_tf.finetune import finetuned
  from bert_tf.finetune.portable_dev import PortableDev
  from bert_tf.serving.trained import load_trained, portable_encoder
  dev = None
  if finetuned.is_finetuned(config.model_dir):
    model = finetuned.load_finetuned(config.model_dir)
    portable = finetuned.portable_finetuned(model, config.seq_length)
    dev = config.dev_file and PortableDev(
        model.task, portable, config.dev_file, data_dir=config.data_dir,
        text_columns=config.text_columns, label_column=config.label_column,
        header=not config.no_header)
  elif config.dev_file:
    raise UserError("--dev_file is for a fine-tune's output_dir, not a pre-training run")
  else:
    portable = portable_encoder(load_trained(config.model_dir), config.seq_length)
  exporting(config)
  export_portable(portable, config.format, {config.quantize: config.output})
  if not config.skip_verify:
    print(*verify_portable(portable, {(config.format, config.quantize): config.output},
                           dev.texts[:8] if dev else ()))
  if dev:
    print(dev.line(portable, runtime_runner(config.format, config.output),
                   f"{config.format} {config.quantize}"))


if __name__ == "__main__":
  console.run_command(ExportConfig, export)

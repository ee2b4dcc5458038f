"""The export formats, one module each (`savedmodel`, `hf`, `keras_hub`, `litert`, `onnx`),
each making one `format.ExportFormat`; `FORMATS` is their registry, in the order the export
command lists them. A new format is one module here, imported below (docs/design.md).

The functions below take a format by its name, as the command line and the tests give it.
No TensorFlow import: the export command's flags (`export_config.py`) are read before
TensorFlow loads."""

import os

from bert_tf.errors import UserError
from bert_tf.export.formats import hf, keras_hub, litert, onnx, savedmodel
from bert_tf.export.formats.format import FINETUNED, PRETRAINED, ExportFormat

FORMATS = {f.FORMAT.name: f.FORMAT for f in (savedmodel, hf, keras_hub, litert, onnx)}


def _named(names: list[str]) -> str:
  return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]


def _serving(export_format: str, model: str) -> ExportFormat:
  """The format named `export_format`, written from a model (`PRETRAINED` or `FINETUNED`)
  by `write`; a one-line UserError for a name of none such."""
  found = FORMATS.get(export_format)
  if found is None or found.portable or model not in found.serves:
    names = [f.name for f in FORMATS.values() if not f.portable and model in f.serves]
    if model == PRETRAINED:
      raise UserError(f"unknown export format {export_format!r}: use {_named(names)}")
    raise UserError(f"a fine-tuned model exports as {_named(names)}, not {export_format!r}")
  return found


def export(trained, export_format: str, output: str, top_k: int = 5) -> str:
  """Writes the pre-trained `trained` (`export.trained.Trained`) as `savedmodel`, `hf` or
  `keras_hub` to `output`, atomically."""
  return _serving(export_format, PRETRAINED).write(trained, output, top_k)


def verify(trained, export_format: str, output: str) -> str:
  """Checks the export in `output` against `trained`; returns the line saying so, or raises
  UserError."""
  return _serving(export_format, PRETRAINED).verify(trained, output)


def export_finetuned(finetuned, export_format: str, output: str) -> str:
  """Writes a fine-tuned model (`finetune.finetuned.Finetuned`) as `savedmodel` (its task's
  signature) or `hf` (transformers' class for its task) to `output`, atomically."""
  return _serving(export_format, FINETUNED).write_finetuned(finetuned, output)


def verify_finetuned(finetuned, export_format: str, output: str) -> str:
  """Checks the export in `output` against `finetuned`; returns the line saying so, or raises
  UserError."""
  return _serving(export_format, FINETUNED).verify_finetuned(finetuned, output)


def export_portable(portable, export_format: str, directories: dict[str, str]) -> dict[str, str]:
  """Writes the `litert` or `onnx` export of `portable` (`export.portable.PortableModel`) at
  each quantization to its directory ({quantize: directory}) (`PortableFormat.write_portable`)."""
  return FORMATS[export_format].write_portable(portable, directories)


def runtime_runner(export_format: str, directory: str, threads: int = 0):
  """The `litert` or `onnx` export in the local `directory` loaded in its runtime, in this
  process: a function of {input name: int32 array} to {output name: array}. `threads`: the
  runtime's threads (0: its default)."""
  chosen = FORMATS[export_format]
  return chosen.runner(os.path.join(directory, chosen.model_file), threads)

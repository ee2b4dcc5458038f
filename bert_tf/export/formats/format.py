"""What an export format is (`ExportFormat`), and what the two formats on ids share
(`PortableFormat`): each format is one module of `bert_tf/export/formats/` that makes one such
object, `FORMAT`, and the registry (`formats/__init__.py`) imports them all.

A format says what it writes (its name and description), which models it serves (`serves`:
the pre-trained model of a train.py run, a fine-tune's task model), what must be installed to
write and check it (`needs`), how to write it and how to check what it wrote as its user will
load it. No TensorFlow import here or in a format's module (the export command's flags are read
before TensorFlow loads; the fresh process that checks a portable export has none): what a
format writes and checks with is imported when it writes or checks.
"""

import dataclasses
import importlib.util
import os
import tempfile

from bert_tf.errors import UserError

PRETRAINED = "pre-trained"  # a train.py run's model (`export.trained.Trained`)
FINETUNED = "fine-tuned"  # a fine-tune's task model (`finetune.finetuned.Finetuned`)


@dataclasses.dataclass(frozen=True)
class ExportFormat:
  """An export format: `write` writes a model to a directory, `verify` loads it as its user
  will and compares it with the Keras model, returning the line saying so (or raising a
  one-line UserError). A format that serves fine-tuned models writes and checks them too
  (`write_finetuned`, `verify_finetuned`)."""

  name: str
  description: str
  serves: tuple[str, ...] = (PRETRAINED, FINETUNED)
  needs: tuple[str, ...] = ()  # modules imported to convert and check it
  # Largest output difference `verify` allows (`serving/tolerances.py`); a portable format's is
  # its quantization's (`portable_comparison.TOLERANCES`).
  tolerance: float | None = None
  portable = False  # the model on ids, served without TensorFlow (`PortableFormat`)

  def missing(self) -> list[str]:
    """The modules it needs that cannot be imported."""
    return [module for module in self.needs if importlib.util.find_spec(module) is None]

  def write(self, trained, output: str, top_k: int) -> str:
    """Writes the pre-trained `trained` to `output`, atomically; returns `output`."""
    raise NotImplementedError

  def verify(self, trained, output: str) -> str:
    raise NotImplementedError

  def write_finetuned(self, finetuned, output: str) -> str:
    """Writes the fine-tuned model `finetuned` to `output`, atomically; returns `output`."""
    raise NotImplementedError

  def verify_finetuned(self, finetuned, output: str) -> str:
    raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class PortableFormat(ExportFormat):
  """A format of the model on ids (`export.portable.PortableModel`), run without TensorFlow:
  its model file beside tokenizer.json, vocab.txt and portable.json. Its module says how it
  converts (`convert`) and how its runtime loads the file (`runner`); writing and checking are
  the same for each (`write`, `formats/portable_verification.py`)."""

  model_file: str = ""
  portable = True

  def convert(self, portable, quantizations: list[str], scratch: str) -> dict[str, bytes]:
    """{quantize: the model file's bytes} of `portable` at each of `quantizations`."""
    raise NotImplementedError

  def runner(self, model_file: str, threads: int = 0):
    """The model file loaded in its runtime, in this process: a function of {input name:
    int32 array} to {output name: array}. `threads`: the runtime's threads (0: its default).
    The one place bert_tf loads the format into its runtime (the check's fresh process too)."""
    raise NotImplementedError

  def write_portable(self, portable, directories: dict[str, str]) -> dict[str, str]:
    """Writes the export of `portable` at each quantization (none, fp16, int8) to its
    directory ({quantize: directory}), each atomically; returns `directories`. The model is
    converted once and quantized from there (a benchmark or a test that wants them all pays
    one conversion). A converter that fails is a one-line UserError."""
    import tensorflow as tf

    from bert_tf import files
    from bert_tf.serving.portable import DESCRIPTION_FILE, TOKENIZER_FILE
    from bert_tf.serving.portable_tokenizer import write_portable_tokenizer

    with tempfile.TemporaryDirectory() as scratch:
      try:
        models = self.convert(portable, list(directories), scratch)
      except Exception as error:  # noqa: BLE001  any converter's failure, said in one line
        message = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise UserError(f"the {self.name} converter failed ({type(error).__name__}): "
                        f"{message}") from error
      tokenizer_path = os.path.join(scratch, TOKENIZER_FILE)
      write_portable_tokenizer(portable.vocab_file, tokenizer_path,
                               lower_case=portable.lower_case, seq_length=portable.seq_length)
      with open(tokenizer_path, "rb") as f:
        tokenizer = f.read()
    for quantize, directory in directories.items():
      temporary = files.temporary_directory(directory)
      tf.io.gfile.makedirs(temporary)
      files.write_bytes(os.path.join(temporary, self.model_file), models[quantize])
      files.write_bytes(os.path.join(temporary, TOKENIZER_FILE), tokenizer)
      tf.io.gfile.copy(portable.vocab_file, os.path.join(temporary, "vocab.txt"), overwrite=True)
      files.write_json(os.path.join(temporary, DESCRIPTION_FILE),
                       portable.description(self.name, self.model_file, quantize))
      files.replace_directory(temporary, directory)
    return directories

"""The model on ids, for runtimes without TensorFlow: LiteRT (`model.tflite`) and ONNX
(`model.onnx`), float32 or quantized, beside `tokenizer.json` (the `tokenizers` library's),
`vocab.txt` and `portable.json`, which says what goes in and comes out
(docs/serving.md#litert-and-onnx).

The model takes `input_ids`, `token_type_ids` and `attention_mask`, int32 `[batch, tokens]`
(any batch, any length up to `seq_length`, so that a short input pays for its own length): the
encoder gives its sequence and pooled outputs (`encoder_outputs`), a
fine-tuned model its head's outputs as its kind declares them (`TaskKind.portable_outputs`,
passed in by the fine-tuning layer). Both formats start from the same Keras function on ids
(`PortableModel`); each converts it in its own module (`formats/litert.py`, `formats/onnx.py`)
and writes it beside the same tokenizer.json (`formats/format.py`'s `PortableFormat.write`).
"""

import dataclasses
from collections.abc import Callable

import keras
import tensorflow as tf

INPUTS = ("input_ids", "token_type_ids", "attention_mask")
DESCRIPTION_FILE = "portable.json"
TOKENIZER_FILE = "tokenizer.json"

# A pre-trained run's encoder's outputs, and their shapes.
ENCODER_SHAPES = {"sequence_output": ["batch", "seq_length", "hidden_size"],
                  "pooled_output": ["batch", "hidden_size"]}


def encoder_outputs(outputs: dict) -> dict:
  return {name: outputs[name] for name in ENCODER_SHAPES}


@dataclasses.dataclass
class PortableModel:
  """A Keras model on our features and what its portable export needs to know: its kind
  ("encoder" or a fine-tuning kind), its named outputs (`outputs_of` the model's outputs) and
  their `shapes` (dimensions `batch`, `seq_length`, others by name), what portable.json
  carries of its task ({} for the encoder), its vocabulary file, case and sequence length, and
  the shape of its ids inputs (`[batch, seq_length]`, or with another axis between, as
  multiple choice's `[batch, endings, seq_length]`)."""

  model: keras.Model
  kind: str
  outputs_of: Callable[[object], dict]
  shapes: dict[str, list]
  task: dict
  vocab_file: str
  lower_case: bool
  seq_length: int
  input_shape: tuple = ("batch", "seq_length")

  def outputs(self, input_ids, token_type_ids, attention_mask) -> dict:
    """The portable model's outputs on ids."""
    out = self.model({"token_ids": input_ids, "segment_ids": token_type_ids,
                      "padding_mask": attention_mask}, training=False)
    return self.outputs_of(out)

  def input_signature(self) -> list[tf.TensorSpec]:
    """Every axis of any size: the batch, the tokens (up to `seq_length`: the position
    embeddings the model has), multiple choice's endings."""
    shape = [None] * len(self.input_shape)
    return [tf.TensorSpec(shape, tf.int32, name=name) for name in INPUTS]

  def description(self, export_format: str, model_file: str, quantize: str) -> dict:
    """portable.json: the file, its inputs and outputs, and the labels and settings that
    post-processing needs. A shape's `tokens` is the input's length, at most `seq_length`."""
    return {
        "format": export_format, "model_file": model_file,
        "quantize": quantize, "kind": self.kind, "seq_length": self.seq_length,
        "lower_case": self.lower_case, "tokenizer": TOKENIZER_FILE,
        "inputs": {name: {"dtype": "int32", "shape": [*self.input_shape[:-1], "tokens"]}
                   for name in INPUTS},
        "outputs": {name: {"dtype": "float32", "shape": [
            "tokens" if dim == "seq_length" else dim for dim in shape]}
            for name, shape in self.shapes.items()},
        **self.task,
    }


def write_ids_saved_model(portable: PortableModel, directory: str) -> str:
  """The model on ids as a SavedModel (signature `serving_default`), through Keras's
  `ExportArchive`: what the LiteRT converter reads, and the benchmarks' SavedModel on ids."""
  archive = keras.export.ExportArchive()
  archive.track(portable.model)
  archive.add_endpoint("serving_default", portable.outputs,
                       input_signature=portable.input_signature())
  archive.write_out(directory, verbose=False)
  return directory

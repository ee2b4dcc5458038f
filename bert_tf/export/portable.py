"""The model on ids, for runtimes without TensorFlow: LiteRT (`model.tflite`) and ONNX
(`model.onnx`), float32 or quantized, beside `tokenizer.json` (the `tokenizers` library's),
`vocab.txt` and `portable.json`, which says what goes in and comes out
(docs/serving.md#litert-and-onnx).

The model takes `input_ids`, `token_type_ids` and `attention_mask`, int32 `[batch, tokens]`
(any batch, any length up to `seq_length`, so that a short input pays for its own length): the
encoder gives its sequence and pooled outputs (`encoder_outputs`), a
fine-tuned model its head's outputs as its kind declares them (`TaskKind.portable_outputs`,
passed in by the fine-tuning layer). Both formats start from the same Keras function on ids:
LiteRT through TensorFlow's converter on its SavedModel (Keras's `ExportArchive`, which holds
the weights as the converter freezes them), ONNX through tf2onnx on the function wrapped as a
Keras model, its exact GELU's `Erfc` written as `1 - Erf` (ONNX has no Erfc), with only the
one of its graph optimizers that saves size (the others cost memory, not speed), then rewritten
for ONNX Runtime's int8 (`onnx_graph.py`).
"""

import dataclasses
import os
import tempfile
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from bert_tf import files
from bert_tf.errors import UserError
from bert_tf.export.export_settings import FORMATS
from bert_tf.export.portable_tokenizer import write_portable_tokenizer

INPUTS = ("input_ids", "token_type_ids", "attention_mask")
DESCRIPTION_FILE = "portable.json"
TOKENIZER_FILE = "tokenizer.json"
ONNX_OPSET = 17

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

  def description(self, export_format: str, quantize: str) -> dict:
    """portable.json: the file, its inputs and outputs, and the labels and settings that
    post-processing needs. A shape's `tokens` is the input's length, at most `seq_length`."""
    return {
        "format": export_format, "model_file": FORMATS[export_format].model_file,
        "quantize": quantize, "kind": self.kind, "seq_length": self.seq_length,
        "lower_case": self.lower_case, "tokenizer": TOKENIZER_FILE,
        "inputs": {name: {"dtype": "int32", "shape": [*self.input_shape[:-1], "tokens"]}
                   for name in INPUTS},
        "outputs": {name: {"dtype": "float32", "shape": [
            "tokens" if dim == "seq_length" else dim for dim in shape]}
            for name, shape in self.shapes.items()},
        **self.task,
    }


def export_portable(portable: PortableModel, export_format: str,
                    directories: dict[str, str]) -> dict[str, str]:
  """Writes the `litert` or `onnx` export of `portable` at each quantization (none, fp16, int8)
  to its directory ({quantize: directory}), each atomically; returns `directories`. The model
  is converted once and quantized from there (a benchmark or a test that wants them all pays
  one conversion). A converter that fails is a one-line UserError."""
  model_file = FORMATS[export_format].model_file
  with tempfile.TemporaryDirectory() as scratch:
    convert = {"litert": _litert, "onnx": _onnx}[export_format]
    try:
      models = convert(portable, list(directories), scratch)
    except Exception as error:  # noqa: BLE001  any converter's failure, said in one line
      message = (str(error).strip().splitlines() or [type(error).__name__])[0]
      raise UserError(f"the {export_format} converter failed ({type(error).__name__}): "
                      f"{message}") from error
    tokenizer_path = os.path.join(scratch, TOKENIZER_FILE)
    write_portable_tokenizer(portable.vocab_file, tokenizer_path,
                             lower_case=portable.lower_case, seq_length=portable.seq_length)
    with open(tokenizer_path, "rb") as f:
      tokenizer = f.read()
  for quantize, directory in directories.items():
    temporary = files.temporary_directory(directory)
    tf.io.gfile.makedirs(temporary)
    files.write_bytes(os.path.join(temporary, model_file), models[quantize])
    files.write_bytes(os.path.join(temporary, TOKENIZER_FILE), tokenizer)
    tf.io.gfile.copy(portable.vocab_file, os.path.join(temporary, "vocab.txt"), overwrite=True)
    files.write_json(os.path.join(temporary, DESCRIPTION_FILE),
                     portable.description(export_format, quantize))
    files.replace_directory(temporary, directory)
  return directories


def write_ids_saved_model(portable: PortableModel, directory: str) -> str:
  """The model on ids as a SavedModel (signature `serving_default`), through Keras's
  `ExportArchive`: what the LiteRT converter reads, and the benchmarks' SavedModel on ids."""
  archive = keras.export.ExportArchive()
  archive.track(portable.model)
  archive.add_endpoint("serving_default", portable.outputs,
                       input_signature=portable.input_signature())
  archive.write_out(directory, verbose=False)
  return directory


def _litert(portable: PortableModel, quantizations: list[str], scratch: str) -> dict[str, bytes]:
  """{quantize: model.tflite's bytes}, each converted from one SavedModel on ids."""
  saved_model = write_ids_saved_model(portable, os.path.join(scratch, "saved_model"))
  models = {}
  for quantize in quantizations:
    converter = tf.lite.TFLiteConverter.from_saved_model(saved_model)
    if quantize != "none":  # int8: dynamic-range weights; fp16: float16 weights
      converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantize == "fp16":
      converter.target_spec.supported_types = [tf.float16]
    models[quantize] = converter.convert()
  tf.io.gfile.rmtree(saved_model)
  return models


def _onnx(portable: PortableModel, quantizations: list[str], scratch: str) -> dict[str, bytes]:
  """{quantize: model.onnx's bytes}, each quantized from one float32 conversion."""
  import onnx
  import tf2onnx
  from tf2onnx.optimizer.merge_duplicated_nodes_optimizer import MergeDuplicatedNodesOptimizer

  from bert_tf.export.onnx_graph import einsums_as_matmuls, gelus_fused, layer_norms_fused

  # Of tf2onnx's graph optimizers, only the one that merges duplicated constants (without it
  # the file is up to a fifth larger). tf2onnx deep-copies its graph, weights and all, before
  # each optimizer on each pass, and the copies (reference cycles) wait for Python's cyclic
  # collector: with all twelve the conversion grew by about 90x the weights' bytes (bert_small:
  # 5.2 GB, BERT-base's shape killed past 17 GB), with this one alone by what it takes with
  # none (bert_small: 1.2 GB). ONNX Runtime makes its own graph optimizations as it loads the
  # model: as fast either way (docs/serving.md#litert-and-onnx).
  proto, _ = tf2onnx.convert.from_keras(
      _OnIds(portable), input_signature=portable.input_signature(), opset=ONNX_OPSET,
      custom_op_handlers={"Erfc": (_erfc_as_one_minus_erf, [])},
      optimizers={"merge_duplication": MergeDuplicatedNodesOptimizer})
  # What ONNX Runtime's int8 needs to reach every weight and as little else as possible to
  # stay float32: attention's einsums as MatMuls (quantize_dynamic quantizes MatMul only), layer
  # norms and GELUs each one op (bert_tf/export/onnx_graph.py).
  einsums_as_matmuls(proto)
  layer_norms_fused(proto)
  gelus_fused(proto)
  models = {"none": proto.SerializeToString()}
  if "fp16" in quantizations:
    from onnxruntime.transformers.float16 import convert_float_to_float16
    models["fp16"] = convert_float_to_float16(onnx.load_from_string(models["none"]),
                                              keep_io_types=True).SerializeToString()
  if "int8" in quantizations:
    from onnxruntime.quantization import QuantType, quantize_dynamic
    float_path, int8_path = (os.path.join(scratch, name) for name in ("float.onnx", "int8.onnx"))
    with open(float_path, "wb") as f:
      f.write(models["none"])
    # Signed 7-bit weights (QInt8, reduce_range): signed, so that a CPU with VNNI (AVX-512 or
    # AVX) multiplies them with its u8s8 instruction (unsigned weights take a path twice as
    # slow); 7 bits, so that a CPU without (AVX2's VPMADDUBSW, which sums two u8 x s8 products
    # in 16 bits) cannot saturate, as 8-bit signed weights did (a tagger's logits a quarter of
    # their scale off). One file right on both. The Gelu op is ONNX Runtime's, which its shape
    # inference does not know: its tensors are float32.
    quantize_dynamic(float_path, int8_path, weight_type=QuantType.QInt8, reduce_range=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    with open(int8_path, "rb") as f:
      models["int8"] = f.read()
  return models


class _OnIds(keras.Model):
  """The portable model as a Keras model on the three ids inputs, what tf2onnx's `from_keras`
  converts (its route that lets us choose its optimizers; `from_function` has none). tf2onnx
  1.17 traces it with TensorFlow's own `trace_model_call`: it calls the model on the list of
  inputs and names the flattened outputs `output_names` (a dict flattens in its keys' order)."""

  def __init__(self, portable: PortableModel):
    super().__init__(name=portable.kind)
    self.portable = portable
    self.output_names = sorted(portable.shapes)

  def call(self, ids):
    """`ids`: [input_ids, token_type_ids, attention_mask], as tf2onnx passes them."""
    return self.portable.outputs(*ids)


def _erfc_as_one_minus_erf(graph, node, name, args) -> None:
  """tf2onnx's handler of TensorFlow's `Erfc` (the exact GELU's): `1 - Erf(x)`."""
  import tf2onnx

  erf = graph.make_node("Erf", [node.input[0]])
  one = graph.make_const(tf2onnx.utils.make_name("one"), np.array(1, np.float32))
  outputs, node_name = node.output, node.name
  graph.remove_node(node_name)
  graph.make_node("Sub", [one.output[0], erf.output[0]], outputs=outputs, name=node_name)

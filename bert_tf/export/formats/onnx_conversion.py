"""The `onnx` format's conversion: the model on ids through tf2onnx on the function wrapped as
a Keras model, its exact GELU's `Erfc` written as `1 - Erf` (ONNX has no Erfc), with only the
one of its graph optimizers that saves size (the others cost memory, not speed), then rewritten
for ONNX Runtime (`onnx_graph.py`, `onnx_norms.py`, `onnx_attention.py`) and quantized from
there. Imports TensorFlow: the format's module (`onnx.py`) imports this when it converts."""

import logging
import os

import keras
import numpy as np

from bert_tf.serving.portable import PortableModel

ONNX_OPSET = 17
# How onnxruntime.quantization's advice to run `quant_pre_process` first begins.
PRE_PROCESSING_ADVICE = "Please consider to run pre-processing before quantization"


def onnx_models(portable: PortableModel, quantizations: list[str],
                scratch: str) -> dict[str, bytes]:
  """{quantize: model.onnx's bytes}, each quantized from one float32 conversion."""
  import onnx
  import tf2onnx
  from tf2onnx.optimizer.merge_duplicated_nodes_optimizer import MergeDuplicatedNodesOptimizer

  from bert_tf.export.formats import onnx_norms
  from bert_tf.export.formats.onnx_attention import attentions_fused
  from bert_tf.export.formats.onnx_graph import einsums_as_matmuls, tensordots_as_matmuls

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
  # stay float32 (quantize_dynamic quantizes MatMul, Attention and Gather): attention's einsums
  # and the dense layers' tensordots as MatMuls, each attention one Attention (QAttention once
  # quantized), layer norms and GELUs each one op, the residual adds kept out of ONNX Runtime's
  # slower SkipLayerNormalization.
  for rewrite in (einsums_as_matmuls, tensordots_as_matmuls, onnx_norms.layer_norms_fused,
                  onnx_norms.gelus_fused, attentions_fused, onnx_norms.residual_adds_as_sums):
    rewrite(proto)
  models = {"none": proto.SerializeToString()}
  if "fp16" in quantizations:
    from onnxruntime.transformers.float16 import convert_float_to_float16
    models["fp16"] = convert_float_to_float16(onnx.load_from_string(models["none"]),
                                              keep_io_types=True).SerializeToString()
  if "int8" in quantizations:
    models["int8"] = _int8(models["none"], scratch)
  return models


def _int8(model: bytes, scratch: str) -> bytes:
  """The float32 model's bytes quantized to int8 by ONNX Runtime's `quantize_dynamic`.

  Signed 7-bit weights (QInt8, reduce_range): signed, so that a CPU with VNNI (AVX-512 or AVX)
  multiplies them with its u8s8 instruction (unsigned weights take a path twice as slow); 7
  bits, so that a CPU without (AVX2's VPMADDUBSW, which sums two u8 x s8 products in 16 bits)
  cannot saturate, as 8-bit signed weights did (a tagger's logits a quarter of their scale off).
  One file right on both; on VNNI, which sums in 32 bits, 7 bits cost no speed (measured: the
  same time as 8). A scale per output column of each weight (`per_channel`), not one per matrix:
  `QAttention`'s one matrix is the queries', keys' and values' side by side, which one scale
  would share; per column, trained models' largest logit error was smaller in four kinds of five
  (answer's start and end logits 0.10 against 0.16), at the same speed at 128 tokens (1-2%
  slower at 16) (docs/measured.md#onnx-int8-at-the-cpus-ceiling-2026-12-06-issue-54). The Gelu
  op is ONNX Runtime's, which its shape inference does not know: its tensors are float32. Its
  advice to pre-process the model first (`quant_pre_process`) is left out of the export's
  output: its symbolic shape inference fails on this graph (the position embeddings' `min(512,
  tokens)`), and without it the rest changed neither the quantized model's outputs nor its speed
  (docs/serving.md#litert-and-onnx)."""
  import onnx
  from onnxruntime.quantization import QuantType, quantize_dynamic

  float_path, int8_path = (os.path.join(scratch, name) for name in ("float.onnx", "int8.onnx"))
  with open(float_path, "wb") as f:
    f.write(model)
  root = logging.getLogger()
  root.addFilter(_without_pre_processing_advice)
  try:
    quantize_dynamic(float_path, int8_path, weight_type=QuantType.QInt8, reduce_range=True,
                     per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
  finally:
    root.removeFilter(_without_pre_processing_advice)
  with open(int8_path, "rb") as f:
    return f.read()


def _without_pre_processing_advice(record: logging.LogRecord) -> bool:
  """False for `quantize_dynamic`'s warning that the model was not pre-processed."""
  return not record.getMessage().startswith(PRE_PROCESSING_ADVICE)


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

"""The ONNX export's rewrites of tf2onnx's graph for ONNX Runtime (`onnx_graph.py`,
`onnx_norms.py`, `onnx_attention.py` in bert_tf/export/formats), on a two-layer classifier
whose every weight, biases too, is random (an initialised model's zero biases would leave the
projections' bias adds out of the graph): each attention one `Attention` (`QAttention` once
quantized), with dropout and without (Keras computes an attention without dropout another way,
which tf2onnx writes another way), no tensordot reshapes left, no `Add` that ONNX Runtime would
fuse with a layer norm into its slower `SkipLayerNormalization`; the float model's outputs the
Keras model's, a padded row too; and the int8 export's output without onnxruntime's advice to
pre-process."""

import collections
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.export.formats.onnx_conversion import PRE_PROCESSING_ADVICE, onnx_models
from bert_tf.finetune.finetuned import load_finetuned, portable_finetuned
from bert_tf.finetune.model import classifier_model
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from bert_tf.serving.portable_comparison import TOLERANCES
from helpers import run, write_output_dir

LAYERS = 2


def random_classifier(vocab_file: str, directory: str, dropout: float) -> str:
  """A fine-tuned classifier's output_dir, two layers, every weight random, `dropout` its
  configuration's (hidden and attention)."""
  vocabulary = Vocabulary(vocab_file)
  config = BertConfig(vocab_size=len(vocabulary), hidden_size=32, num_hidden_layers=LAYERS,
                      num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                      hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
  keras.utils.set_random_seed(3)
  model = classifier_model(pretraining_model(config).get_layer("bert_encoder"), 3)
  rng = np.random.default_rng(3)
  for weight in model.weights:
    weight.assign(rng.normal(0, 0.2, weight.shape).astype(np.float32))
  task = {"task": "classify", "labels": ["a", "b", "c"], "pair": False, "seq_length": 16,
          "lower_case": True}
  return write_output_dir(directory, model, config, vocabulary, task)


def converted_models(output_dir: str, scratch: str):
  """(the portable model, {quantize: model.onnx's bytes}, what the quantization logged)."""
  portable = portable_finetuned(load_finetuned(output_dir))
  records = []
  handler = logging.Handler()
  handler.emit = records.append
  logging.getLogger().addHandler(handler)
  try:
    models = onnx_models(portable, ["none", "int8"], scratch)
  finally:
    logging.getLogger().removeHandler(handler)
  return portable, models, [record.getMessage() for record in records]


@pytest.fixture(scope="module")
def classifier_dir(vocab_file, tmp_path_factory):
  """With BERT's dropout, 0.1."""
  return random_classifier(vocab_file, str(tmp_path_factory.mktemp("random_classifier")), 0.1)


@pytest.fixture(scope="module")
def converted(classifier_dir, tmp_path_factory):
  return converted_models(classifier_dir, str(tmp_path_factory.mktemp("scratch")))


@pytest.fixture(scope="module")
def converted_without_dropout(vocab_file, tmp_path_factory):
  """A classifier configured without dropout, as the quickstart's: Keras computes its
  attention with `dot_product_attention`."""
  directory = random_classifier(vocab_file, str(tmp_path_factory.mktemp("no_dropout")), 0.0)
  return converted_models(directory, str(tmp_path_factory.mktemp("scratch")))


def ops(model_bytes: bytes) -> collections.Counter:
  """The model's op types."""
  import onnx

  return collections.Counter(node.op_type for node in onnx.load_from_string(model_bytes).graph.node)


def run_ops(model_bytes: bytes, path: str) -> collections.Counter:
  """The op types of the graph ONNX Runtime runs, once it has optimized the model as it loads
  it (its default level, every optimization)."""
  import onnxruntime

  options = onnxruntime.SessionOptions()
  options.optimized_model_filepath = path
  onnxruntime.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"])
  with open(path, "rb") as f:
    return ops(f.read())


def outputs(model_bytes: bytes, inputs: dict) -> dict:
  import onnxruntime

  session = onnxruntime.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
  names = [output.name for output in session.get_outputs()]
  return dict(zip(names, session.run(names, inputs)))


def ids_with_padding(seq_length: int) -> dict:
  """Two rows of random ids, the second padded after its first 9 tokens."""
  rng = np.random.default_rng(0)
  ids = rng.integers(5, 300, (2, seq_length)).astype(np.int32)
  mask = np.ones_like(ids)
  mask[1, 9:] = 0
  return {"input_ids": ids, "token_type_ids": np.zeros_like(ids), "attention_mask": mask}


@pytest.mark.parametrize("which", ["converted", "converted_without_dropout"])
def test_each_attention_is_one_op_and_int8_makes_it_qattention(which, request, tmp_path):
  _, models, _ = request.getfixturevalue(which)
  float_ops, int8_ops = ops(models["none"]), ops(models["int8"])
  assert float_ops["Attention"] == LAYERS and not float_ops["Einsum"], float_ops
  assert int8_ops["QAttention"] == LAYERS and not int8_ops["Attention"], int8_ops
  # Every weight's product int8: the attention's output, the two dense layers, pooler, head.
  assert int8_ops["MatMulInteger"] == 3 * LAYERS + 2, int8_ops
  assert not float_ops["ReduceProd"], float_ops  # each tensordot had two
  for quantize, model in models.items():
    assert not run_ops(model, str(tmp_path / f"{quantize}.onnx"))["SkipLayerNormalization"]


@pytest.mark.parametrize("which", ["converted", "converted_without_dropout"])
def test_the_rewritten_float_model_answers_as_the_keras_model(which, request):
  portable, models, _ = request.getfixturevalue(which)
  inputs = ids_with_padding(16)
  expected = {name: np.asarray(value) for name, value in portable.outputs(
      *(tf.constant(inputs[name]) for name in ("input_ids", "token_type_ids",
                                               "attention_mask"))).items()}
  for quantize, tolerance in (("none", 1e-4), ("int8", TOLERANCES["int8"])):
    answered = outputs(models[quantize], inputs)
    for name, values in expected.items():
      scale = np.sqrt(np.mean(values ** 2))
      assert np.max(np.abs(answered[name] - values)) <= tolerance * scale, (quantize, name)


def test_the_int8_quantization_does_not_advise_pre_processing(converted):
  """Caught here as the quantization logged it; the command's own output in
  `test_the_onnx_int8_commands_output_has_no_advice`."""
  _, _, logged = converted
  assert not [line for line in logged if PRE_PROCESSING_ADVICE in line], logged


@pytest.mark.e2e
def test_the_onnx_int8_commands_output_has_no_advice(classifier_dir, tmp_path):
  result = run(["-m", "bert_tf.export", f"--model_dir={classifier_dir}", "--format=onnx",
                "--quantize=int8", f"--output={tmp_path / 'int8'}"])
  assert result.returncode == 0, result.stderr[-3000:]
  assert "pre-processing" not in result.stdout + result.stderr
  assert "verified: classify onnx int8" in result.stdout

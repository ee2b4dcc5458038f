"""A LiteRT or ONNX export checks itself as the other exports do (`verification.py`): a fresh
process that imports only numpy, `tokenizers` and the formats' runtimes (ONNX Runtime,
`ai_edge_litert`) tokenizes the examples with the export's tokenizer.json and runs the model
on the pre-training tokenizer's ids of the same texts; its ids must equal ours, its outputs
the Keras model's within the tolerance of its quantization. Several exports of one model
(each format and quantization, say) are checked in one such process."""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from bert_tf import files
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.export.export_settings import FORMATS
from bert_tf.export.portable import INPUTS, TOKENIZER_FILE, PortableModel
from bert_tf.export.verification import EXAMPLES, pair_ids, text_ids, verify

# Every text of EXAMPLES: accents, CJK, Hangul, numbers, one longer than any sequence.
TEXTS = [text for pair in EXAMPLES for text in pair if text]

# Largest output difference from the Keras model, by quantization (divided by the output's
# largest magnitude when above 1, as `verification.verify` does): float32 differs by the order
# of summation; float16 weights by their rounding (about 1e-3 of each); int8 weights by their
# quantization, about 1% of a weight's range: wrong weights are off by the outputs' scale.
TOLERANCES = {"none": 1e-4, "fp16": 2e-2, "int8": 2e-1}

# Below this an expected output is a mark, not a figure: the heads' -10000 where an answer can
# neither start nor end, or for an absent ending. A mark the export keeps counts as equal; the
# other outputs are compared on their own scale, which the marks' would hide.
MARK = -1000.0

# The fresh process: argv = the calls' JSON ({"texts": [...], "inputs": {name: [[id, ...], ...]},
# "exports": [[format, model file, tokenizer.json], ...]}), the JSON to write: for each export
# the tokenizer's ids of each text (padding left out) and the model's outputs on the inputs
# given, or the last line of what stopped it.
_RUN_PORTABLE = r"""
import json, sys, traceback
import numpy as np
from tokenizers import Tokenizer

given, answered = sys.argv[1:3]
with open(given) as f:
  calls = json.load(f)
inputs = {name: np.array(value, np.int32) for name, value in calls["inputs"].items()}

def run(export_format, model_file, tokenizer_file):
  tokenizer = Tokenizer.from_file(tokenizer_file)
  ids = [[i for i, m in zip(e.ids, e.attention_mask) if m]
         for e in tokenizer.encode_batch(calls["texts"])]
  if export_format == "onnx":
    import onnxruntime
    session = onnxruntime.InferenceSession(model_file, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    outputs = dict(zip(names, session.run(names, inputs)))
  else:
    from ai_edge_litert.interpreter import Interpreter
    outputs = Interpreter(model_path=model_file).get_signature_runner()(**inputs)
  return {"ids": ids, "outputs": {k: np.asarray(v).tolist() for k, v in outputs.items()}}

said = []
for export in calls["exports"]:
  try:
    said.append(run(*export))
  except Exception:
    said.append({"error": traceback.format_exc().strip().splitlines()[-1]})
assert "tensorflow" not in sys.modules
with open(answered, "w") as f:
  json.dump(said, f)
"""


def portable_outputs(exports: list[tuple[str, str]], texts: list[str], inputs: dict) -> list:
  """What one fresh process without TensorFlow makes of each export, (format, directory): {"ids":
  the tokenizer's ids of each of `texts`, "outputs": {name: array} of the model on `inputs`},
  or {"error": the last line of what stopped it}."""
  with tempfile.TemporaryDirectory() as scratch:
    local = []
    for number, (export_format, directory) in enumerate(exports):
      copy = os.path.join(scratch, str(number))
      files.copy_directory(directory, copy)
      local.append([export_format, os.path.join(copy, FORMATS[export_format].model_file),
                    os.path.join(copy, TOKENIZER_FILE)])
    given, answered = os.path.join(scratch, "calls.json"), os.path.join(scratch, "out.json")
    with open(given, "w") as f:
      json.dump({"texts": texts, "exports": local,
                 "inputs": {k: np.asarray(v).tolist() for k, v in inputs.items()}}, f)
    process = subprocess.run([sys.executable, "-c", _RUN_PORTABLE, given, answered],
                             capture_output=True, text=True)
    if process.returncode:
      last = (process.stderr.strip().splitlines() or ["(no message)"])[-1]
      return [{"error": last}] * len(exports)
    with open(answered) as f:
      said = json.load(f)
  return [one if "error" in one else {
      "ids": one["ids"], "outputs": {k: np.array(v, np.float32) for k, v in one["outputs"].items()}}
      for one in said]


def reference_inputs(vocabulary: Vocabulary, texts: list[str], *, lower_case: bool,
                     seq_length: int) -> tuple[list[list[int]], dict]:
  """The pre-training tokenizer's ids of each text ([CLS] text [SEP], cut to `seq_length`),
  and the model's inputs of them, padded to the longest: the export takes the input's own
  length."""
  tokenizer = vocabulary.tokenizer(lower_case)
  ids = [pair_ids(vocabulary, text_ids(tokenizer, text), [], seq_length)[0] for text in texts]
  padded = np.full([len(ids), max(map(len, ids))], vocabulary.pad_id, np.int32)
  mask = np.zeros_like(padded)
  for row, row_ids in enumerate(ids):
    padded[row, :len(row_ids)], mask[row, :len(row_ids)] = row_ids, 1
  return ids, {"input_ids": padded, "token_type_ids": np.zeros_like(padded),
               "attention_mask": mask}


def verify_portable(portable: PortableModel, exports: dict[tuple[str, str], str],
                    texts: list[str] = ()) -> list[str]:
  """Checks each export of `portable`, {(format, quantize): directory}, on TEXTS and `texts` (a
  dev file's, say), all loaded in one fresh process; returns the lines saying so, or raises a
  one-line UserError for the first that fails."""
  texts = [*TEXTS, *texts]
  vocabulary = Vocabulary(portable.vocab_file)
  ids, inputs = reference_inputs(vocabulary, texts, lower_case=portable.lower_case,
                                 seq_length=portable.seq_length)
  # Each text on its own along any axis between the batch and the sequence (one ending each).
  inner = [1] * (len(portable.input_shape) - 2)
  inputs = {name: value.reshape([len(texts), *inner, value.shape[-1]])
            for name, value in inputs.items()}
  expected = {name: np.asarray(value) for name, value in portable.outputs(
      *(inputs[name] for name in INPUTS)).items()}
  said = portable_outputs([(export_format, directory) for (export_format, _), directory
                           in exports.items()], texts, inputs)
  lines = []
  for ((export_format, quantize), _), got in zip(exports.items(), said):
    name = f"{portable.kind} {export_format} {quantize}"
    if "error" in got:
      raise UserError(f"{name} export failed verification: running it failed: {got['error']}")
    if sorted(got["outputs"]) != sorted(expected):
      raise UserError(f"{name} export failed verification: its outputs are "
                      f"{', '.join(sorted(got['outputs']))}, the Keras model's "
                      f"{', '.join(sorted(expected))}")
    reference, loaded = {"token_ids": ids, **expected}, {"token_ids": got["ids"]}
    for key, value in got["outputs"].items():
      reference[key], loaded[key] = _marks_kept(expected[key], value)
    lines.append(verify(name, lambda reference=reference: reference,
                        lambda loaded=loaded: loaded, TOLERANCES[quantize]))
  return lines


def _marks_kept(expected: np.ndarray, got: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """`expected` and `got` with the marks (`MARK`) that both have set to 0."""
  if expected.shape != got.shape:
    return expected, got
  both = (expected < MARK) & (got < MARK)
  return np.where(both, 0, expected), np.where(both, 0, got)


def runtime_runner(export_format: str, directory: str, threads: int = 0):
  """The export in the local `directory` loaded in its runtime, in this process: a function
  of {input name: int32 array} to {output name: array}. `threads`: the runtime's threads
  (0: its default)."""
  model_file = os.path.join(directory, FORMATS[export_format].model_file)
  if export_format == "onnx":
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(model_file, options,
                                           providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return lambda inputs: dict(zip(names, session.run(names, inputs)))
  from ai_edge_litert.interpreter import Interpreter

  runner = Interpreter(model_path=model_file, num_threads=threads or None).get_signature_runner()
  return lambda inputs: runner(**inputs)

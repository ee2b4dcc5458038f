"""A LiteRT or ONNX export checks itself as the other exports do (`verification.py`): a fresh
process that imports only numpy, `tokenizers`, the formats' runtimes (ONNX Runtime,
`ai_edge_litert`) and bert_tf's format modules (no TensorFlow: each format loads its file with
its `runner`, the one place bert_tf does) tokenizes the examples with the export's
tokenizer.json and runs the model on the pre-training tokenizer's ids of the same texts
(pairs, for a task of pairs; a context with three endings, for multiple choice); its ids must
equal ours, its outputs and what its head decides the Keras model's within the tolerance of
its quantization (`portable_comparison`). Several exports of one model (each format and
quantization, say) are checked in one such process."""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import bert_tf
from bert_tf import files
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.export.formats import FORMATS
from bert_tf.export.formats.format import PortableFormat
from bert_tf.serving.portable import INPUTS, TOKENIZER_FILE, PortableModel
from bert_tf.serving.portable_comparison import TOLERANCES, Examples, compare
from bert_tf.serving.verification import EXAMPLES, pair_ids, text_ids

# Every text of EXAMPLES: accents, CJK, Hangul, numbers, one longer than any sequence.
TEXTS = [text for pair in EXAMPLES for text in pair if text]
ENDINGS = 3  # a multiple-choice model's examples: each text a context with three endings

# The fresh process: argv = the calls' JSON ({"texts": [...], "inputs": {name: [[id, ...], ...]},
# "exports": [[format, model file, tokenizer.json], ...]}), the JSON to write: for each export
# the tokenizer's ids of each text (padding left out) and the model's outputs on the inputs
# given, or the last line of what stopped it.
_RUN_PORTABLE = r"""
import json, sys, traceback
import numpy as np
from tokenizers import Tokenizer
from bert_tf.export.formats import FORMATS

given, answered = sys.argv[1:3]
with open(given) as f:
  calls = json.load(f)
inputs = {name: np.array(value, np.int32) for name, value in calls["inputs"].items()}

def run(export_format, model_file, tokenizer_file):
  tokenizer = Tokenizer.from_file(tokenizer_file)
  ids = [[i for i, m in zip(e.ids, e.attention_mask) if m]
         for e in tokenizer.encode_batch(calls["texts"])]
  outputs = FORMATS[export_format].runner(model_file)(inputs)
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


def portable_outputs(exports: list[tuple[PortableFormat, str]], texts: list[str],
                     inputs: dict) -> list:
  """What one fresh process without TensorFlow makes of each export, (format, directory): {"ids":
  the tokenizer's ids of each of `texts`, "outputs": {name: array} of the model on `inputs`},
  or {"error": the last line of what stopped it}."""
  with tempfile.TemporaryDirectory() as scratch:
    local = []
    for number, (export_format, directory) in enumerate(exports):
      copy = os.path.join(scratch, str(number))
      files.copy_directory(directory, copy)
      local.append([export_format.name, os.path.join(copy, export_format.model_file),
                    os.path.join(copy, TOKENIZER_FILE)])
    given, answered = os.path.join(scratch, "calls.json"), os.path.join(scratch, "out.json")
    with open(given, "w") as f:
      json.dump({"texts": texts, "exports": local,
                 "inputs": {k: np.asarray(v).tolist() for k, v in inputs.items()}}, f)
    package_root = os.path.dirname(os.path.dirname(bert_tf.__file__))
    path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
    process = subprocess.run([sys.executable, "-c", _RUN_PORTABLE, given, answered],
                             capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": path})
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


def verification_pairs(portable: PortableModel, texts: list[str]) -> list[list[tuple]]:
  """The examples the model is run on, each a list of (text_a, text_b) pairs ("" for none):
  a pair each, EXAMPLES' pairs both ways round for a task of pairs (an answer's question and
  context, say) and each of `texts` alone otherwise; for multiple choice each text a context
  with the three texts after it as endings (the first context's third absent)."""
  if len(portable.input_shape) == 3:
    return [[(context, "" if (i, k) == (0, ENDINGS) else texts[(i + k) % len(texts)])
             for k in range(1, ENDINGS + 1)] for i, context in enumerate(texts)]
  if portable.task.get("pair"):
    return [[pair] for pair in [*EXAMPLES, *((b, a) for a, b in EXAMPLES if b)]]
  return [[(text, "")] for text in texts]


def model_inputs(vocabulary: Vocabulary, examples: list[list[tuple]], *, lower_case: bool,
                 seq_length: int, endings: bool) -> dict:
  """The model's inputs of `verification_pairs`: each pair as the pre-training tokenizer's ids
  cut as in training, padded to the longest ([examples, longest], or [examples, endings,
  longest] with `endings`); an absent ending all padding."""
  tokenizer = vocabulary.tokenizer(lower_case)
  shape = [len(examples), max(len(pairs) for pairs in examples), seq_length]
  inputs = {name: np.zeros(shape, np.int32) for name in INPUTS}
  inputs["input_ids"][:] = vocabulary.pad_id
  for i, pairs in enumerate(examples):
    for j, (a, b) in enumerate(pairs):
      if a or b:
        ids, types = pair_ids(vocabulary, text_ids(tokenizer, a),
                              text_ids(tokenizer, b) if b else [], seq_length)
        inputs["input_ids"][i, j, :len(ids)] = ids
        inputs["token_type_ids"][i, j, :len(ids)] = types
        inputs["attention_mask"][i, j, :len(ids)] = 1
  longest = int(inputs["attention_mask"].sum(-1).max())  # the export takes the input's length
  inputs = {name: value[..., :longest] for name, value in inputs.items()}
  return inputs if endings else {name: value[:, 0] for name, value in inputs.items()}


def compared_examples(portable: PortableModel, vocabulary: Vocabulary, inputs: dict) -> Examples:
  """What `portable_comparison` needs of the examples: the outputs with a value per token and
  where a token counts (a real token; for a tagger, each word's first piece)."""
  positions = inputs["attention_mask"].astype(bool)
  if portable.kind == "tag":
    first = ~np.array(vocabulary.continuation_flags())[inputs["input_ids"]]
    special = np.isin(inputs["input_ids"], [vocabulary.cls_id, vocabulary.sep_id])
    positions &= first & ~special
  per_token = {name for name, shape in portable.shapes.items() if shape[1:2] == ["seq_length"]}
  return Examples(portable.kind, per_token, positions, list(portable.task.get("labels", [])),
                  portable.task.get("max_answer_length", 0))


def verify_portable(portable: PortableModel, exports: dict[tuple[str, str], str],
                    texts: list[str] = ()) -> list[str]:
  """Checks each export of `portable`, {(format, quantize): directory}, on TEXTS and `texts` (a
  dev file's, say), all loaded in one fresh process; returns the lines saying so, or raises a
  one-line UserError for the first that fails."""
  texts = [*TEXTS, *texts]
  vocabulary = Vocabulary(portable.vocab_file)
  ids, _ = reference_inputs(vocabulary, texts, lower_case=portable.lower_case,
                            seq_length=portable.seq_length)
  inputs = model_inputs(vocabulary, verification_pairs(portable, texts),
                        lower_case=portable.lower_case, seq_length=portable.seq_length,
                        endings=len(portable.input_shape) == 3)
  expected = {name: np.asarray(value) for name, value in portable.outputs(
      *(inputs[name] for name in INPUTS)).items()}
  examples = compared_examples(portable, vocabulary, inputs)
  said = portable_outputs([(FORMATS[export_format], directory) for (export_format, _), directory
                           in exports.items()], texts, inputs)
  lines = []
  for ((export_format, quantize), _), got in zip(exports.items(), said):
    name = f"{portable.kind} {export_format} {quantize}"
    if "error" in got:
      raise UserError(f"{name} export failed verification: running it failed: {got['error']}")
    for index, (ours, theirs) in enumerate(zip(ids, got["ids"], strict=True)):
      if list(ours) != list(theirs):
        raise UserError(f"{name} export failed verification: its ids of example {index} are "
                        f"{theirs[:12]}, the pre-training tokenizer's {ours[:12]}")
    lines.append(f"verified: {name} ids equal, " + compare(
        name, examples, expected, got["outputs"], TOLERANCES[quantize]))
  return lines

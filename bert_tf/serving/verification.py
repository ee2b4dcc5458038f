"""Exports that check themselves: what was written, loaded the way its user will load it, gives
the pre-training tokenizer's ids and the Keras model's outputs (docs/serving.md#verified-exports).

`verify` is the comparison for any export: examples in, a callable for the Keras reference and
one for the loaded export, each returning named results (ids, words and offsets compared
exactly, arrays within a tolerance). The formats of the pre-training model
(`export/formats/`) supply both callables from `KerasReference` and the loaders below,
`finetune/verification.py` for a fine-tuned model's SavedModel; both load a SavedModel in the
same fresh process (`saved_model_outputs`).
"""

import json
import logging
import os
import subprocess
import sys
import tempfile
import unicodedata
from collections.abc import Callable, Sequence

import keras
import numpy as np

from bert_tf import files
from bert_tf.data.pairing import trimmed_lengths
from bert_tf.data.tokenization import BertTokenizer, Vocabulary
from bert_tf.errors import UserError
from bert_tf.interop import huggingface
from bert_tf.serving.numpy_bert import NumpyBert, softmax

log = logging.getLogger("bert_tf")

# How `saved_model_outputs` runs its `python -c` process: `subprocess.run`'s call; a caller may
# put here another way to run the same command in a new process (the tests fork it from a
# Python that has imported TensorFlow already, and nothing of bert_tf).
run_process = subprocess.run

# (text_a, text_b): accents, CJK, numbers, cased words, and a pair longer than any training
# sequence length, so that truncation is exercised. text_b "" is a single text.
EXAMPLES = (
    ("Café naïve résumé, Ångström and Dvořák.", "Über Zürich; señor niño, São Paulo."),
    ("北京大学的学生在东京学习日本語。", "ソウル and 서울 are the same city."),
    ("In 1984, 3.14159 of 2,718 items cost $42.50 (about 12%).", ""),
    ("The Python Language Reference describes the syntax. " * 40,
     "Each statement is executed in order, one after another. " * 25),
)
# Texts with a [MASK] for the MLM head (the SavedModel's fill_mask).
MASKED = ("The [MASK] statement is used for conditional execution.",
          "Café [MASK] 北京 1984.")

# The vocabulary's own whole words are tokenized too, this many to a text, so that every word
# of it (a grown vocabulary's new ones included: `--add_vocabulary`) is shown to give the same
# ids through the export's tokenizer.
WORDS_PER_TEXT = 100

Results = dict  # name -> a list per example (names ending in EXACT) or a float array
# The results compared exactly, by the end of their name: what the tokenizer gives.
EXACT = ("ids", "words", "offsets")


def verify(export_name: str, reference: Callable[[], Results], loaded: Callable[[], Results],
           tolerance: float) -> str:
  """Compares what the export gives (`loaded()`) with the reference (`reference()`): the
  results named `*ids`, `*words` or `*offsets` exactly, the others within `tolerance`. Returns
  the line saying so; raises UserError naming the first difference otherwise."""
  expected, got = reference(), loaded()
  largest, where, exact = 0.0, "", []
  for name, value in got.items():
    if name.endswith(EXACT):
      for index, (ours, theirs) in enumerate(zip(expected[name], value, strict=True)):
        if list(ours) != list(theirs):
          raise UserError(f"{export_name} export failed verification: its {name} of example "
                          f"{index} are {_start(theirs)}, the pre-training tokenizer's "
                          f"{_start(ours)}")
      exact.append(name)
      continue
    difference = _difference(np.asarray(expected[name]), np.asarray(value))
    if difference >= largest:
      largest, where = difference, name
  if not largest <= tolerance:
    raise UserError(f"{export_name} export failed verification: its {where} differs from the "
                    f"Keras model's by {largest:.1e} (tolerance {tolerance:.0e})")
  equal = ("ids" if all(name.endswith("ids") for name in exact) else ", ".join(exact))
  return (f"verified: {export_name}{f' {equal} equal' if exact else ''}, largest output "
          f"difference {largest:.1e} ({where}; tolerance {tolerance:.0e})")


def _difference(expected: np.ndarray, got: np.ndarray) -> float:
  if expected.shape != got.shape:
    return float("inf")
  scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
  return float(np.max(np.abs(expected - got), initial=0.0)) / scale


def _start(ids) -> str:
  ids = list(ids)
  return f"{ids[:12]}{' ...' if len(ids) > 12 else ''} ({len(ids)} ids)"


# === The pre-training model's exports ===


class KerasReference:
  """The pre-training tokenizer's ids and the Keras model's outputs on EXAMPLES and MASKED."""

  def __init__(self, model: keras.Model, vocabulary: Vocabulary, lower_case: bool,
               seq_length: int):
    self.model, self.vocabulary, self.seq_length = model, vocabulary, seq_length
    tokenizer = vocabulary.tokenizer(lower_case)
    self.text_ids = [text_ids(tokenizer, text) for pair in EXAMPLES for text in pair]
    self.pairs = [pair_ids(vocabulary, a, b, seq_length)
                  for a, b in zip(self.text_ids[::2], self.text_ids[1::2])]
    self.masked = [self._masked(tokenizer, text) for text in MASKED]
    self.word_ids = [text_ids(tokenizer, text) for text in word_texts(vocabulary)]

  def _masked(self, tokenizer: BertTokenizer, text: str) -> list[int]:
    """[CLS] left [MASK] right [SEP], as fill_mask tokenizes a text with one [MASK]."""
    left, right = (text_ids(tokenizer, part) for part in text.split("[MASK]"))
    return [self.vocabulary.cls_id, *left, self.vocabulary.mask_id, *right,
            self.vocabulary.sep_id]

  def results(self) -> Results:
    encoder = self.model.get_layer("bert_encoder")
    pooled, sequence, nsp, mlm = [], [], [], []
    examples = self.pairs + [(ids, [0] * len(ids)) for ids in self.masked]
    for index, (token_ids, segment_ids) in enumerate(examples):
      inputs = model_inputs(token_ids, segment_ids)
      positions = (mlm_positions(token_ids) if index < len(self.pairs)
                   else [token_ids.index(self.vocabulary.mask_id)])
      outputs = self.model({**inputs, "masked_positions": np.array([positions], np.int32)},
                           training=False)
      encoded = encoder(inputs, training=False)
      pooled.append(encoded["pooled_output"].numpy()[0])
      sequence.append(encoded["sequence_output"].numpy()[0])
      nsp.append(outputs["nsp"].numpy()[0])
      mlm.append(outputs["mlm"].numpy()[0])
    count = len(self.pairs)
    masked_logits = np.stack([logits[0] for logits in mlm[count:]])  # at each [MASK]
    return {
        "token_ids": [ids for ids, _ in self.pairs],
        "text_ids": self.text_ids,
        "word_ids": self.word_ids,
        "pooled_output": np.stack(pooled[:count]),
        "sequence_output": np.concatenate(sequence[:count]),
        "nsp_logits": np.stack(nsp[:count]),
        "is_next": softmax(np.stack(nsp[:count]))[:, 1],
        "mlm_logits": np.concatenate(mlm[:count]),
        "fill_mask": softmax(masked_logits).max(axis=-1),  # the top prediction's probability
    }


def word_texts(vocabulary: Vocabulary) -> list[str]:
  """The vocabulary's whole-word tokens, WORDS_PER_TEXT to a text: those of letters and digits
  that NFKC and case folding leave as lower-casing does (where the tokenizers of keras-hub and
  transformers are known to depart from original BERT's, docs/serving.md, an export would
  fail for what it cannot change)."""
  words = [t for t in vocabulary.tokens if t.isalnum() and t.casefold() == t.lower()
           and unicodedata.normalize("NFKC", t) == t]
  return [" ".join(words[i:i + WORDS_PER_TEXT]) for i in range(0, len(words), WORDS_PER_TEXT)]


def text_ids(tokenizer: BertTokenizer, text: str) -> list[int]:
  """The pre-training tokenizer's ids of one text."""
  return tokenizer.tokenize([text]).flat_values.numpy().tolist()


def pair_ids(vocabulary: Vocabulary, ids_a: list[int], ids_b: list[int],
             seq_length: int) -> tuple[list[int], list[int]]:
  """[CLS] a [SEP] (b [SEP] when b has ids), truncated as in training, the longer text first;
  (token ids, segment ids)."""
  budget = seq_length - 2 - (1 if ids_b else 0)
  fit_a, fit_b = (int(n) for n in trimmed_lengths(len(ids_a), len(ids_b), budget))
  cls, sep = vocabulary.cls_id, vocabulary.sep_id
  token_ids = [cls, *ids_a[:fit_a], sep] + ([*ids_b[:fit_b], sep] if ids_b else [])
  return token_ids, [0] * (fit_a + 2) + [1] * (len(token_ids) - fit_a - 2)


def model_inputs(token_ids: Sequence[int], segment_ids: Sequence[int]) -> dict:
  """One example as a batch of one."""
  return {"token_ids": np.array([token_ids], np.int32),
          "segment_ids": np.array([segment_ids], np.int32),
          "padding_mask": np.ones([1, len(token_ids)], np.int32)}


def mlm_positions(token_ids: Sequence[int]) -> list[int]:
  """Where the MLM logits of an example are compared: its first token, middle and last."""
  return [1, len(token_ids) // 2, len(token_ids) - 2]


# A fresh process with tensorflow and tensorflow-text only, as a server or a user loads the
# SavedModel: argv = the calls' JSON ([[signature, {input: [text, ...]}], ...]), the
# SavedModel, the JSON to write: each call's outputs as lists, strings decoded.
_CALL_SAVED_MODEL = r"""
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the tokenizer's ops

with open(sys.argv[1]) as f:
  calls = json.load(f)
served = tf.saved_model.load(sys.argv[2])
answers = []
for signature, inputs in calls:
  outputs = served.signatures[signature](
      **{name: tf.constant(texts, tf.string) for name, texts in inputs.items()})
  answers.append({name: value.numpy().tolist() for name, value in outputs.items()})
with open(sys.argv[3], "w") as f:
  json.dump(answers, f, default=bytes.decode)
"""


def saved_model_outputs(directory: str, calls: list, export_name: str) -> list[dict]:
  """The outputs of each (signature, {input: [text, ...]}) of `calls` on the SavedModel in
  `directory`, loaded in a fresh process (from a local copy when `directory` is on `ram://`,
  which only this process sees): {output: nested lists} per call. A SavedModel that does not
  load or serve is a one-line UserError naming `export_name`."""
  with tempfile.TemporaryDirectory() as scratch:
    if directory.startswith("ram://"):
      files.copy_directory(directory, os.path.join(scratch, "saved_model"))
      directory = os.path.join(scratch, "saved_model")
    given, answered = os.path.join(scratch, "calls.json"), os.path.join(scratch, "out.json")
    with open(given, "w") as f:
      json.dump(calls, f)
    environment = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL",
                                                                          "2")}
    process = run_process([sys.executable, "-c", _CALL_SAVED_MODEL, given, directory, answered],
                          capture_output=True, text=True, env=environment)
    if process.returncode:
      last = (process.stderr.strip().splitlines() or ["(no message)"])[-1]
      raise UserError(f"{export_name} export failed verification: loading {directory} with "
                      f"tensorflow and tensorflow-text failed: {last}")
    with open(answered) as f:
      return json.load(f)


def saved_model_results(directory: str) -> Results:
  """The SavedModel's signatures on EXAMPLES (each a batch of one) and MASKED, loaded in a
  fresh process."""
  calls = []
  for text_a, text_b in EXAMPLES:
    pair = {"text_a": [text_a], "text_b": [text_b]}
    calls += [("tokenize", pair), ("encode", pair), ("is_next", pair)]
  calls += [("fill_mask", {"text": [text]}) for text in MASKED]
  outputs = iter(saved_model_outputs(directory, calls, "savedmodel"))
  token_ids, pooled, sequence, is_next = [], [], [], []
  for _ in EXAMPLES:
    tokenized, encoded, following = next(outputs), next(outputs), next(outputs)
    token_ids.append(tokenized["token_ids"][0])
    pooled.append(encoded["pooled_output"][0])
    sequence += encoded["sequence_output"][0]
    is_next.append(following["probability"][0])
  fill_mask = [filled["probabilities"][0][0][0] for filled in outputs]
  return {"token_ids": token_ids,
          **{name: np.array(value, np.float32) for name, value in (
              ("pooled_output", pooled), ("sequence_output", sequence), ("is_next", is_next),
              ("fill_mask", fill_mask))}}


def transformers_installed(directory: str) -> bool:
  """Whether transformers and torch can be imported to read the Hugging Face `directory`;
  when not, says that a numpy forward pass checks it instead."""
  try:
    import torch  # noqa: F401
    import transformers  # noqa: F401
  except ImportError:
    log.info("transformers is not installed: checking %s by a numpy forward pass of its "
             "weights", directory)
    return False
  return True


def huggingface_text_ids(directory: str, texts: list[str],
                         with_transformers: bool) -> list[list[int]]:
  """The ids of each text by the Hugging Face directory's tokenizer: transformers'
  `BertTokenizer`, or without it the pre-training tokenizer over the directory's vocab.txt,
  cased as its tokenizer_config.json says. Each text alone: transformers' longest_first
  truncation parts a pair otherwise than original BERT on a tie, so outputs are compared on the
  reference's truncated pairs."""
  if with_transformers:
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    tokenizer = transformers.BertTokenizer.from_pretrained(directory)
    return [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
  tokenizer = Vocabulary(os.path.join(directory, "vocab.txt")).tokenizer(
      huggingface.lower_case(directory))
  return [text_ids(tokenizer, text) for text in texts]


def huggingface_results(directory: str, reference: KerasReference) -> Results:
  """The Hugging Face directory read by transformers when it and torch are installed, else by
  a numpy forward pass of its weights."""
  with_transformers = transformers_installed(directory)
  outputs = (transformers_results if with_transformers else numpy_huggingface_results)(
      directory, reference)
  texts = [text for pair in EXAMPLES for text in pair]
  words = word_texts(reference.vocabulary)
  return {"text_ids": huggingface_text_ids(directory, texts, with_transformers),
          "word_ids": huggingface_text_ids(directory, words, with_transformers), **outputs}


def transformers_results(directory: str, reference: KerasReference) -> Results:
  """transformers' `BertForPreTraining` from the directory (torch, CPU): the outputs on the
  reference's ids."""
  import torch
  import transformers

  model = transformers.BertForPreTraining.from_pretrained(directory).eval()
  pooled, sequence, nsp, mlm = [], [], [], []
  with torch.no_grad():
    for ids, segments in reference.pairs:
      inputs = torch_inputs(ids, segments)
      encoded = model.bert(**inputs)
      outputs = model(**inputs)
      pooled.append(encoded.pooler_output[0].numpy())
      sequence.append(encoded.last_hidden_state[0].numpy())
      nsp.append(outputs.seq_relationship_logits[0].numpy()[::-1])  # Hugging Face: 0 = IsNext
      mlm.append(outputs.prediction_logits[0].numpy()[mlm_positions(ids)])
  return {"pooled_output": np.stack(pooled), "sequence_output": np.concatenate(sequence),
          "nsp_logits": np.stack(nsp), "mlm_logits": np.concatenate(mlm)}


def torch_inputs(token_ids: Sequence[int], segment_ids: Sequence[int]) -> dict:
  """One example as a batch of one of torch tensors, under transformers' names."""
  import torch

  return {"input_ids": torch.tensor([token_ids]), "token_type_ids": torch.tensor([segment_ids]),
          "attention_mask": torch.ones(1, len(token_ids), dtype=torch.long)}


def numpy_huggingface_results(directory: str, reference: KerasReference) -> Results:
  """`NumpyBert` over the directory's config.json and safetensors weights: the outputs on the
  reference's ids."""
  config, state = huggingface.read_huggingface(directory)
  bert = NumpyBert(config, state, directory)
  pooled, sequence, nsp, mlm = [], [], [], []
  for ids, segments in reference.pairs:
    sequence.append(bert.encode(ids, segments))
    pooled.append(bert.pooled(sequence[-1]))
    nsp.append(bert.nsp_logits(pooled[-1])[::-1])  # Hugging Face: 0 = IsNext
    mlm.append(bert.mlm_logits(sequence[-1][mlm_positions(ids)]))
  return {"pooled_output": np.stack(pooled), "sequence_output": np.concatenate(sequence),
          "nsp_logits": np.stack(nsp), "mlm_logits": np.concatenate(mlm)}


def keras_hub_results(directory: str, reference: KerasReference) -> Results:
  """keras-hub's `BertTokenizer` and `BertBackbone` from the preset: the ids of each text of
  EXAMPLES, and the encoder's outputs on the reference's ids."""
  import keras_hub

  tokenizer = keras_hub.models.BertTokenizer.from_preset(directory)
  backbone = keras_hub.models.BertBackbone.from_preset(directory)
  text_ids = [np.asarray(tokenizer(text)).tolist() for pair in EXAMPLES for text in pair]
  word_ids = [np.asarray(tokenizer(text)).tolist() for text in word_texts(reference.vocabulary)]
  pooled, sequence = [], []
  for ids, segments in reference.pairs:
    encoded = backbone(model_inputs(ids, segments), training=False)
    pooled.append(keras.ops.convert_to_numpy(encoded["pooled_output"])[0])
    sequence.append(keras.ops.convert_to_numpy(encoded["sequence_output"])[0])
  return {"text_ids": text_ids, "word_ids": word_ids, "pooled_output": np.stack(pooled),
          "sequence_output": np.concatenate(sequence)}

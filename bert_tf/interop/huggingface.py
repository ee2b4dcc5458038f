"""Hugging Face BERT directories: export (config.json, model.safetensors, vocab.txt, tokenizer
files) of a pre-trained model as `BertForPreTraining` and of a fine-tuned one as the class
transformers uses for its task, and import (for `--init_checkpoint`). Needs no torch: weights
are read and written with safetensors' numpy API."""

import dataclasses
import json
import os
import re

import keras
import numpy as np
import tensorflow as tf

from bert_tf import files
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.interop.state import encoder_state, load_state, model_state
from bert_tf.model.bert_config import BertConfig

WEIGHTS = "model.safetensors"
SHARDS_INDEX = "model.safetensors.index.json"  # a large model's weights, in several files
# The other weights files transformers saves: pickled torch, TF, Flax.
_UNREAD_WEIGHTS = ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack")
_CONFIG_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                  "intermediate_size", "hidden_dropout_prob", "attention_probs_dropout_prob",
                  "max_position_embeddings", "type_vocab_size", "initializer_range")


def hf_config(config: BertConfig) -> dict:
  return {
      "architectures": ["BertForPreTraining"],
      "model_type": "bert",
      "vocab_size": config.vocab_size,
      "hidden_size": config.hidden_size,
      "num_hidden_layers": config.num_hidden_layers,
      "num_attention_heads": config.num_attention_heads,
      "intermediate_size": config.intermediate_size,
      "hidden_act": config.hidden_act,  # "gelu" is the erf form in transformers
      "hidden_dropout_prob": config.hidden_dropout_prob,
      "attention_probs_dropout_prob": config.attention_probs_dropout_prob,
      "max_position_embeddings": config.max_position_embeddings,
      "type_vocab_size": config.type_vocab_size,
      "initializer_range": config.initializer_range,
      "layer_norm_eps": config.layer_norm_epsilon,
      "pad_token_id": 0,
      "position_embedding_type": "absolute",
      "tie_word_embeddings": True,
  }


@dataclasses.dataclass(frozen=True)
class TaskHead:
  """What the Hugging Face export of a fine-tuned model takes from its task kind
  (`finetune.kinds`, whose `huggingface_head` makes it)."""

  class_name: str  # transformers' class: `BertForSequenceClassification`, ...
  layer: str  # the head's dense layer, named alike in both: `classifier`, `qa_outputs`
  pooler: bool  # whether the class has BERT's pooler (a head on [CLS])
  config: dict  # config.json's entries beyond the encoder's: labels, problem_type


def label_names(labels: list[str]) -> dict:
  """config.json's `id2label` and `label2id` of a head with an output per label."""
  return {"id2label": {str(i): label for i, label in enumerate(labels)},
          "label2id": {label: i for i, label in enumerate(labels)}}


def task_config(config: BertConfig, head: TaskHead) -> dict:
  """config.json of the transformers class of a fine-tuned model with `head`."""
  values = {**hf_config(config), "architectures": [head.class_name], **head.config}
  values.pop("tie_word_embeddings")  # no MLM head to tie
  return values


def task_state(model: keras.Model, config: BertConfig, head: TaskHead) -> dict:
  """The state of a fine-tuned model (`finetune.model` or a kind's `head.py`) under the names of
  its transformers class: the encoder (and for a head on [CLS] the pooler) under `bert.`, the
  head's layer (for `qa_outputs`, row 0 is the start's) as torch's Linear."""
  state = encoder_state(model, config, pooler=head.pooler)
  variables = {v.path: v for v in model.weights}
  state[f"{head.layer}.weight"] = np.asarray(variables[f"{head.layer}/kernel"].numpy(),
                                             np.float32).T
  state[f"{head.layer}.bias"] = np.asarray(variables[f"{head.layer}/bias"].numpy(), np.float32)
  return {name: np.ascontiguousarray(value) for name, value in state.items()}


def export_huggingface(model: keras.Model, config: BertConfig, vocabulary: Vocabulary,
                       directory: str, *, lower_case: bool, head: TaskHead | None = None) -> str:
  """Writes a directory that `BertTokenizer.from_pretrained` and, for a pre-training model,
  `BertForPreTraining.from_pretrained` load, or, for a fine-tuned model, the class of its
  kind's `head`; atomically (temporary directory, then rename)."""
  from safetensors.numpy import save

  if head is None:
    state, values = model_state(model, config), hf_config(config)
  else:
    state, values = task_state(model, config, head), task_config(config, head)
  temporary = files.temporary_directory(directory)
  tf.io.gfile.makedirs(temporary)
  # Serialised in memory and written through tf.io.gfile: any file system, gs:// too.
  with tf.io.gfile.GFile(os.path.join(temporary, WEIGHTS), "wb") as f:
    f.write(save(state, metadata={"format": "pt"}))
  files.write_json(os.path.join(temporary, "config.json"), values)
  tf.io.gfile.copy(vocabulary.path, os.path.join(temporary, "vocab.txt"))
  files.write_json(os.path.join(temporary, "tokenizer_config.json"), {
      "tokenizer_class": "BertTokenizer", "do_lower_case": lower_case,
      "strip_accents": None, "tokenize_chinese_chars": True,
      "model_max_length": config.max_position_embeddings,
      "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
      "cls_token": "[CLS]", "mask_token": "[MASK]"})
  files.write_json(os.path.join(temporary, "special_tokens_map.json"), {
      "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
      "cls_token": "[CLS]", "mask_token": "[MASK]"})
  files.replace_directory(temporary, directory)
  return directory


def is_huggingface_directory(path: str) -> bool:
  return tf.io.gfile.isdir(path) and tf.io.gfile.exists(os.path.join(path, "config.json"))


def weights_files(directory: str, called: str = "") -> list[str]:
  """The directory's model.safetensors, or the shards its model.safetensors.index.json names
  (as transformers saves a large model). Without either, a UserError naming the weights files
  that transformers may have saved instead, which are not read; `called` is how to name the
  directory in it (by default its path)."""
  weights = os.path.join(directory, WEIGHTS)
  if tf.io.gfile.exists(weights):
    return [weights]
  index = os.path.join(directory, SHARDS_INDEX)
  if tf.io.gfile.exists(index):
    return _shards(index, called or directory)
  others = [name for name in _UNREAD_WEIGHTS if tf.io.gfile.exists(os.path.join(directory, name))]
  found = f"; it has {', '.join(others)}, which is not read" if others else ""
  raise UserError(f"{called or directory} is a Hugging Face directory without {WEIGHTS} "
                  f"(only safetensors weights are read{found})")


def _shards(index: str, called: str) -> list[str]:
  """The safetensors files an index's `weight_map` names, each checked to be there."""
  with tf.io.gfile.GFile(index) as f:
    try:
      weight_map = json.load(f)["weight_map"]
      names = sorted(set(weight_map.values()))
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, AttributeError):
      raise UserError(f"{called}: {index} is not a safetensors index (JSON with a "
                      "weight_map)") from None
  paths = [os.path.join(os.path.dirname(index), name) for name in names]
  missing = [name for name, path in zip(names, paths) if not tf.io.gfile.exists(path)]
  if missing or not paths:
    raise UserError(f"{called}: the shards {', '.join(missing) or '(none)'} that {index} "
                    "names are not there")
  return paths


def lower_case(directory: str) -> bool:
  """Whether the model was trained on lower-cased text: its tokenizer_config.json's
  `do_lower_case`, true without one (transformers' default)."""
  path = os.path.join(directory, "tokenizer_config.json")
  if not tf.io.gfile.exists(path):
    return True
  with tf.io.gfile.GFile(path) as f:
    return bool(json.load(f).get("do_lower_case", True))


def read_config(directory: str) -> BertConfig:
  """The BertConfig of a Hugging Face BERT directory's config.json."""
  path = os.path.join(directory, "config.json")
  with tf.io.gfile.GFile(path) as f:
    try:
      values = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
      raise UserError(f"{path} is not valid JSON: {e}") from None
  if not isinstance(values, dict) or values.get("model_type") != "bert":
    kind = values.get("model_type") if isinstance(values, dict) else None
    raise UserError(f"{directory} is not a BERT model (model_type {kind!r} in {path})")
  if values.get("hidden_act", "gelu") != "gelu":
    raise UserError(f"{directory} uses hidden_act {values['hidden_act']!r}; only 'gelu'")
  # A field left out takes transformers' default, which is ours.
  fields = {name: values[name] for name in _CONFIG_FIELDS if name in values}
  if "layer_norm_eps" in values:
    fields["layer_norm_epsilon"] = values["layer_norm_eps"]
  return BertConfig(**fields)


def check_config(directory: str, config: BertConfig) -> None:
  """The directory's config.json makes the model `config` makes."""
  different = read_config(directory).differences(config)
  if different:
    raise UserError(f"{directory} is another model than the one to load: its config.json has "
                    f"{different}")


def canonical_names(state: dict) -> dict:
  """The state under `BertForPreTraining`'s names, as transformers reads a published one: a
  base model's weights (BertModel's, saved without the `bert.` prefix) under `bert.`, and the
  layer norms of older uploads (`LayerNorm.gamma`, `LayerNorm.beta`) as `weight`, `bias`."""
  renamed = {}
  for name, value in state.items():
    name = re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", name)
    name = re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name)
    if name.startswith(("embeddings.", "encoder.", "pooler.")):
      name = "bert." + name
    renamed[name] = value
  return renamed


def read_huggingface(directory: str):
  """(BertConfig, canonical state) of a Hugging Face BERT directory (safetensors weights, in
  one file or in shards) of any BERT class: `BertForPreTraining`, or one with fewer heads or
  another's."""
  from safetensors import SafetensorError
  from safetensors.numpy import load_file

  config = read_config(directory)
  state = {}
  for weights in weights_files(directory):
    try:
      state.update(load_file(weights))
    except (SafetensorError, OSError) as e:
      raise UserError(f"{weights} is not a readable safetensors file: {e}") from None
  state = canonical_names(state)
  # Tied copies that some versions save besides the originals.
  for tied, original in (("cls.predictions.decoder.weight",
                          "bert.embeddings.word_embeddings.weight"),
                         ("cls.predictions.decoder.bias", "cls.predictions.bias")):
    if tied in state and original not in state:
      state[original] = state.pop(tied)  # saved under the tied name alone
    elif tied in state:
      if not np.array_equal(state.pop(tied), state[original]):
        raise UserError(f"{directory}: {tied} is not tied to {original}")
  state.pop("bert.embeddings.position_ids", None)  # a buffer, not a weight
  return config, state


def load_huggingface(model: keras.Model, config: BertConfig, directory: str) -> None:
  """Initialises `model` from a Hugging Face BERT directory: both heads from a
  `BertForPreTraining` one (see `state.load_state` for one with fewer)."""
  check_config(directory, config)
  load_state(model, config, read_huggingface(directory)[1], directory)

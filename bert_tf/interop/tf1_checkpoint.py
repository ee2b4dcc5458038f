"""Original BERT (google-research/bert, TF1) checkpoints: `bert_model.ckpt` + `bert_config.json`.

Variable names such as `bert/encoder/layer_0/attention/self/query/kernel` map one to one onto
the canonical (Hugging Face) names; kernels are transposed. Optimizer slots (`adam_m`,
`adam_v`) and `global_step` are known and skipped. Variables outside `bert/` and the two
pre-training heads belong to another model's head (`output_weights` of run_classifier.py,
`cls/squad/` of run_squad.py): they are said and not read. Any other name that does not map is
an error.
"""

import os
import re

import keras
import numpy as np
import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.interop.state import load_state
from bert_tf.model.bert_config import BertConfig

_SKIPPED = re.compile(r"(/adam_[mv]$|^global_step$)")
_PRETRAINING_MODEL = ("bert/", "cls/predictions/", "cls/seq_relationship/")


def canonical_name(tf1_name: str):
  """(canonical name, transpose?) of an original BERT variable name; (None, False) for one
  that is not the pre-training model's."""
  if not tf1_name.startswith(_PRETRAINING_MODEL):
    return None, False
  parts = tf1_name.split("/")
  transpose = parts[-1] == "kernel"
  last = {"kernel": "weight", "gamma": "weight", "beta": "bias", "bias": "bias"}.get(parts[-1])
  if tf1_name == "cls/predictions/output_bias":
    return "cls.predictions.bias", False
  if tf1_name == "cls/seq_relationship/output_weights":
    return "cls.seq_relationship.weight", False  # already [2, hidden]
  if tf1_name == "cls/seq_relationship/output_bias":
    return "cls.seq_relationship.bias", False
  if parts[-1].endswith("_embeddings"):
    return ".".join(parts) + ".weight", False
  if last is None:
    return None, False
  path = ".".join(re.sub(r"^layer_(\d+)$", r"layer.\1", p) for p in parts[:-1])
  return f"{path}.{last}", transpose


def is_tf1_checkpoint(prefix: str) -> bool:
  return tf.io.gfile.exists(prefix + ".index")


def checkpoint_prefix(path: str) -> str:
  """The checkpoint prefix `path` names: the prefix itself, its `.index` or a data file, or a
  directory holding `bert_model.ckpt` (or whose `checkpoint` file names another)."""
  name = os.path.basename(path)
  if name.endswith(".index"):
    return path[:-len(".index")]
  if ".data-" in name:
    return path[:path.rindex(".data-")]
  if tf.io.gfile.isdir(path):
    candidate = os.path.join(path, "bert_model.ckpt")
    if is_tf1_checkpoint(candidate):
      return candidate
    latest = tf.train.latest_checkpoint(path)
    if latest:
      return latest
  return path


def has_data(prefix: str) -> bool:
  """Whether a data file is beside the checkpoint's index (the index alone opens, and every
  read of a weight then fails)."""
  return bool(tf.io.gfile.glob(f"{prefix}.data-*"))


def read_tf1_checkpoint(prefix: str) -> dict:
  """The canonical state of an original BERT checkpoint; another model's head stays under its
  own names (for `load_state` to say it is not read)."""
  try:
    return _read_tf1_checkpoint(prefix)
  except (IndexError, ValueError, tf.errors.OpError) as e:  # truncated or missing files
    lines = str(e).strip().splitlines()
    raise UserError(f"the original BERT checkpoint {prefix} cannot be read: "
                    f"{lines[0][:300] if lines else type(e).__name__}") from None


def _read_tf1_checkpoint(prefix: str) -> dict:
  reader = tf.train.load_checkpoint(prefix)
  state, unknown = {}, []
  for name in sorted(reader.get_variable_to_shape_map()):
    if _SKIPPED.search(name):
      continue
    canonical, transpose = canonical_name(name)
    if canonical is None and not name.startswith(_PRETRAINING_MODEL):
      state[name] = reader.get_tensor(name)  # another model's head
      continue
    if canonical is None:
      unknown.append(name)
      continue
    value = np.asarray(reader.get_tensor(name), np.float32)
    state[canonical] = value.T if transpose else value
  if unknown:
    raise UserError(f"{prefix}: variables that are not original BERT's: "
                    f"{', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}")
  return state


def config_path(prefix: str) -> str:
  """The `bert_config.json` beside an original BERT checkpoint."""
  return os.path.join(os.path.dirname(prefix), "bert_config.json")


def read_config(prefix: str) -> BertConfig:
  """The checkpoint's `bert_config.json`, which must be beside it."""
  path = config_path(prefix)
  if not tf.io.gfile.exists(path):
    raise UserError(f"original BERT checkpoint {prefix} has no {path}: put the "
                    "bert_config.json it was trained with beside it")
  return BertConfig.from_json_file(path)


def check_config(prefix: str, config: BertConfig) -> None:
  """The checkpoint's `bert_config.json` exists and makes the model `config` makes."""
  different = read_config(prefix).differences(config)
  if different:
    raise UserError(f"{prefix} is another model than the one to load: its "
                    f"{config_path(prefix)} has {different}")


def lower_case(prefix: str) -> bool:
  """Whether the checkpoint was trained on lower-cased text. Google's releases say it in their
  directory's name only: cased_L-12_H-768_A-12, multi_cased_..., wwm_cased_... are cased, the
  others uncased."""
  directory = os.path.basename(os.path.normpath(os.path.dirname(prefix)))
  return not re.search(r"(^|_)cased_", directory)


def load_tf1_checkpoint(model: keras.Model, config: BertConfig, path: str) -> None:
  """Initialises `model` (both heads, if it has them) from an original BERT checkpoint whose
  `bert_config.json` (beside the checkpoint) makes the model `config` makes."""
  prefix = checkpoint_prefix(path)
  check_config(prefix, config)
  load_state(model, config, read_tf1_checkpoint(prefix), prefix)

"""What `--init_checkpoint` points at, checked before the model is built: a bert_tf model_dir,
an original BERT checkpoint or a Hugging Face directory, each of the model `--config` makes.
Every way such a path can be wrong is one line naming the problem (and, when the path is no
checkpoint at all, the kinds taken)."""

import json
import logging
import os
import re

import keras
import tensorflow as tf

from bert_tf.model.bert_config import BertConfig
from bert_tf.errors import UserError
from bert_tf.interop import huggingface, tf1_checkpoint
from bert_tf.model_dir import is_training_directory

log = logging.getLogger("bert_tf")

ACCEPTED = ("a bert_tf model_dir, an original BERT checkpoint (the bert_model.ckpt prefix or "
            "its directory, with bert_config.json beside it) or a Hugging Face BertForPreTraining "
            f"directory (config.json and {huggingface.WEIGHTS})")


def _refuse(path: str, problem: str) -> UserError:
  return UserError(f"--init_checkpoint {path} is {problem}: it takes {ACCEPTED}")


def tf1_prefix(path: str) -> str:
  """The checkpoint prefix `path` names: the prefix itself, its `.index` or a data file, or
  a directory holding `bert_model.ckpt`."""
  name = os.path.basename(path)
  if name.endswith(".index"):
    return path[:-len(".index")]
  if ".data-" in name:
    return path[:path.rindex(".data-")]
  return tf1_checkpoint.checkpoint_prefix(path)


def _check_tf1(path: str, prefix: str, config: BertConfig) -> None:
  try:
    tf.train.load_checkpoint(prefix)
  except (tf.errors.OpError, ValueError) as e:
    lines = str(e).strip().splitlines()
    raise _refuse(path, f"not a readable checkpoint ({lines[0] if lines else type(e).__name__})"
                  ) from None
  tf1_checkpoint.check_config(prefix, config)


def _check_huggingface(path: str, config: BertConfig) -> None:
  huggingface.check_config(path, config)
  if not tf.io.gfile.exists(os.path.join(path, huggingface.WEIGHTS)):
    others = [name for name in ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack",
                                "model.safetensors.index.json")
              if tf.io.gfile.exists(os.path.join(path, name))]
    found = f"; it has {', '.join(others)}, which is not read" if others else ""
    raise UserError(f"--init_checkpoint {path} is a Hugging Face directory without "
                    f"{huggingface.WEIGHTS} (only safetensors weights are read{found})")


def _check_model_dir(path: str, config: BertConfig) -> None:
  """A bert_tf model_dir's bert_config.json (written once its checkpoint fitted) makes the
  model `config` makes; one without it is left to the checkpoint's restore."""
  config_path = os.path.join(path, "bert_config.json")
  if tf.io.gfile.exists(config_path):
    different = BertConfig.from_json_file(config_path).differences(config)
    if different:
      raise UserError(f"--init_checkpoint {path} is another model than --config: its "
                      f"{config_path} has {different}")


def check(path: str, config: BertConfig) -> None:
  """Raises a one-line UserError unless `path` is empty, a bert_tf model_dir of a model of
  `config`, or a checkpoint that `load` reads into one."""
  if not path:
    return
  if is_training_directory(path):
    _check_model_dir(path, config)
    return
  if huggingface.is_huggingface_directory(path):
    _check_huggingface(path, config)
  elif tf1_checkpoint.is_tf1_checkpoint(tf1_prefix(path)):
    _check_tf1(path, tf1_prefix(path), config)
  elif tf.io.gfile.isdir(path):
    raise _refuse(path, "a directory with no checkpoint in it")
  elif tf.io.gfile.exists(path):
    raise _refuse(path, "a file that is not a checkpoint")
  else:
    raise _refuse(path, "not found")


def lower_case(path: str) -> bool:
  """Whether a Hugging Face directory or an original BERT checkpoint was trained on
  lower-cased text: its tokenizer_config.json's `do_lower_case` (transformers' default, true,
  without one), or for Google's releases the directory's name (cased_L-12_H-768_A-12,
  multi_cased_..., wwm_cased_...; the others are uncased)."""
  if huggingface.is_huggingface_directory(path):
    tokenizer_config = os.path.join(path, "tokenizer_config.json")
    if not tf.io.gfile.exists(tokenizer_config):
      return True
    with tf.io.gfile.GFile(tokenizer_config) as f:
      return bool(json.load(f).get("do_lower_case", True))
  directory = os.path.dirname(tf1_prefix(path))
  return not re.search(r"(^|_)cased_", os.path.basename(os.path.normpath(directory)))


def check_case(path: str, do_lower_case: bool) -> None:
  """Warns when the run would lower-case the text for a checkpoint trained on cased text, or
  the other way round: its vocabulary's tokens would be looked up in the wrong case."""
  if not path or is_training_directory(path) or lower_case(path) == do_lower_case:
    return
  trained, flag = ("cased", "--nodo_lower_case") if do_lower_case else (
      "lower-cased", "--do_lower_case")
  log.warning("--init_checkpoint %s was trained on %s text, but this run %s it: give %s to "
              "match it", path, trained, "lower-cases" if do_lower_case else "keeps the case of",
              flag)


def load(model: keras.Model, config: BertConfig, path: str) -> None:
  """Initialises `model` (both heads) from a path `check` accepts, not a bert_tf model_dir."""
  check(path, config)
  if huggingface.is_huggingface_directory(path):
    huggingface.load_huggingface(model, config, path)
  else:
    tf1_checkpoint.load_tf1_checkpoint(model, config, tf1_prefix(path))

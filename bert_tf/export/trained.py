"""A trained model as `train` left it in `model_dir`, and its export to every format."""

import dataclasses
import json
import logging
import os

import keras
import tensorflow as tf

from bert_tf.model.bert_config import BertConfig
from bert_tf.data.tokenization import Vocabulary
from bert_tf import model_dir as model_dir_lib
from bert_tf.errors import UserError
from bert_tf.export.savedmodel import export_savedmodel
from bert_tf.model.pretraining import pretraining_model

# What `train` writes into model_dir for exports to read.
CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE, TRAIN_CONFIG_FILE = (
    "bert_config.json", "vocab.txt", "model.weights.h5", "train_config.json")
METRICS_FILE = "metrics.json"  # the final figures, written with the final weights
log = logging.getLogger("bert_tf")


@dataclasses.dataclass
class Trained:
  model: keras.Model
  config: BertConfig
  vocabulary: Vocabulary
  lower_case: bool
  seq_length: int


def save_weights(model: keras.Model, model_dir: str) -> None:
  """Writes the model's weights, without its optimizer's (Adam's two slots per weight would
  triple the file; checkpoints keep them for resuming)."""
  keras.saving.save_weights(model, os.path.join(model_dir, WEIGHTS_FILE),
                            objects_to_skip=[model.optimizer] if model.optimizer else None)


def check_finished(model_dir: str) -> None:
  """Raises a one-line UserError unless `model_dir` holds what a finished run leaves, and
  says in a line when its final weights are older than its latest checkpoint: a re-run with
  more --train_steps went on from them and has not finished."""
  if not tf.io.gfile.isdir(model_dir):
    raise UserError(f"{model_dir} is not found: it takes a finished train.py model_dir")
  for name in (CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE, TRAIN_CONFIG_FILE):
    if not tf.io.gfile.exists(os.path.join(model_dir, name)):
      raise UserError(f"{model_dir} has no {name}: is it a finished train.py model_dir?")
  metrics = os.path.join(model_dir, METRICS_FILE)
  if not tf.io.gfile.exists(metrics):
    return
  with tf.io.gfile.GFile(metrics) as f:
    final_step = json.load(f).get("steps", 0)
  latest = model_dir_lib.latest_step(model_dir)
  if latest > final_step:
    log.warning("%s: its final weights are of step %d, but training went on to the checkpoint "
                "at step %d and has not finished: these are step %d's (re-run train.py to "
                "finish)", model_dir, final_step, latest, final_step)


def load_trained(model_dir: str) -> Trained:
  check_finished(model_dir)
  config = BertConfig.from_json_file(os.path.join(model_dir, CONFIG_FILE))
  with tf.io.gfile.GFile(os.path.join(model_dir, TRAIN_CONFIG_FILE)) as f:
    train_config = json.load(f)
  model = pretraining_model(config)
  model.load_weights(os.path.join(model_dir, WEIGHTS_FILE))
  return Trained(model, config, Vocabulary(os.path.join(model_dir, VOCAB_FILE)),
                 train_config["do_lower_case"], train_config["seq_length"])


def export(trained: Trained, export_format: str, output: str, top_k: int = 5) -> str:
  """Writes `trained` as `savedmodel`, `hf` or `keras_hub` to `output`, atomically."""
  if export_format == "savedmodel":
    return export_savedmodel(trained.model, trained.vocabulary, output,
                             seq_length=trained.seq_length, lower_case=trained.lower_case,
                             top_k=top_k)
  if export_format == "hf":
    from bert_tf.interop.huggingface import export_huggingface
    return export_huggingface(trained.model, trained.config, trained.vocabulary, output,
                              lower_case=trained.lower_case)
  if export_format == "keras_hub":
    from bert_tf.interop.keras_hub_preset import export_keras_hub
    return export_keras_hub(trained.model, trained.config, trained.vocabulary, output,
                            lower_case=trained.lower_case, seq_length=trained.seq_length)
  raise UserError(f"unknown export format {export_format!r}: use savedmodel, hf or keras_hub")

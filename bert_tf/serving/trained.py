"""A trained model as `train` left it in `model_dir`, what each export format writes of it
(`export/formats/`)."""

import dataclasses
import os

import keras

from bert_tf.data.tokenization import Vocabulary
from bert_tf.interop.source import RunDirectory
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from bert_tf.model_dir import WEIGHTS_FILE
from bert_tf.serving.portable import ENCODER_SHAPES, PortableModel, encoder_outputs


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


def load_trained(model_dir: str) -> Trained:
  """The final model of a finished train.py run (`RunDirectory.check_finished`). A model_dir
  left with its checkpoints alone gives its newest whole one's weights
  (`RunDirectory.load_weights`) and its side files as that one's record holds them; nothing is
  written into it."""
  run = RunDirectory(model_dir)
  model = pretraining_model(run.config)
  run.load_weights(model, run.config)
  return Trained(model, run.config, run.vocabulary, run.lower_case, run.settings["seq_length"])


def portable_encoder(trained: Trained, seq_length: int = 0) -> PortableModel:
  """The encoder of `trained` on ids, for its LiteRT or ONNX export; `seq_length` 0: the
  run's."""
  return PortableModel(trained.model.get_layer("bert_encoder"), "encoder", encoder_outputs,
                       ENCODER_SHAPES, {}, trained.vocabulary.path, trained.lower_case,
                       seq_length or trained.seq_length)

"""keras-hub presets: the encoder as a `BertBackbone`, the vocabulary as a `BertTokenizer` and
a `BertTextClassifierPreprocessor` of the training sequence length, loadable with
`keras_hub.models.BertBackbone.from_preset(directory)`, `BertTokenizer.from_preset` and
`BertTextClassifier.from_preset(directory, num_classes=N)`.

Our encoder uses keras-hub's layers under `BertBackbone`'s layer names, so the weights copy
one to one. `BertBackbone` computes GELU with the tanh approximation, ours with erf: its
outputs differ from ours by about 1e-3. The tokenizer strips accents when it lower-cases, as
ours (original BERT's) does; where keras-hub's text handling still differs from ours
(NFKC case folding, Unicode spaces, control characters): docs/serving.md.
"""

import json
import os
import tempfile

import keras
import tensorflow as tf

from bert_tf import files
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.model.bert_config import BertConfig

BACKBONE_EPSILON = 1e-12  # fixed in keras-hub's BertBackbone


def preset_tokenizer(vocabulary: Vocabulary, lower_case: bool):
  """keras-hub's `BertTokenizer` set as ours is: uncased lower-cases and strips accents (its
  default keeps them, which makes "café" [UNK] when the vocabulary learned "cafe")."""
  import keras_hub
  return keras_hub.models.BertTokenizer(vocabulary=vocabulary.tokens, lowercase=lower_case,
                                        strip_accents=lower_case)


def is_keras_hub_preset(path: str) -> bool:
  """A directory keras-hub's `save_to_preset` wrote: its config.json names a registered Keras
  class (a Hugging Face config.json names a `model_type` instead)."""
  config = os.path.join(path, "config.json")
  if not (tf.io.gfile.isdir(path) and tf.io.gfile.exists(config)):
    return False
  with tf.io.gfile.GFile(config) as f:
    try:
      return "registered_name" in json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError, TypeError):
      return False


def export_keras_hub(model: keras.Model, config: BertConfig, vocabulary: Vocabulary,
                     directory: str, *, lower_case: bool, seq_length: int) -> str:
  import keras_hub

  if config.layer_norm_epsilon != BACKBONE_EPSILON:
    raise UserError(f"keras-hub's BertBackbone has layer norms of epsilon {BACKBONE_EPSILON}, "
                    f"this model's are of {config.layer_norm_epsilon}: export it as savedmodel "
                    "or hf")
  backbone = keras_hub.models.BertBackbone(
      vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
      num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
      intermediate_dim=config.intermediate_size, dropout=config.hidden_dropout_prob,
      max_sequence_length=config.max_position_embeddings)
  ours = {v.path: v for v in model.get_layer("bert_encoder").weights}
  theirs = {v.path: v for v in backbone.weights}
  if set(ours) != set(theirs):
    raise ValueError(f"encoder and BertBackbone weights differ: {set(ours) ^ set(theirs)}")
  for path, variable in theirs.items():
    variable.assign(ours[path])
  tokenizer = preset_tokenizer(vocabulary, lower_case)
  preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
      tokenizer, sequence_length=seq_length)
  temporary = files.temporary_directory(directory)
  with tempfile.TemporaryDirectory() as local:  # keras-hub writes with open(): local only
    backbone.save_to_preset(local)
    preprocessor.save_to_preset(local)
    files.copy_directory(local, temporary)
  files.replace_directory(temporary, directory)
  return directory

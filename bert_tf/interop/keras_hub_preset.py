"""keras-hub presets: the encoder as a `BertBackbone` and the vocabulary as a `BertTokenizer`,
loadable with `keras_hub.models.BertBackbone.from_preset(directory)`.

Our encoder uses keras-hub's layers under `BertBackbone`'s layer names, so the weights copy
one to one. `BertBackbone` computes GELU with the tanh approximation, ours with erf: its
outputs differ from ours by about 1e-3.
"""

import tempfile

import keras

from bert_tf import files
from bert_tf.config import BertConfig
from bert_tf.data.tokenization import Vocabulary


def export_keras_hub(model: keras.Model, config: BertConfig, vocabulary: Vocabulary,
                     directory: str, *, lower_case: bool) -> str:
  import keras_hub

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
  temporary = files.temporary_directory(directory)
  with tempfile.TemporaryDirectory() as local:  # keras-hub writes with open(): local only
    backbone.save_to_preset(local)
    keras_hub.models.BertTokenizer(vocabulary=vocabulary.tokens,
                                   lowercase=lower_case).save_to_preset(local)
    files.copy_directory(local, temporary)
  files.replace_directory(temporary, directory)
  return directory

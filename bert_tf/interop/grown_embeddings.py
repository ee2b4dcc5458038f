"""A published BERT's weights carried over to a model of its vocabulary grown
(`data/vocabulary_growth.py`): every weight as it was, and for each new token a row of the
word embeddings (tied to the MLM output's) and of the MLM output bias that starts as the mean
of the rows of the pieces the old vocabulary cut the word into, so that the model reads a new
token at first as it read the word before."""

import logging

import keras
import numpy as np

from bert_tf.data.tokenization import Vocabulary
from bert_tf.data.vocabulary_fit import piece_ids
from bert_tf.data.vocabulary_growth import new_tokens
from bert_tf.errors import UserError
from bert_tf.interop.source import Source
from bert_tf.interop.state import load_state, model_state
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model

log = logging.getLogger("bert_tf")

EMBEDDINGS, OUTPUT_BIAS = "bert.embeddings.word_embeddings.weight", "cls.predictions.bias"


def grow_state(state: dict, base: Vocabulary, grown: Vocabulary, lower_case: bool) -> dict:
  """The canonical `state` of a model of `base`, for a model of `grown`."""
  added = new_tokens(base, grown)
  if added is None:
    raise UserError(f"the vocabulary {grown.path} is not {base.path} grown: only its "
                    "[unusedK] tokens may change, and tokens be appended")
  ids = piece_ids(list(added.values()), base, lower_case)
  state = dict(state)
  for name in (EMBEDDINGS, OUTPUT_BIAS):
    if name not in state:
      continue  # a checkpoint without the MLM head: it starts at random
    old = np.asarray(state[name], np.float32)
    rows = np.concatenate([old, np.zeros((len(grown) - len(base), *old.shape[1:]), np.float32)])
    for token_id, pieces in zip(added, ids):
      rows[token_id] = old[pieces].mean(axis=0)
    state[name] = rows
  return state


def load_grown(source: Source, model: keras.Model, config: BertConfig, base: Vocabulary,
               grown: Vocabulary, lower_case: bool) -> None:
  """Sets the weights of `model`, a pre-training model of `config` over `grown`, from
  `source`, a model over `base`: read into a model of the source's own shape first."""
  source_model = pretraining_model(source.config)
  source.load_weights(source_model, source.config)
  state = grow_state(model_state(source_model, source.config), base, grown, lower_case)
  load_state(model, config, state, source.path)

"""Everything a run checks and builds before the model exists: the settings, the corpus, the
held-out data, the model_dir, the vocabulary (learned from the corpus when it does not exist
yet) and the model's shape. Cheap checks come first, so that a mistake costs seconds."""

import logging
import os

import tensorflow as tf

from bert_tf import files
from bert_tf.model.bert_config import BertConfig, resolve_config
from bert_tf.data import corpus
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.interop import init_checkpoint
from bert_tf.runtime import failures
from bert_tf.training.watching import evaluation, probe
from bert_tf.training.train_settings import TrainConfig
from bert_tf.data.vocabulary_learner import build_vocabulary

log = logging.getLogger("bert_tf")


def _check_model_dir(model_dir: str) -> None:
  try:
    tf.io.gfile.makedirs(model_dir)
    test_file = os.path.join(model_dir, ".write_test")
    files.write_text(test_file, "")
    tf.io.gfile.remove(test_file)
  except OSError as e:
    raise UserError(f"model_dir {model_dir} is not writable: {e}") from None
  except tf.errors.OpError as e:
    raise UserError(f"model_dir {model_dir} is not writable: {failures.describe(e)}") from None


def model_shape(config: TrainConfig, vocabulary: Vocabulary) -> BertConfig:
  """The --config preset or file for this vocabulary, with --dropout in place of its own."""
  bert_config = resolve_config(config.config, len(vocabulary))
  if config.dropout is not None:
    bert_config = bert_config.replace(hidden_dropout_prob=config.dropout,
                                      attention_probs_dropout_prob=config.dropout)
  bert_config.check_seq_length(config.seq_length)
  return bert_config


def prepare(config: TrainConfig) -> tuple[Vocabulary, BertConfig]:
  """Checks every input; returns the vocabulary (built first when `vocab_file` does not
  exist yet) and the model's shape."""
  config.check()
  corpus.check_documents(corpus.list_files(config.input_files, config.data_dir),
                         config.input_format, needed=2 if config.nsp else 1)
  evaluation.check_held_out(config)
  probe.check_probe(config)
  _check_model_dir(config.model_dir)
  if not tf.io.gfile.exists(config.vocab_file):
    log.info("Vocabulary %s does not exist: building it from the corpus", config.vocab_file)
    build_vocabulary(config.input_files, config.vocab_file, vocab_size=config.vocab_size,
                     lower_case=config.do_lower_case, input_format=config.input_format,
                     min_token_count=config.min_token_count, data_dir=config.data_dir)
  vocabulary = Vocabulary(config.vocab_file)
  bert_config = model_shape(config, vocabulary)
  init_checkpoint.check(config.init_checkpoint, bert_config, config.vocab_file)
  init_checkpoint.check_case(config.init_checkpoint, config.do_lower_case)
  return vocabulary, bert_config

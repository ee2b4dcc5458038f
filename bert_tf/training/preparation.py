"""Everything a run checks and builds before the model exists: the settings, the corpus (or
the records, against the vocabulary), the held-out data, the model_dir, the vocabulary (learned
from a text corpus when it does not exist yet) and the model's shape. Cheap checks come first,
so that a mistake costs seconds."""

import dataclasses
import logging
import os

import tensorflow as tf

from bert_tf import files
from bert_tf.data import builtin_corpus, corpus, record_checks
from bert_tf.data.data_settings import RECORDS
from bert_tf.data.tokenization import Vocabulary
from bert_tf.data.vocabulary_learner import build_vocabulary
from bert_tf.errors import UserError
from bert_tf.interop import init_checkpoint
from bert_tf.model.bert_config import BertConfig, resolve_config
from bert_tf.runtime import failures
from bert_tf.training.grown_vocabulary import run_vocabulary
from bert_tf.training.train_settings import TrainConfig
from bert_tf.training.watching import evaluation, probe

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


def record_shaped(config: TrainConfig, vocabulary: Vocabulary) -> TrainConfig:
  """Checks the records (--input_files, and --eval_files) against each other and the
  vocabulary, and the --eval_fraction split of them; `config` with their seq_length and
  max_predictions_per_seq in place of the defaults (a value given otherwise is an error)."""
  listed = {name: corpus.list_files(patterns) for name, patterns in (
      ("input_files", config.input_files), ("eval_files", config.eval_files)) if patterns}
  checked = {name: record_checks.check_records(files, vocabulary, config.record_compression)
             for name, files in listed.items()}
  if config.eval_fraction:
    record_checks.check_split(listed["input_files"], config.record_compression,
                              config.eval_fraction)
  shape = checked["input_files"]
  if checked.get("eval_files", shape) != shape:
    held_out = checked["eval_files"]
    raise UserError(f"the --eval_files records hold {held_out.seq_length} tokens and "
                    f"{held_out.max_predictions_per_seq} predictions, the --input_files records "
                    f"{shape.seq_length} and {shape.max_predictions_per_seq}")
  fields = {field.name: field for field in dataclasses.fields(config)}
  found = {"seq_length": shape.seq_length,
           "max_predictions_per_seq": shape.max_predictions_per_seq}
  defaulted = {name: value for name, value in found.items()
               if getattr(config, name) == fields[name].default}
  config = dataclasses.replace(config, **defaulted)
  shape.check_settings(config.seq_length, config.max_predictions_per_seq)
  log.info("Records of %d tokens and %d predictions each", shape.seq_length,
           shape.max_predictions_per_seq)
  return config


def _check_corpus(config: TrainConfig) -> None:
  if config.input_format != RECORDS:
    mixed = config.weights() is not None
    for number, files in enumerate(
        corpus.training_groups(config.input_files, mixed, config.data_dir), 1):
      with corpus.about_group(number if mixed else None, config.input_files):
        corpus.check_documents(files, config.input_format, needed=2 if config.nsp else 1)
    evaluation.check_held_out(config)
    return
  if config.input_files == builtin_corpus.NAME:
    raise UserError("--input_format=tfrecord reads --input_files as records: give them (the "
                    "built-in corpus is text)")
  if not tf.io.gfile.exists(config.vocab_file):
    raise UserError(f"--vocab_file {config.vocab_file} does not exist: records are read with "
                    "the vocabulary they were made with")


def prepare(config: TrainConfig) -> tuple[TrainConfig, Vocabulary, BertConfig]:
  """Checks every input; returns the settings (with the records' shape when the input is
  records), the vocabulary (built first when `vocab_file` does not exist yet; grown by
  --add_vocabulary) and the model's shape."""
  config.check()
  _check_corpus(config)
  probe.check_probe(config)
  _check_model_dir(config.model_dir)
  if not tf.io.gfile.exists(config.vocab_file):
    log.info("Vocabulary %s does not exist: building it from the corpus", config.vocab_file)
    build_vocabulary(config.input_files, config.vocab_file, vocab_size=config.vocab_size,
                     lower_case=config.do_lower_case, input_format=config.input_format,
                     min_token_count=config.min_token_count, data_dir=config.data_dir)
  vocabulary = Vocabulary(config.vocab_file)
  if config.input_format == RECORDS:
    config = record_shaped(config, vocabulary)
  bert_config = model_shape(config, vocabulary)
  init_checkpoint.check(config.init_checkpoint, bert_config, config.vocab_file)
  init_checkpoint.check_case(config.init_checkpoint, config.do_lower_case)
  vocabulary = run_vocabulary(config, vocabulary)
  return config, vocabulary, bert_config.replace(vocab_size=len(vocabulary))

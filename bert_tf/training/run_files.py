"""The files that make a model_dir stand alone: the model's shape (`bert_config.json`), its
vocabulary, the run's settings (`train_config.json`), its corpus's fingerprint (`corpus.json`,
see `run_changes`) and its command line as a flagfile (`flags.txt`). Exports and fine-tuning
read them; they are written once the checkpoint (if any) is known to fit the model. Each
checkpoint carries the same facts as its record (`run_record_of`, `bert_tf/run_record.py`)."""

import dataclasses
import os

from bert_tf import files, run_record
from bert_tf.data.tokenization import Vocabulary
from bert_tf.model.bert_config import BertConfig
from bert_tf.model_dir import CONFIG_FILE, TRAIN_CONFIG_FILE, VOCAB_FILE
from bert_tf.training import run_changes
from bert_tf.training.train_settings import TrainConfig

FLAGS_FILE = "flags.txt"


def write_run_files(config: TrainConfig, bert_config: BertConfig, vocabulary: Vocabulary,
                    flags_text: str = "") -> None:
  bert_config.to_json_file(os.path.join(config.model_dir, CONFIG_FILE))
  files.write_json(os.path.join(config.model_dir, TRAIN_CONFIG_FILE),
                   dataclasses.asdict(config))
  run_changes.write_corpus_fingerprint(config)
  vocab_copy = os.path.join(config.model_dir, VOCAB_FILE)
  if os.path.abspath(vocabulary.path) != os.path.abspath(vocab_copy):
    files.copy(vocabulary.path, vocab_copy)
  if flags_text:
    files.write_text(os.path.join(config.model_dir, FLAGS_FILE), flags_text)


def run_record_of(config: TrainConfig, bert_config: BertConfig, vocabulary: Vocabulary) -> dict:
  """The record each checkpoint of this run carries: what the side files hold."""
  return run_record.make(bert_config.to_dict(), vocabulary.tokens, dataclasses.asdict(config),
                         run_changes.corpus_fingerprint(config))

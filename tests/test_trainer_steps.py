"""The steps of `trainer.train` on their own: the model's shape, the files that make a model_dir
stand alone, and the run lock released whatever happens (the checks of the settings:
test_train_settings.py)."""

import dataclasses
import glob
import json
import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import builtin_corpus
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.runtime import run_lock
from bert_tf.training import preparation, run_files, trainer
from bert_tf.training.train_settings import TrainConfig
from bert_tf.training.watching import report
from helpers import small_batch, tiny_bert


def test_model_shape_takes_the_vocabulary_size_and_dropout(vocab_file):
  vocabulary = Vocabulary(vocab_file)
  shape = preparation.model_shape(TrainConfig(config="bert_tiny", dropout=0.0), vocabulary)
  assert shape.vocab_size == len(vocabulary)
  assert shape.hidden_dropout_prob == shape.attention_probs_dropout_prob == 0.0
  with pytest.raises(UserError, match="exceeds the model's 512 position embeddings"):
    preparation.model_shape(TrainConfig(seq_length=1024, max_predictions_per_seq=200),
                            vocabulary)


def test_run_files_make_the_model_dir_stand_alone(tmp_path, data_dir, vocab_file):
  vocabulary = Vocabulary(vocab_file)
  config = TrainConfig(model_dir=str(tmp_path), data_dir=data_dir, vocab_file=vocab_file,
                       seq_length=64)
  bert_config = preparation.model_shape(config, vocabulary)
  run_files.write_run_files(config, bert_config, vocabulary, "--seq_length=64\n")
  assert json.loads((tmp_path / "train_config.json").read_text()) == dataclasses.asdict(config)
  assert json.loads((tmp_path / "bert_config.json").read_text())["vocab_size"] == len(vocabulary)
  assert (tmp_path / "vocab.txt").read_text() == open(vocab_file).read()
  assert (tmp_path / "flags.txt").read_text() == "--seq_length=64\n"
  corpus_files = json.loads((tmp_path / "corpus.json").read_text())
  assert sorted(corpus_files) == sorted(glob.glob(builtin_corpus.corpus_pattern(data_dir)))
  assert [size for size, _ in corpus_files.values()] == [
      os.path.getsize(path) for path in sorted(corpus_files)]


def test_a_failed_run_leaves_the_model_dir_free_for_the_next_call(tmp_path, caplog):
  """In a notebook: an exception inside `train` releases the lock, so that the next call in
  the same process takes the model_dir at once, without a warning or an error."""
  config = TrainConfig(model_dir=str(tmp_path / "run"), input_files=str(tmp_path / "none.txt"))
  for _ in range(2):
    with caplog.at_level(logging.INFO, logger="bert_tf"):
      with pytest.raises(UserError, match="no file matches"):
        trainer.train(config)
    assert not os.path.exists(os.path.join(config.model_dir, run_lock.LOCK_FILE))
  assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def test_an_mlm_only_run_trains_no_nsp_head():
  """--nonsp is MLM only: pairing still draws an IsNext label for each example (its random
  stream stays aligned), but the NSP loss is compiled at weight 0, so those coin flips train
  neither the NSP head nor the encoder under it; the final figures leave out the NSP ones."""
  model = pretraining_model(tiny_bert())
  options = trainer._compile_options(TrainConfig(nsp=False))
  compile_for_pretraining(model, keras.optimizers.SGD(learning_rate=1.0), **options)
  head = [w.numpy() for w in model.get_layer("nsp").weights]
  model.train_step(tf.nest.map_structure(tf.convert_to_tensor, small_batch()))
  for before, after in zip(head, model.get_layer("nsp").weights, strict=True):
    np.testing.assert_array_equal(after.numpy(), before)
  assert trainer._compile_options(TrainConfig())["nsp_loss_weight"] == 1.0
  figures = dict(steps=6, examples_per_second=100.0, mlm_accuracy=0.1, mlm_loss=7.0,
                 most_frequent_token_accuracy=0.08, nsp_accuracy=0.5, nsp_loss=0.69,
                 eval_mlm_accuracy=0.1, eval_mlm_loss=7.1, eval_nsp_accuracy=0.5,
                 eval_nsp_loss=0.7)
  assert report.summary(figures).count("NSP") == 4  # accuracy and loss, trained and held out
  mlm_only = report.summary(figures, nsp=False)
  assert "NSP" not in mlm_only and "MLM loss 7.100." in mlm_only

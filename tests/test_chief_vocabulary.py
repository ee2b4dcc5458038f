"""A multi-worker run without its vocabulary: the chief alone learns it; every other worker
waits for the chief's file, and says in one line when it never comes."""

import os
import shutil
import threading

import pytest
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.runtime import cluster
from bert_tf.training import chief_vocabulary, preparation
from bert_tf.training.train_settings import TrainConfig


def worker(index: int):
  return tf.distribute.cluster_resolver.SimpleClusterResolver(
      tf.train.ClusterSpec({"worker": ["127.0.0.1:1", "127.0.0.1:2"]}), task_type="worker",
      task_id=index)


@pytest.fixture
def learning(monkeypatch, vocab_file):
  """The vocabularies this process learned: the learner stands in, writing `vocab_file`."""
  learned = []

  def build_vocabulary(input_files, path, **settings):
    learned.append(path)
    shutil.copy(vocab_file, path)
    return Vocabulary(path)

  monkeypatch.setattr(preparation, "build_vocabulary", build_vocabulary)
  return learned


def inputs_without_vocabulary(path) -> preparation.CheckedInputs:
  return preparation.CheckedInputs(TrainConfig(vocab_file=str(path)), None, None)


def test_the_chief_learns_the_vocabulary(monkeypatch, learning, tmp_path, vocab_file):
  monkeypatch.setattr(cluster, "_joined", worker(0))
  vocabulary = preparation.learned_vocabulary(inputs_without_vocabulary(tmp_path / "vocab.txt"))
  assert learning == [str(tmp_path / "vocab.txt")]
  assert vocabulary == Vocabulary(vocab_file)


def test_another_worker_waits_for_the_chiefs_file(monkeypatch, learning, tmp_path, vocab_file):
  monkeypatch.setattr(cluster, "_joined", worker(1))
  path, staged = tmp_path / "vocab.txt", tmp_path / "staged"
  shutil.copy(vocab_file, staged)
  chief = threading.Timer(1.5, os.replace, (staged, path))  # the chief's whole file, renamed
  chief.start()
  try:
    vocabulary = preparation.learned_vocabulary(inputs_without_vocabulary(path))
  finally:
    chief.join()
  assert learning == []
  assert vocabulary == Vocabulary(vocab_file)


def test_a_vocabulary_that_never_comes_is_one_line(monkeypatch, learning, tmp_path):
  monkeypatch.setattr(cluster, "_joined", worker(1))
  monkeypatch.setattr(chief_vocabulary, "WAIT_SECONDS", 0.5)
  path = tmp_path / "vocab.txt"
  with pytest.raises(UserError, match=f"^the vocabulary {path} did not appear within 0.5 s: "
                                      "the chief learns it; did it stop?"):
    preparation.learned_vocabulary(inputs_without_vocabulary(path))
  assert learning == [] and not path.exists()

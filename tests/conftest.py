"""Shared fixtures: the built-in corpus and a vocabulary learned from it, made once per run."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

from bert_tf.data import builtin_corpus  # noqa: E402


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
  """A data directory holding the built-in corpus (Python's language reference)."""
  directory = tmp_path_factory.mktemp("data")
  builtin_corpus.corpus_pattern(str(directory))
  return str(directory)


@pytest.fixture(scope="session")
def corpus_pattern(data_dir):
  return builtin_corpus.corpus_pattern(data_dir)


@pytest.fixture(scope="session")
def vocab_file(data_dir, corpus_pattern):
  """A real WordPiece vocabulary (about 3,400 tokens) learned from the built-in corpus."""
  from bert_tf.data.vocabulary_learner import build_vocabulary
  path = os.path.join(data_dir, "vocab.txt")
  build_vocabulary(corpus_pattern, path, vocab_size=8000)
  return path

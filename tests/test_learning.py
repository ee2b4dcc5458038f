"""A tiny BERT learns: 300 steps of real text (the built-in corpus) lower the MLM loss and raise
the MLM accuracy well above always predicting the most frequent masked token."""

import json
import time

import pytest

from bert_tf.data.vocabulary_learner import build_vocabulary
from bert_tf.training.trainer import TrainConfig, train


@pytest.mark.e2e
def test_training_learns(tmp_path, data_dir, corpus_pattern):
  """300 steps of a tiny BERT on real text (the built-in corpus): the MLM loss falls and the
  MLM accuracy, measured on fresh batches, is well above always predicting the most frequent
  masked token. A small vocabulary (about 1,000 pieces), short sequences and MLM only make it
  learn within 300 steps: measured 2026-12-01, accuracy 0.134 against 0.063, loss from 6.9 to
  5.4 (one run on the shared 2-core machine: about a minute)."""
  vocab_file = str(tmp_path / "vocab.txt")
  build_vocabulary(corpus_pattern, vocab_file, vocab_size=1000)
  config = TrainConfig(data_dir=data_dir, vocab_file=vocab_file,
                       model_dir=str(tmp_path / "run"), config="bert_tiny", dropout=0.0,
                       seq_length=32, max_predictions_per_seq=13, masked_lm_prob=0.4,
                       nsp=False, global_batch_size=32, train_steps=300, warmup_steps=20,
                       learning_rate=2e-3, checkpoint_every=300, eval_steps=20, verbose=0,
                       serving_export=False)
  start = time.monotonic()
  metrics = train(config)
  elapsed = time.monotonic() - start
  assert metrics["steps"] == 300
  history = [json.loads(line) for line in open(tmp_path / "run" / "history.jsonl")]
  assert history[-1]["mlm_loss"] < history[0]["mlm_loss"] - 1.0
  assert metrics["mlm_loss"] < history[0]["mlm_loss"] - 1.0
  assert metrics["mlm_accuracy"] > 1.5 * metrics["most_frequent_token_accuracy"] > 0.03
  # The rate counts training time only (the first step, which traces, left out): the other
  # 299 steps' examples took less than the run's whole time.
  assert metrics["examples_per_second"] * elapsed >= (300 - 1) * 32

"""A re-run on a model_dir that has trained, with changed settings or corpus: each class of
change (model, stream, noted) on a real model_dir, and every setting classified.

One base run (4 steps of 8 examples, on three of the built-in corpus's four files) is copied
for each re-run, so each test changes one thing. The data position in a checkpoint says what
the re-run trained on: (epoch, piece, example) of the last example, one piece per file here.
"""

import dataclasses
import glob
import logging
import os
import shutil

import pytest
import tensorflow as tf

from bert_tf import settings
from bert_tf.data import stream_position
from bert_tf.errors import UserError
from bert_tf.training import trainer
from bert_tf.training.train_settings import TrainConfig

BATCH = 8


def position(model_dir: str, step: int) -> tuple[int, int, int]:
  """(epoch, piece, example) of the last example trained on at `step`."""
  reader = tf.train.load_checkpoint(os.path.join(model_dir, "checkpoints", f"ckpt-{step}"))
  (key,) = reader.get_tensor("data_position/.ATTRIBUTES/VARIABLE_VALUE")
  return stream_position.decode(key)


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory, corpus_pattern):
  """The built-in corpus's first three files; the fourth is kept aside, to be added."""
  directory = tmp_path_factory.mktemp("corpus")
  for path in sorted(glob.glob(corpus_pattern)):
    shutil.copy2(path, directory)
  os.rename(directory / "pydoc_topics-03-of-04.txt", directory / "aside.txt.later")
  return directory


@pytest.fixture(scope="module")
def base(tmp_path_factory, corpus_dir, data_dir, vocab_file):
  """A model_dir that trained 4 steps, and the config it trained with."""
  config = TrainConfig(
      model_dir=str(tmp_path_factory.mktemp("base") / "run"), data_dir=data_dir,
      vocab_file=vocab_file, input_files=str(corpus_dir / "*.txt"), config="bert_tiny",
      seq_length=32, max_predictions_per_seq=5, global_batch_size=BATCH, train_steps=4,
      checkpoint_every=2, warmup_steps=2, eval_steps=1, verbose=False, seed=5)
  trainer.train(config)
  return config


def rerun(base: TrainConfig, tmp_path, caplog, **changes) -> tuple[str, str]:
  """Re-runs a copy of the base model_dir with `changes`: (its model_dir, the log)."""
  model_dir = str(tmp_path / "run")
  shutil.copytree(base.model_dir, model_dir)
  with caplog.at_level(logging.INFO, logger="bert_tf"):
    trainer.train(dataclasses.replace(base, model_dir=model_dir, **changes))
  return model_dir, caplog.text


def test_every_setting_declares_what_changing_it_does():
  unclassified = [field.name for field in settings.declared(TrainConfig)
                  if field.metadata["change"] not in settings.CHANGES]
  assert unclassified == []


def test_docs_table_lists_each_setting_in_its_class():
  text = open(os.path.join(os.path.dirname(__file__), "..", "docs", "reliability.md")).read()
  for change in settings.CHANGES:
    row = next(line for line in text.splitlines() if line.startswith(f"| {change} |"))
    listed = {name.strip(" `-") for name in row.split("|")[2].split(", ")}
    assert listed == {field.name for field in settings.declared(TrainConfig)
                      if field.metadata["change"] == change}, change


@pytest.mark.e2e
def test_base_run_recorded_its_position_and_corpus(base):
  assert position(base.model_dir, 4) == (0, 0, 4 * BATCH - 1)
  assert os.path.exists(os.path.join(base.model_dir, "corpus.json"))


@pytest.mark.e2e
def test_noted_changes_are_said_and_the_stream_goes_on(base, tmp_path, caplog, corpus_dir):
  first = corpus_dir / "pydoc_topics-00-of-04.txt"
  stat = os.stat(first)
  os.utime(first, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # touched, same size
  try:
    model_dir, log = rerun(base, tmp_path, caplog, train_steps=6, learning_rate=5e-4,
                           eval_steps=2)
  finally:
    os.utime(first, ns=(stat.st_atime_ns, stat.st_mtime_ns))
  assert "train_steps 4 -> 6 (noted)" in log
  assert "learning_rate 0.001 -> 0.0005 (noted)" in log
  assert "eval_steps 1 -> 2 (noted)" in log
  assert f"corpus files modified, the same size: {first} (noted)" in log
  assert "stream of examples changed" not in log
  assert position(model_dir, 6) == (0, 0, 6 * BATCH - 1)  # right after step 4's


@pytest.mark.e2e
def test_a_changed_sequence_length_starts_the_next_epoch(base, tmp_path, caplog):
  # Phase 2 on phase 1's model_dir: longer sequences, more steps.
  model_dir, log = rerun(base, tmp_path, caplog, train_steps=6, seq_length=64,
                         max_predictions_per_seq=10)
  assert "seq_length 32 -> 64 (a new stream)" in log
  assert "max_predictions_per_seq 5 -> 10 (a new stream)" in log
  assert "The stream of examples changed: step 4 trains on it from the start of its epoch 1" \
      in log
  assert "Resumed from the checkpoint at step 4" in log
  assert position(model_dir, 6) == (1, 0, 2 * BATCH - 1)


@pytest.mark.e2e
def test_the_restarted_stream_is_saved_before_training(base, tmp_path, caplog):
  # A run stopped before its first checkpoint must not leave the old stream's position under
  # the new train_config.json: the restored step's checkpoint is rewritten at once.
  model_dir, _ = rerun(base, tmp_path, caplog, train_steps=6, seq_length=64,
                       max_predictions_per_seq=10)
  reader = tf.train.load_checkpoint(os.path.join(model_dir, "checkpoints", "ckpt-4"))
  (key,) = reader.get_tensor("data_position/.ATTRIBUTES/VARIABLE_VALUE")
  assert key == stream_position.encode(1, 0, 0) - 1


@pytest.mark.e2e
def test_an_added_corpus_file_starts_the_next_epoch(base, tmp_path, caplog, corpus_dir):
  added = corpus_dir / "pydoc_topics-03-of-04.txt"
  shutil.copy2(corpus_dir / "aside.txt.later", added)
  try:
    model_dir, log = rerun(base, tmp_path, caplog, train_steps=6)
  finally:
    os.remove(added)
  assert f"corpus files added: {added} (a new stream)" in log
  assert "from the start of its epoch 1" in log
  assert position(model_dir, 6) == (1, 0, 2 * BATCH - 1)


@pytest.mark.e2e
def test_another_model_is_an_error(base, tmp_path, caplog):
  with pytest.raises(UserError, match=r"the model differs from the one .* trained \(.*"
                                      r"hidden_size 128 -> 256.*use a new --model_dir"):
    rerun(base, tmp_path, caplog, config="bert_mini")


@pytest.mark.e2e
def test_another_vocabulary_of_the_same_size_is_an_error(base, tmp_path, caplog, vocab_file):
  tokens = open(vocab_file).read().splitlines()
  tokens[-2], tokens[-1] = tokens[-1], tokens[-2]
  other = tmp_path / "other_vocab.txt"
  other.write_text("\n".join(tokens) + "\n")
  with pytest.raises(UserError, match=f"the vocabulary {other} is not the one it trained"):
    rerun(base, tmp_path, caplog, vocab_file=str(other))

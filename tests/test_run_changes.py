"""A re-run on a model_dir that has trained, with changed settings or corpus: each class of
change (model, stream, noted) on a real model_dir, and every setting classified.

One base run (4 steps of 8 examples, on three of the built-in corpus's four files) is copied
for each re-run, so each re-run changes one class of thing (tests that read the same re-run
share it). The data position in a checkpoint says what
the re-run trained on: (epoch, piece, example) of the last example, one piece per file here.
"""

import dataclasses
import gc
import glob
import hashlib
import json
import logging
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import audit, run_record, settings
from bert_tf.data import stream_position
from bert_tf.errors import UserError
from bert_tf.export.formats.export_config import ExportConfig
from bert_tf.interop.source import open_source
from bert_tf.runtime import precision
from bert_tf.serving import trained
from bert_tf.training import trainer
from bert_tf.training.train_settings import TrainConfig
from helpers import Logged, one_layer_config

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
      vocab_file=vocab_file, input_files=str(corpus_dir / "*.txt"),
      config=one_layer_config(vocab_file),
      seq_length=32, max_predictions_per_seq=5, global_batch_size=BATCH, train_steps=4,
      checkpoint_every=2, warmup_steps=2, eval_steps=1, verbose=False, seed=5,
      serving_export=False)
  trainer.train(config)
  return config


def rerun(base: TrainConfig, tmp_path, caplog, **changes) -> tuple[str, str]:
  """Re-runs a copy of the base model_dir with `changes`: (its model_dir, the log)."""
  model_dir = str(tmp_path / "run")
  shutil.copytree(base.model_dir, model_dir)
  with caplog.at_level(logging.INFO, logger="bert_tf"):
    trainer.train(dataclasses.replace(base, model_dir=model_dir, **changes))
  return model_dir, caplog.text


def shared_rerun(base: TrainConfig, directory, **changes) -> tuple[str, Logged]:
  """As `rerun`, for a module's fixture (a re-run that several tests read): (its model_dir,
  what was logged, the collection after the run included)."""
  model_dir = str(directory / "run")
  shutil.copytree(base.model_dir, model_dir)
  with Logged() as logged:
    trainer.train(dataclasses.replace(base, model_dir=model_dir, **changes))
    gc.collect()  # TensorFlow warns of what a restore left unused when its status is deleted
  return model_dir, logged


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


@pytest.fixture(scope="module")
def noted(base, tmp_path_factory, corpus_dir):
  """A re-run with noted changes only: more steps, another learning rate, more evaluation
  batches, dropout off, the precision chosen by the hardware, and a corpus file touched (its
  size the same); (its model_dir, what was logged, the touched file)."""
  first = corpus_dir / "pydoc_topics-00-of-04.txt"
  stat = os.stat(first)
  os.utime(first, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # touched, same size
  try:
    model_dir, logged = shared_rerun(base, tmp_path_factory.mktemp("noted"), train_steps=6,
                                     learning_rate=5e-4, eval_steps=2, dropout=0.0,
                                     mixed_precision="auto")
  finally:
    os.utime(first, ns=(stat.st_atime_ns, stat.st_mtime_ns))
  return model_dir, logged, first


@pytest.mark.e2e
def test_noted_changes_are_said_and_the_stream_goes_on(noted):
  model_dir, logged, first = noted
  log = logged.text
  assert "train_steps 4 -> 6 (noted)" in log
  assert "learning_rate 0.001 -> 0.0005 (noted)" in log
  assert "eval_steps 1 -> 2 (noted)" in log
  chosen = precision.choose("auto")  # the record holds the choice, and the line says it
  assert f"precision: {chosen}" in log
  assert (f"mixed_precision 'none' -> '{chosen.name}' (noted)" in log) == (chosen.name != "none")
  recorded = json.load(open(os.path.join(model_dir, "train_config.json")))
  assert (recorded["mixed_precision"], recorded["precision_reason"]) == (chosen.name,
                                                                         chosen.reason)
  assert f"corpus files modified, the same size: {first} (noted)" in log
  assert "stream of examples changed" not in log
  assert position(model_dir, 6) == (0, 0, 6 * BATCH - 1)  # right after step 4's


@pytest.fixture(scope="module")
def longer(base, tmp_path_factory):
  """Phase 2 on phase 1's model_dir: longer sequences, more steps; (its model_dir, what was
  logged)."""
  return shared_rerun(base, tmp_path_factory.mktemp("longer"), train_steps=6, seq_length=64,
                      max_predictions_per_seq=10)


@pytest.mark.e2e
def test_a_changed_sequence_length_starts_the_next_epoch(longer):
  model_dir, logged = longer
  log = logged.text
  assert "seq_length 32 -> 64 (a new stream)" in log
  assert "max_predictions_per_seq 5 -> 10 (a new stream)" in log
  assert "The stream of examples changed: step 4 trains on it from the start of its epoch 1" \
      in log
  assert "Resumed from the checkpoint at step 4" in log
  assert position(model_dir, 6) == (1, 0, 2 * BATCH - 1)


@pytest.mark.e2e
def test_the_restarted_stream_is_saved_before_training(longer):
  # A run stopped before its first checkpoint must not leave the old stream's position under
  # the new train_config.json: the restored step's checkpoint is rewritten at once.
  model_dir, _ = longer
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


@pytest.mark.e2e
def test_a_finished_run_rerun_keeps_its_figures(base, tmp_path, caplog):
  before = json.load(open(os.path.join(base.model_dir, "metrics.json")))
  model_dir, log = rerun(base, tmp_path, caplog)
  after = json.load(open(os.path.join(model_dir, "metrics.json")))
  assert "(--train_steps reached: nothing to train)" in log
  assert before["examples_per_second"] > 0 and before["tokens_per_second"] > 0
  for name in ("examples_per_second", "tokens_per_second", "padding_share"):
    assert after[name] == before[name], name
  assert after["steps"] == 4


@pytest.mark.e2e
def test_resuming_without_dropout_warns_nothing(noted):
  # The checkpoint holds the dropout layers' random-number states; this model has none.
  model_dir, logged, _ = noted
  assert "dropout None -> 0.0 (noted)" in logged.text
  assert [r.getMessage() for r in logged.records if r.levelno >= logging.WARNING
          and "checkpoint" in r.getMessage()] == []
  assert position(model_dir, 6) == (0, 0, 6 * BATCH - 1)


SIDE_FILES = ("bert_config.json", "vocab.txt", "train_config.json", "corpus.json")


def stripped(base: TrainConfig, tmp_path) -> str:
  """A copy of the base model_dir left with its checkpoints alone."""
  model_dir = tmp_path / "run"
  shutil.copytree(os.path.join(base.model_dir, "checkpoints"), model_dir / "checkpoints")
  return str(model_dir)


@pytest.mark.e2e
def test_each_checkpoint_carries_the_runs_record(base):
  record = run_record.read(os.path.join(base.model_dir, "checkpoints", "ckpt-4"))
  side = {name: open(os.path.join(base.model_dir, name)).read() for name in SIDE_FILES}
  assert run_record.side_files(record) == side
  tokens = side["vocab.txt"].splitlines()
  assert record["vocabulary"]["size"] == len(tokens)
  assert record["vocabulary"]["sha256"] == hashlib.sha256(
      side["vocab.txt"].encode("utf-8")).hexdigest()
  lines = audit.describe_checkpoint(base.model_dir)
  assert lines[:2] == [f"checkpoint  {base.model_dir}/checkpoints/ckpt-4", "step        4"]
  assert "hidden_size 128" in lines[2] and "num_hidden_layers 1" in lines[2]
  assert lines[3] == f"vocabulary  {len(tokens)} tokens, sha256 {record['vocabulary']['sha256']}"
  assert [line.split()[1] for line in lines if line.startswith("corpus")] == sorted(
      json.loads(side["corpus.json"]))
  assert json.loads(lines[-1].removeprefix("settings    ")) == json.loads(
      side["train_config.json"])


def rerun_stripped(base, tmp_path, caplog, **changes) -> tuple[str, str]:
  """As `rerun`, on a copy of the base model_dir that has its checkpoints alone."""
  model_dir = stripped(base, tmp_path)
  with caplog.at_level(logging.INFO, logger="bert_tf"):
    trainer.train(dataclasses.replace(base, model_dir=model_dir, **changes))
  return model_dir, caplog.text


@pytest.mark.e2e
def test_without_side_files_a_changed_sequence_length_is_said_the_same(base, tmp_path, caplog):
  model_dir, log = rerun_stripped(base, tmp_path, caplog, train_steps=6, seq_length=64,
                                  max_predictions_per_seq=10)
  assert (f"{model_dir} has no bert_config.json, train_config.json, corpus.json, vocab.txt: "
          "compared with the record in its checkpoint") in log
  assert "seq_length 32 -> 64 (a new stream)" in log
  assert "The stream of examples changed: step 4 trains on it from the start of its epoch 1" \
      in log
  assert position(model_dir, 6) == (1, 0, 2 * BATCH - 1)
  for name in SIDE_FILES:  # written again by the run
    assert os.path.exists(os.path.join(model_dir, name)), name


@pytest.mark.e2e
def test_without_side_files_another_vocabulary_or_model_is_an_error(base, tmp_path, caplog,
                                                                    vocab_file):
  tokens = open(vocab_file).read().splitlines()
  tokens[-2], tokens[-1] = tokens[-1], tokens[-2]
  other = tmp_path / "other_vocab.txt"
  other.write_text("\n".join(tokens) + "\n")
  with pytest.raises(UserError, match=f"the vocabulary {other} is not the one it trained"):
    rerun_stripped(base, tmp_path / "a", caplog, vocab_file=str(other))
  with pytest.raises(UserError, match=r"the model differs from the one .* trained \(.*"
                                      r"hidden_size 128 -> 256.*use a new --model_dir"):
    rerun_stripped(base, tmp_path / "b", caplog, config="bert_mini")


@pytest.mark.e2e
def test_side_files_that_disagree_with_the_checkpoint_are_not_believed(base, tmp_path, caplog,
                                                                       corpus_dir):
  model_dir = str(tmp_path / "run")
  shutil.copytree(base.model_dir, model_dir)
  recorded = json.load(open(os.path.join(model_dir, "train_config.json")))
  json.dump({**recorded, "seq_length": 64}, open(os.path.join(model_dir, "train_config.json"),
                                                 "w"))
  with caplog.at_level(logging.INFO, logger="bert_tf"):
    with pytest.raises(UserError, match="hidden_size 128 -> 256"):
      trainer.train(dataclasses.replace(base, model_dir=model_dir, config="bert_mini"))
  assert (f"{model_dir}: train_config.json disagree with the record in its checkpoint "
          f"{model_dir}/checkpoints/ckpt-4: the checkpoint is believed") in caplog.text


def file_tree(directory: str) -> dict[str, bytes]:
  """Every file under `directory`, by its path there, with its bytes."""
  return {os.path.relpath(os.path.join(folder, name), directory):
          open(os.path.join(folder, name), "rb").read()
          for folder, _, names in os.walk(directory) for name in names}


@pytest.mark.e2e
def test_a_model_dir_with_its_checkpoints_alone_exports_writing_nothing_into_it(
    base, tmp_path, caplog):
  from bert_tf.export.__main__ import export  # its import starts the console
  model_dir = stripped(base, tmp_path)
  before = file_tree(model_dir)
  output = str(tmp_path / "hf")
  with caplog.at_level(logging.INFO, logger="bert_tf"):
    export(ExportConfig(model_dir=model_dir, format="hf", output=output))
  assert file_tree(model_dir) == before
  assert (f"{model_dir} has no bert_config.json, train_config.json, vocab.txt: read from the "
          f"record in its checkpoint {model_dir}/checkpoints/ckpt-4") in caplog.text
  assert open(os.path.join(output, "vocab.txt")).read() == open(
      os.path.join(base.model_dir, "vocab.txt")).read()
  alone = trained.load_trained(model_dir)
  finished = trained.load_trained(base.model_dir)  # its final weights: step 4's
  for found, expected in zip(alone.model.get_weights(), finished.model.get_weights()):
    np.testing.assert_array_equal(found, expected)
  assert (alone.seq_length, alone.lower_case) == (finished.seq_length, finished.lower_case)
  pretrained = open_source(model_dir, "--model_dir")  # as fine-tuning reads it
  pretrained.check_loadable()
  assert pretrained.vocabulary == finished.vocabulary
  assert file_tree(model_dir) == before

"""Training on original BERT's records (--input_format=tfrecord): records written by
`bert_tf.prepare` from the built-in corpus train with train.py, resume exactly after kill -9,
train re-masked, and a setting or vocabulary that does not fit them is one line."""

import dataclasses
import json
import logging
import os
import signal

import numpy as np
import pytest

from bert_tf.audit import audit
from bert_tf.data import record_position
from bert_tf.errors import UserError
from bert_tf.prepare import PrepareConfig, prepare_records
from bert_tf.training import trainer
from bert_tf.training.train_settings import TrainConfig
from helpers import (
  RESUMABLE_STEPS,
  one_layer_config,
  resumable_run,
  run,
  start,
  wait_for_checkpoint,
  weights,
)

SEQ, PREDICTIONS, FILES = 64, 10, 3  # as helpers.RESUMABLE's


@pytest.fixture(scope="module")
def records_pattern(tmp_path_factory, corpus_pattern, data_dir, vocab_file):
  """One epoch of the built-in corpus (about 1,300 examples) as records in three files."""
  directory = tmp_path_factory.mktemp("records")
  config = PrepareConfig(input_files=corpus_pattern, data_dir=data_dir, vocab_file=vocab_file,
                         output=str(directory / "records"), model_dir=str(directory / "run"),
                         seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, dupe_factor=1,
                         num_output_files=FILES, seed=3)
  prepare_records(config)
  return os.path.join(config.output, "*.tfrecord")


def records_run(model_dir, data_dir, vocab_file, records_pattern, *extra):
  """`helpers.resumable_run` on the records."""
  return resumable_run(model_dir, data_dir, vocab_file, "--input_format=tfrecord",
                       f"--input_files={records_pattern}", *extra)


def tiny_config(tmp_path, data_dir, vocab_file, records_pattern, **settings) -> TrainConfig:
  """The one-layer bert_tiny for 4 steps on the records, the records' shape left to them."""
  return TrainConfig(
      model_dir=str(tmp_path / "run"), data_dir=data_dir, vocab_file=vocab_file,
      input_format="tfrecord", input_files=records_pattern,
      config=one_layer_config(vocab_file),
      global_batch_size=8, train_steps=4, checkpoint_every=2, warmup_steps=2, eval_steps=1,
      verbose=False, seed=3, **{"serving_export": False, **settings})


def last_position(model_dir: str, step: int) -> int:
  import tensorflow as tf
  reader = tf.train.load_checkpoint(os.path.join(model_dir, "checkpoints", f"ckpt-{step}"))
  (key,) = reader.get_tensor("data_position/.ATTRIBUTES/VARIABLE_VALUE")
  return int(key)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, data_dir, vocab_file, records_pattern):
  model_dir = str(tmp_path_factory.mktemp("uninterrupted"))
  result = run(records_run(model_dir, data_dir, vocab_file, records_pattern))
  assert result.returncode == 0, result.stderr[-3000:]
  return model_dir, weights(model_dir)


@pytest.mark.e2e
def test_train_py_trains_on_records(uninterrupted):
  model_dir, _ = uninterrupted
  metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
  assert metrics["steps"] == RESUMABLE_STEPS
  assert 0 < metrics["mlm_loss"] < 20 and 0 < metrics["nsp_loss"] < 5
  # 8 steps of 8 examples: the last one trained on is record 63 of the pipeline's first file
  # of epoch 0, at most (a file holds about 430 records).
  epoch, file_rank, record_rank = record_position.decode(last_position(model_dir, 8))
  assert (epoch, file_rank, record_rank) == (0, 0, 63)


@pytest.mark.e2e
def test_sigkill_on_records_then_rerun_resumes_exactly(uninterrupted, tmp_path, data_dir,
                                                       vocab_file, records_pattern):
  model_dir = str(tmp_path / "run")
  process = start(records_run(model_dir, data_dir, vocab_file, records_pattern))
  wait_for_checkpoint([model_dir], 4, [process])
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert not os.path.exists(os.path.join(model_dir, "model.weights.h5"))  # killed mid-run
  result = run(records_run(model_dir, data_dir, vocab_file, records_pattern))
  assert result.returncode == 0, result.stderr[-3000:]
  resumed_at = int(result.stderr.split("Resumed from the checkpoint at step ")[1].split()[0])
  assert 4 <= resumed_at < RESUMABLE_STEPS
  resumed, (_, expected) = weights(model_dir), uninterrupted
  assert sorted(resumed) == sorted(expected)
  for name in expected:
    np.testing.assert_allclose(resumed[name], expected[name], atol=1e-5, err_msg=name)


@pytest.mark.e2e
def test_remask_trains_with_the_records_shape(tmp_path, data_dir, vocab_file, records_pattern):
  config = tiny_config(tmp_path, data_dir, vocab_file, records_pattern, remask=True,
                       whole_word_masking=True)
  assert config.seq_length == 128  # the default, left to the records
  metrics = trainer.train(config)
  assert metrics["steps"] == 4 and 0 < metrics["mlm_loss"] < 20
  recorded = json.load(open(os.path.join(config.model_dir, "train_config.json")))
  assert (recorded["seq_length"], recorded["max_predictions_per_seq"]) == (SEQ, PREDICTIONS)
  assert recorded["remask"] is True


@pytest.fixture(scope="module")
def short_records(tmp_path_factory, corpus_pattern, data_dir, vocab_file):
  """One epoch of the built-in corpus at 32 tokens and 5 predictions, seed 7, dealt to three
  files: the records a one-pipeline run of those settings reads, in its order."""
  directory = tmp_path_factory.mktemp("short_records")
  config = PrepareConfig(input_files=corpus_pattern, data_dir=data_dir, vocab_file=vocab_file,
                         output=str(directory / "records"), model_dir=str(directory / "run"),
                         seq_length=32, max_predictions_per_seq=5, dupe_factor=1,
                         num_output_files=3, seed=7)
  prepare_records(config)
  return os.path.join(config.output, "*.tfrecord")


def _step_losses(config: TrainConfig) -> list[tuple]:
  trainer.train(config)
  with open(os.path.join(config.model_dir, "history.jsonl")) as f:
    rows = [json.loads(line) for line in f]
  return [(row["step"], row["loss"], row["mlm_loss"], row["nsp_loss"]) for row in rows
          if "loss" in row]


@pytest.fixture(scope="module")
def text_run(tmp_path_factory, corpus_pattern, data_dir, vocab_file):
  """The one-layer bert_tiny trained 5 steps on the built-in corpus's text with
  `short_records`' settings, its loss logged at every step: (its config, the losses). The
  reference of the records' loss curve, and the text run that a run on the records follows."""
  config = TrainConfig(
      model_dir=str(tmp_path_factory.mktemp("text") / "run"), data_dir=data_dir,
      vocab_file=vocab_file, input_files=corpus_pattern, config=one_layer_config(vocab_file),
      seq_length=32,
      max_predictions_per_seq=5, global_batch_size=8, train_steps=5, checkpoint_every=5,
      warmup_steps=2, log_every=1, verbose=False, seed=7, serving_export=False)
  return config, _step_losses(config)


@pytest.mark.e2e
def test_prepared_records_train_to_the_loss_curve_of_the_text(tmp_path, text_run,
                                                               short_records):
  text, losses = text_run
  records = dataclasses.replace(text, model_dir=str(tmp_path / "records"),
                                input_format="tfrecord", input_files=short_records,
                                shuffle_records=False)
  # Read unshuffled (the three files interleaved in the turn they were dealt in), the records
  # are the text stream's first epoch batch for batch; the default shuffled reading would give
  # other batches.
  assert [row[0] for row in losses] == [1, 2, 3, 4, 5]
  np.testing.assert_allclose(_step_losses(records), losses, rtol=1e-6)


@pytest.mark.e2e
def test_switching_between_text_and_records_starts_the_new_stream(text_run, short_records,
                                                                  copy_of, caplog):
  text, _ = text_run
  back = dataclasses.replace(text, model_dir=copy_of(text.model_dir), input_format="tfrecord",
                             input_files=short_records, train_steps=7)
  with caplog.at_level(logging.INFO, logger="bert_tf"):
    trainer.train(back)
  assert "The input changed between text and records: step 5 trains on the records from " \
         "their beginning" in caplog.text
  # Steps 6 and 7 read the records' first 16, whatever the text stream's position was.
  assert record_position.decode(last_position(back.model_dir, 7)) == (0, 0, 15)


@pytest.mark.parametrize("settings", [dict(remask=True), dict(record_compression="GZIP"),
                                      dict(shuffle_records=False)])
def test_record_settings_only_with_records(settings):
  with pytest.raises(UserError, match="are for records: give --input_format=tfrecord"):
    TrainConfig(**settings).check()


def test_records_need_input_files(tmp_path, data_dir, vocab_file):
  config = TrainConfig(model_dir=str(tmp_path / "run"), data_dir=data_dir,
                       vocab_file=vocab_file, input_format="tfrecord")
  with pytest.raises(UserError, match="reads --input_files as records: give them"):
    trainer.train(config)


@pytest.mark.e2e
def test_eval_files_of_another_shape(tmp_path, data_dir, vocab_file, records_pattern,
                                     short_records):
  config = tiny_config(tmp_path, data_dir, vocab_file, records_pattern,
                       eval_files=short_records)
  with pytest.raises(UserError, match="the --eval_files records hold 32 tokens and 5 "
                                      "predictions, the --input_files records 64 and 10"):
    trainer.train(config)


def one_line_error(result) -> str:
  """The error line of a command stopped by bad input (exit status 2, no traceback)."""
  assert result.returncode == 2, result.stderr[-3000:]
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  line = result.stderr.strip().splitlines()[-1]
  assert line.startswith("error: "), result.stderr[-3000:]
  return line


@pytest.mark.e2e
def test_a_wrong_seq_length_is_one_line(tmp_path, data_dir, vocab_file, records_pattern):
  line = one_line_error(run(records_run(str(tmp_path / "run"), data_dir, vocab_file,
                                        records_pattern, "--seq_length=96")))
  assert "--seq_length=96 disagrees with the records, whose seq_length is 64" in line


@pytest.mark.e2e
def test_another_vocabulary_is_one_line(tmp_path, data_dir, vocab_file, records_pattern):
  # A smaller vocabulary with the same first tokens (a cased one, read by the in-process
  # check: tests/test_prepare.py).
  other = tmp_path / "other_vocab.txt"
  other.write_text("".join(open(vocab_file).readlines()[:1000]))
  line = one_line_error(run(records_run(str(tmp_path / "run"), data_dir, str(other),
                                        records_pattern)))
  assert line.startswith("error: the records hold id ") and line.endswith(
      f", outside vocabulary {other} (1000 tokens)"), line


@pytest.mark.e2e
def test_audit_measures_the_records(tmp_path, data_dir, vocab_file, records_pattern):
  config = tiny_config(tmp_path, data_dir, vocab_file, records_pattern)
  texts, summary = audit(config, num_examples=512, show_examples=2)
  assert len(texts) == 2 and texts[0].split(":")[0] in ("IsNext", "NotNext")
  assert "[MASK](" in texts[0] + texts[1]
  assert summary["examples"] == 512
  assert summary["masked_share"] == pytest.approx(0.15, abs=0.02)
  assert summary["mask_token_share"] == pytest.approx(0.8, abs=0.05)
  assert summary["is_next_share"] == pytest.approx(0.5, abs=0.1)
  assert 0 < summary["padding_share"] < 1
  assert "documents" not in summary  # records do not say which documents their pairs are of

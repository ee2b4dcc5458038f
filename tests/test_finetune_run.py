"""A long fine-tune is a run like pre-training's: stopped (a signal, kill -9) and run again, it
ends on the weights and figures of the uninterrupted run; it takes its output_dir's lock; a
setting changed on the re-run is said in a line, other labels are an error; on two replicas
(MirroredStrategy on two logical CPUs) it gives the single device's result.

Each run is a few steps of conftest's one-layer encoder of width 32 on a handful of rows,
dropout on (its random state is in the checkpoint too) except on two replicas, where each
replica draws its own; none writes its SavedModel (--noserving_export: test_finetune*'s write
and check it), which these tests do not read."""

import dataclasses
import json
import logging
import os
import re
import signal

import numpy as np
import pytest

from bert_tf.errors import UserError
from bert_tf.finetune import FinetuneConfig, finetune, fitting
from bert_tf.runtime.checkpointing import TrainingStopped
from finetune_files import squad_file, write_conll, write_json, write_regression
from helpers import (
  TWO_CPUS_TINY_BERT,
  latest_checkpoint_step,
  run,
  start,
  wait_for_checkpoint,
  weights,
  write_choices,
  write_lock,
)

WORDS = {"code": ["function", "class", "return", "value", "object", "method"],
         "debug": ["debugger", "breakpoint", "frame", "stack", "command", "line"]}


def write_task(path, count, seed, labels=("code", "debug")):
  generator = np.random.default_rng(seed)
  rows = ["text\tlabel"]
  for i in range(count):
    label = labels[i % len(labels)]
    rows.append(" ".join(generator.choice(WORDS.get(label, WORDS["code"]), 4)) + f"\t{label}")
  path.write_text("\n".join(rows) + "\n", encoding="utf-8")
  return str(path)


@pytest.fixture(scope="module")
def model_dir(shallow_model_dir):
  """The encoder the runs start from: conftest's of one layer (the tests check the run around
  the model; a layer less is less to trace)."""
  return shallow_model_dir


@pytest.fixture(scope="module")
def task(tmp_path_factory):
  directory = tmp_path_factory.mktemp("task")
  return write_task(directory / "train.tsv", 22, 0), write_task(directory / "dev.tsv", 4, 1)


# 6 steps an epoch (the last batch of 2 examples), 2 epochs, a checkpoint every 2 steps; no
# SavedModel (the tests compare weights and figures).
SETTINGS = dict(epochs=2, batch_size=4, seq_length=16, learning_rate=2e-3, checkpoint_every=2,
                serving_export=False)


def settings_of(task, model_dir, output_dir, **changes):
  return FinetuneConfig(model_dir=model_dir, train_file=task[0], dev_file=task[1],
                        output_dir=str(output_dir), **{**SETTINGS, **changes})


def stopped(config, monkeypatch, at):
  """Runs `config` until `at(trained_batches, batch)` after a batch, then sends this process
  SIGTERM, as a preemption does: the run saves and stops. Returns the batches trained."""
  counted = fitting.TrainedBatches.on_train_batch_end
  stops = []

  def count_then_stop(self, batch, logs=None):
    counted(self, batch, logs)
    if not stops and at(self, batch):
      stops.append(self.count)
      signal.raise_signal(signal.SIGTERM)

  with monkeypatch.context() as patch:
    patch.setattr(fitting.TrainedBatches, "on_train_batch_end", count_then_stop)
    with pytest.raises(TrainingStopped, match=r"stopped by SIGTERM at step \d+"):
      finetune(config)
  assert latest_checkpoint_step(config.output_dir) == stops[0]
  assert not os.path.exists(os.path.join(config.output_dir, "metrics.json"))
  return stops[0]


def read(directory, name):
  with open(os.path.join(directory, name)) as f:
    return json.load(f)


def assert_same_run(output_dir, expected_dir, atol=1e-6, files=("metrics.json",)):
  """The same weights (to float32 rounding), best epoch and dev figures."""
  actual, expected = weights(output_dir), weights(expected_dir)
  assert sorted(actual) == sorted(expected)
  for name in expected:
    np.testing.assert_allclose(actual[name], expected[name], atol=atol, err_msg=name)
  for name in files:
    assert read(output_dir, name) == read(expected_dir, name), name
  assert not os.path.exists(os.path.join(output_dir, "checkpoints"))  # removed when done
  assert not os.path.exists(os.path.join(output_dir, "export"))  # --noserving_export


@pytest.fixture(scope="module")
def uninterrupted(task, model_dir, tmp_path_factory):
  output_dir = tmp_path_factory.mktemp("uninterrupted")
  finetune(settings_of(task, model_dir, output_dir))
  return str(output_dir)


@pytest.mark.e2e
def test_stopped_mid_epoch_then_run_again_ends_as_the_uninterrupted_run(
    task, model_dir, uninterrupted, tmp_path, monkeypatch, caplog):
  """Stopped in the second epoch, then run again with another --checkpoint_every: the rest of
  that epoch in its order, the same dropout, the same best epoch; the changed setting said in
  one line. Before that, a re-run with other labels and a run while another holds the
  output_dir are each one line."""
  config = settings_of(task, model_dir, tmp_path / "run")
  stopped(config, monkeypatch, at=lambda trained, batch: trained.count == 8)

  other_labels = write_task(tmp_path / "other.tsv", 9, 2, labels=("code", "debug", "other"))
  with pytest.raises(UserError) as error:
    finetune(dataclasses.replace(config, train_file=other_labels))
  assert str(error.value) == (
      f"the checkpoint {config.output_dir}/checkpoints/ckpt-8 is of another fine-tune (labels "
      "code, debug -> code, debug, other): use another --output_dir, or remove "
      f"{config.output_dir}/checkpoints to start again")
  holder = os.getppid()  # a process that runs, and is not this one
  write_lock(config.output_dir, pid=holder)
  with pytest.raises(UserError, match=f"^{config.output_dir} is in use by process {holder} on "
                     r"host .* since .*: wait for it to end, or use another --output_dir$"):
    finetune(config)
  os.remove(os.path.join(config.output_dir, "run.lock"))

  with caplog.at_level(logging.INFO, logger="bert_tf"):
    finetune(dataclasses.replace(config, checkpoint_every=3))
  assert ("Resumed from the checkpoint at step 8 of 12: epoch 2 of 2 from its batch 3 of 6"
          in caplog.text)
  assert re.findall(r"Changed since .*", caplog.text) == [
      f"Changed since {config.output_dir} last trained: checkpoint_every 2 -> 3 (noted)"]
  assert_same_run(config.output_dir, uninterrupted)


@pytest.fixture(scope="module")
def questions(tmp_path_factory):
  directory = tmp_path_factory.mktemp("squad")
  return (write_json(directory / "train.json", squad_file(0)),
          write_json(directory / "dev.json", squad_file(1)))


@pytest.mark.e2e
def test_answering_stopped_at_an_epoch_end_then_mid_epoch(questions, model_dir, tmp_path,
                                                         monkeypatch, caplog):
  """Extractive answering (SQuAD v2.0, contexts in several windows), stopped twice: on the
  first epoch's last batch, saved before that epoch's dev figures were taken (the next run
  takes them first), then in the second epoch; the third run ends on the uninterrupted run's
  weights, figures and predictions.json (the best epoch's answers, found again when that
  epoch was a stopped run's)."""
  def config(name):
    return FinetuneConfig(task="answer", model_dir=model_dir, train_file=questions[0],
                          dev_file=questions[1], output_dir=str(tmp_path / name),
                          **{**SETTINGS, "batch_size": 8, "seq_length": 32,
                             "max_query_length": 8, "doc_stride": 8})

  finetune(config("uninterrupted"))
  resumed = config("run")
  steps_per_epoch = stopped(resumed, monkeypatch,
                            at=lambda trained, batch: batch + 1 == trained.params["steps"])
  with caplog.at_level(logging.INFO, logger="bert_tf"):
    stopped(resumed, monkeypatch, at=lambda trained, batch: trained.count > steps_per_epoch)
  assert re.search(r"Resumed from the checkpoint at step \d+ of \d+: epoch 2 of 2 from its "
                   r"batch 1 of", caplog.text)
  assert "epoch 1/2: dev exact match" in caplog.text  # the first epoch's figures, taken now
  finetune(resumed)
  assert_same_run(resumed.output_dir, str(tmp_path / "uninterrupted"),
                  files=("metrics.json", "predictions.json"))
  assert read(resumed.output_dir, "metrics.json")["best_epoch"] == 1  # scored by a stopped run


@pytest.mark.e2e
def test_choosing_stopped_mid_epoch_then_run_again_ends_as_the_uninterrupted_run(
    model_dir, tmp_path, monkeypatch):
  """Multiple choice (rows of two to four endings, padded), stopped in its second epoch: the
  run again ends on the uninterrupted run's weights and dev figures."""
  train, dev = (write_choices(tmp_path / name, count, seed)
                for name, count, seed in (("train.jsonl", 14, 0), ("dev.jsonl", 4, 1)))

  def config(name):
    return FinetuneConfig(task="choose", model_dir=model_dir, train_file=train, dev_file=dev,
                          output_dir=str(tmp_path / name), **SETTINGS)

  finetune(config("uninterrupted"))
  stopped(config("run"), monkeypatch, at=lambda trained, batch: trained.count == 6)
  finetune(config("run"))
  assert_same_run(str(tmp_path / "run"), str(tmp_path / "uninterrupted"))


@pytest.mark.e2e
def test_kill_9_then_run_again_ends_as_the_uninterrupted_run(task, model_dir, uninterrupted,
                                                            tmp_path):
  output_dir = str(tmp_path / "run")
  command = ["-m", "bert_tf.finetune", f"--model_dir={model_dir}", f"--train_file={task[0]}",
             f"--dev_file={task[1]}", f"--output_dir={output_dir}",
             *[f"--{name}={value}" for name, value in SETTINGS.items()]]
  process = start(command)
  wait_for_checkpoint([output_dir], 2, [process])
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert not os.path.exists(os.path.join(output_dir, "metrics.json"))  # killed mid-run
  result = run(command)
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(r"Resumed from the checkpoint at step \d+ of 12", result.stderr)
  assert "Taking over" in result.stderr  # the killed run's lock
  assert result.stdout.strip().endswith(f"The model is in {output_dir}/model.weights.h5.")
  assert_same_run(output_dir, uninterrupted, atol=1e-5)


# Fine-tunes task kinds in turn on one device and on two replicas (--strategy=mirrored, made of
# this machine's two logical CPUs), dropout off; prints, by kind, whether the weights have the
# same names and their largest difference.
MIRRORED = TWO_CPUS_TINY_BERT + r"""
import dataclasses, shutil, sys
from bert_tf.finetune import FinetuneConfig, finetune
from bert_tf.runtime import strategy as strategy_lib
from helpers import weights

def two_cpus(name, *where):  # new_strategy(name, tpu, cluster_config)
  return (tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"]) if name == "mirrored"
          else tf.distribute.get_strategy())

strategy_lib.new_strategy = two_cpus  # create_strategy makes it once, reused by each run
model_dir, output_dir, kinds = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
encoder = shutil.copytree(model_dir, output_dir + "/encoder")
with open(encoder + "/bert_config.json") as f:
  config = json.load(f)
config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
with open(encoder + "/bert_config.json", "w") as f:
  json.dump(config, f)
compared = {}
for kind, options in kinds.items():
  settings = FinetuneConfig(model_dir=encoder, output_dir=f"{output_dir}/{kind}/one",
                            epochs=1, learning_rate=2e-3, serving_export=False, **options)
  finetune(settings)
  finetune(dataclasses.replace(settings, strategy="mirrored",
                               output_dir=f"{output_dir}/{kind}/two"))
  one, two = weights(f"{output_dir}/{kind}/one"), weights(f"{output_dir}/{kind}/two")
  compared[kind] = {"names": sorted(one) == sorted(two),
                    "difference": max(float(np.abs(one[n] - two[n]).max()) for n in one)}
print(json.dumps(compared))
"""


@pytest.mark.e2e
def test_two_replicas_give_the_single_device_run(model_dir, tmp_path):
  """Every kind in one process, as a sweep runs: the runs after the first reuse the process's
  strategy."""
  kinds = ("classify", "regress", "tag", "answer", "choose")
  tasks = mirrored_tasks(tmp_path)
  settings = {kind: {"task": kind, "train_file": tasks[kind][0], "dev_file": tasks[kind][1],
                     **tasks[kind][2]} for kind in kinds}
  completed = run(["-c", MIRRORED, model_dir, str(tmp_path), json.dumps(settings)],
                  timeout=900)
  assert completed.returncode == 0, completed.stderr[-3000:]
  result = json.loads(completed.stdout.strip().splitlines()[-1])
  assert sorted(result) == sorted(kinds)
  for kind, compared in result.items():
    assert compared["names"], kind
    assert compared["difference"] < 1e-5, (kind, compared)


def mirrored_tasks(directory) -> dict:
  """(train file, dev file, settings) of each kind, each a few batches of 4 (2 examples a
  replica), the last one partial: of 3 rows for classify, regress and choose (2 and 1 a
  replica; choose's rows of two to four endings), of sentences with unequal numbers of
  labelled tokens for tag."""
  squad = dict(seq_length=32, max_query_length=8, doc_stride=8, batch_size=4)
  return {
      "classify": (write_task(directory / "train.tsv", 15, 0), write_task(
          directory / "dev.tsv", 4, 1), dict(seq_length=16, batch_size=4)),
      "regress": (write_regression(directory / "train_pairs.tsv", 11, 0),
                  write_regression(directory / "dev_pairs.tsv", 4, 1),
                  dict(text_columns="sentence1,sentence2", label_column="score",
                       seq_length=24, batch_size=4)),
      "tag": (write_conll(directory / "train.conll", 18, 0),
              write_conll(directory / "dev.conll", 4, 1), dict(seq_length=16, batch_size=4)),
      "answer": (write_json(directory / "train.json", squad_file(0, paragraphs=2)),
                 write_json(directory / "dev.json", squad_file(1, paragraphs=1)), squad),
      "choose": (write_choices(directory / "train.jsonl", 11, 0),
                 write_choices(directory / "dev.jsonl", 4, 1), dict(seq_length=16, batch_size=4))}

"""The probe: fine-tunes a copy of the encoder on a labelled task at each held-out evaluation;
its figures go to metrics.json, history.jsonl, TensorBoard's eval run and the summary, and it
leaves the run as it was: the same final weights, Python's and numpy's random states put back,
its models collected."""

import dataclasses
import gc
import json
import os
import random
import subprocess
import sys

import h5py
import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import builtin_task, builtin_tasks
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.finetune.kinds import registry as kinds
from bert_tf.finetune.model import load_pretrained
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from bert_tf.training.train_settings import TrainConfig
from bert_tf.training.trainer import train
from bert_tf.training.watching import probe
from helpers import one_layer_config

TINY = dict(seq_length=32, max_predictions_per_seq=5, global_batch_size=8,
            train_steps=6, checkpoint_every=3, warmup_steps=2, eval_steps=1, verbose=False,
            serving_export=False)


def test_a_probe_file_without_its_column_is_one_user_error(data_dir, tmp_path):
  mine = tmp_path / "mine.tsv"
  mine.write_text("text\tlabel\nA sentence.\tyes\nAnother one.\tno\n")
  with pytest.raises(UserError, match="has no column topic"):
    probe.check_probe(TrainConfig(data_dir=data_dir, probe_train_file=str(mine),
                                  probe_dev_file=str(mine), probe_label_column="topic"))
  # A built-in task is read by its own columns, whatever the column flags say; its kind is
  # its own.
  probe.check_probe(TrainConfig(data_dir=data_dir, probe_train_file="builtin",
                                probe_dev_file="builtin", probe_label_column="topic"))
  similar = TrainConfig(data_dir=data_dir, probe_train_file="builtin_similar",
                        probe_dev_file="builtin_similar")
  assert probe.probe_kind(similar) == "regress"
  probe.check_probe(similar)


def regression_files(directory) -> tuple[str, str]:
  """A small regression task: a sentence's number of words, from the built-in task's."""
  paths = []
  for name, rows in zip(("train.tsv", "dev.tsv"), builtin_task.examples()):
    paths.append(os.path.join(directory, name))
    with open(paths[-1], "w") as f:
      f.write("text\tlabel\n" + "".join(f"{text}\t{len(text.split())}\n"
                                         for text, _ in rows[:96]))
  return tuple(paths)


@pytest.mark.e2e
def test_the_probe_of_each_kind_reads_its_kind_and_returns_its_figures(
    data_dir, model_dir, tmp_path):
  regress_train, regress_dev = regression_files(tmp_path)
  tag_train, tag_dev = builtin_tasks.task_files("builtin_tag", data_dir)
  encoder = load_pretrained(model_dir).encoder
  vocabulary = Vocabulary(os.path.join(model_dir, "vocab.txt"))
  # Classification's probe is run by the test below.
  assert probe.probe_kind(TrainConfig(probe_train_file="builtin")) == "classify"
  for files, task, kind in [((regress_train, regress_dev), "regress", "regress"),
                            ((tag_train, tag_dev), "", "tag"),  # read from the file
                            (("builtin_answer",) * 2, "", "answer"),
                            (("builtin_choice",) * 2, "", "choose")]:
    config = TrainConfig(data_dir=data_dir, probe_train_file=files[0], probe_dev_file=files[1],
                         probe_task=task, probe_steps=2, seq_length=32)
    assert probe.probe_kind(config) == kind
    figures = probe.Probe(config, vocabulary).scores(encoder)
    figure = kinds.kind_named(kind).probe_figure
    assert set(figures) == {f"probe_{figure}", f"probe_random_{figure}"}, kind
    assert all(-1 <= value <= 1 for value in figures.values()), (kind, figures)
  json_config = TrainConfig(probe_train_file=str(tmp_path / "squad.json"), probe_dev_file="x")
  assert probe.probe_kind(json_config) == "answer"
  for name in ("swag/train.csv", "mine.jsonl"):
    assert probe.probe_kind(TrainConfig(probe_train_file=name, probe_dev_file="x")) == "choose"


def keras_models() -> int:
  gc.collect()
  return sum(isinstance(thing, keras.Model) for thing in gc.get_objects())


# A busy loop on each CPU this process may use: the load under which the probe once gave
# another figure at the same seed.
SPIN = "while True:\n  pass"


@pytest.mark.e2e
def test_probe_restores_random_states_frees_its_models_and_repeats_under_load(data_dir,
                                                                             vocab_file):
  # A regression probe: its figure (Pearson's r) is a real number, where a difference in the
  # last bit of any weight shows; an accuracy can hide one.
  vocabulary = Vocabulary(vocab_file)
  config = TrainConfig(data_dir=data_dir, probe_train_file="builtin_similar",
                       probe_dev_file="builtin_similar", probe_steps=3, seq_length=32)
  model = pretraining_model(BertConfig(
      vocab_size=len(vocabulary), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
      intermediate_size=64))
  the_probe = probe.Probe(config, vocabulary)
  random.seed(5)
  np.random.seed(5)
  python_state, numpy_state = random.getstate(), np.random.get_state()[1].copy()
  before = keras_models()
  first = the_probe(model)  # the random weights' figure measured first
  assert keras_models() == before
  assert random.getstate() == python_state
  np.testing.assert_array_equal(np.random.get_state()[1], numpy_state)
  assert set(first) == {"probe_pearson", "probe_random_pearson"}
  assert all(-1 <= value <= 1 for value in first.values()) and first["probe_pearson"] != 0
  spinning = [subprocess.Popen([sys.executable, "-c", SPIN])
              for _ in os.sched_getaffinity(0)]
  try:
    loaded = the_probe.scores(model.get_layer("bert_encoder"))  # the encoder's alone
  finally:
    for process in spinning:
      process.kill()
      process.wait()
  assert loaded == first  # the same seed: the same figure, to the last bit


def weights(model_dir):
  values = []
  with h5py.File(os.path.join(model_dir, "model.weights.h5"), "r") as f:
    f.visititems(lambda name, item: values.append((name, item[()]))
                 if isinstance(item, h5py.Dataset) else None)
  return values


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_dir, vocab_file):
  """The same tiny run without and with a probe at each checkpoint (steps 3 and 6)."""
  base = TrainConfig(data_dir=data_dir, vocab_file=vocab_file,
                     config=one_layer_config(vocab_file), **TINY)
  plain = dataclasses.replace(base, model_dir=str(tmp_path_factory.mktemp("plain")))
  probed = dataclasses.replace(base, model_dir=str(tmp_path_factory.mktemp("probed")),
                               probe_train_file="builtin", probe_dev_file="builtin",
                               probe_steps=4)
  return (plain, train(plain)), (probed, train(probed))


@pytest.mark.e2e
def test_the_probe_does_not_change_the_run(runs):
  (plain, plain_metrics), (probed, probed_metrics) = runs
  plain_weights, probed_weights = weights(plain.model_dir), weights(probed.model_dir)
  assert [name for name, _ in plain_weights] == [name for name, _ in probed_weights]
  for (name, mine), (_, theirs) in zip(plain_weights, probed_weights):
    np.testing.assert_array_equal(mine, theirs, err_msg=name)
  for name in ("loss", "mlm_accuracy", "nsp_accuracy"):
    assert plain_metrics[name] == probed_metrics[name]
  assert "probe_accuracy" not in plain_metrics


@pytest.mark.e2e
def test_probe_figures_go_where_the_held_out_figures_go(runs):
  _, (probed, metrics) = runs
  assert 0 <= metrics["probe_accuracy"] <= 1 and 0 <= metrics["probe_random_accuracy"] <= 1
  with open(os.path.join(probed.model_dir, "metrics.json")) as f:
    assert json.load(f)["probe_accuracy"] == metrics["probe_accuracy"]
  with open(os.path.join(probed.model_dir, "history.jsonl")) as f:
    records = [json.loads(line) for line in f if "probe_accuracy" in line]
  assert [r["step"] for r in records] == [3, 6]
  assert records[-1]["probe_accuracy"] == metrics["probe_accuracy"]
  eval_logs = os.path.join(probed.model_dir, "logs", "eval")
  steps = [event.step for name in os.listdir(eval_logs)
           for event in tf.compat.v1.train.summary_iterator(os.path.join(eval_logs, name))
           for value in event.summary.value if value.tag == "probe_accuracy"]
  assert sorted(steps) == [3, 6]  # at the steps measured, beside the held-out losses
  with open(os.path.join(probed.model_dir, "summary.txt")) as f:
    assert (f"Probe: dev accuracy {metrics['probe_accuracy']:.3f}" in f.read())
  assert os.path.getsize(os.path.join(probed.model_dir, "curves.png")) > 0

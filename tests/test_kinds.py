"""The registry of task kinds (`bert_tf/task_kinds.py`, `bert_tf/finetune/kinds/`): every kind
it names is a module with every part of `TaskKind`, and a kind that leaves out any part fails
the check and the registry, naming the part; the flags offer the registry's names without
loading TensorFlow; task.json is one typed record, written and read back as it was."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import settings, task_kinds
from bert_tf.errors import UserError
from bert_tf.finetune import FinetuneConfig
from bert_tf.finetune.kinds import registry as kinds
from bert_tf.finetune.kinds.base import ATTRIBUTES, TaskKind, missing_parts
from bert_tf.finetune.kinds.classify import Classify
from bert_tf.finetune.task_record import TaskRecord, read_task
from bert_tf.training.train_settings import TrainConfig
from helpers import ROOT, run

PARTS = (*ATTRIBUTES, *sorted(TaskKind.__abstractmethods__))
KINDS_DIR = os.path.join(ROOT, "bert_tf", "finetune", "kinds")


def test_the_protocol_has_every_part_a_kind_is():
  assert set(PARTS) == {
      "name", "ranking", "probe_figure", "signature",  # attributes
      "serving", "reference", "huggingface_head",  # without files
      "read", "encode", "train_batches", "evaluate"}  # with its files


@pytest.mark.parametrize("name", task_kinds.NAMES)
def test_every_registered_kind_is_a_module_with_every_part(name):
  kind = kinds.kind_named(name)
  assert kind.__module__ == f"bert_tf.finetune.kinds.{name}" and kind.name == name
  assert issubclass(kind, TaskKind) and missing_parts(kind) == []
  assert kind.probe_figure in {figure.removeprefix("dev_") for figure in kind.ranking}


@pytest.mark.parametrize("name", task_kinds.NAMES)
def test_every_kind_s_portable_outputs_are_its_shapes_and_give_back_its_logits(name):
  """A converted model's outputs are what portable.json says, and its dev figure reads the
  head's logits from them as they were."""
  kind = kinds.kind_named(name)
  shape = {"classify": [3, 2], "regress": [3, 1], "tag": [3, 5, 2], "answer": [3, 2, 5],
           "choose": [3, 4]}[name]
  logits = np.random.default_rng(0).normal(size=shape).astype(np.float32)
  outputs = {key: np.asarray(value)
             for key, value in kind.portable_outputs(tf.constant(logits)).items()}
  sizes = {"batch": 3, "seq_length": 5, "labels": 2, "endings": 4}
  assert {key: list(value.shape) for key, value in outputs.items()} == {
      key: [sizes[dim] for dim in dims] for key, dims in kind.portable_shapes.items()}
  assert all(value.dtype == np.float32 for value in outputs.values())
  np.testing.assert_array_equal(kind.portable_logits(outputs), logits)
  record = TaskRecord(task=name, labels=["a", "b"], pair=True, seq_length=5, lower_case=True,
                      **({"max_query_length": 2, "doc_stride": 2, "max_answer_length": 3,
                          "n_best_size": 4, "null_score_diff_threshold": 0.0,
                          "version_2_with_negative": True} if name == "answer" else {}))
  carried = kind.portable_task(record)
  assert carried["labels"] == ["a", "b"] and carried["pair"] is True
  assert set(carried) <= set(record.to_json()) - {"task", "seq_length", "lower_case"}


def test_every_kind_module_is_registered_and_the_kinds_differ():
  defined = sorted(name for name in os.listdir(KINDS_DIR)
                   if os.path.isfile(os.path.join(KINDS_DIR, name, "__init__.py")) and
                   "\nKIND = " in open(os.path.join(KINDS_DIR, name, "__init__.py"),
                                       encoding="utf-8").read())
  assert defined == sorted(task_kinds.NAMES)
  every = kinds.all_kinds().values()
  assert len({kind.signature for kind in every}) == len(task_kinds.NAMES)


def complete_parts() -> dict:
  """Every part of a kind, taken from classify's."""
  return {part: getattr(Classify, part) for part in PARTS}


def test_a_kind_made_of_every_part_passes():
  assert missing_parts(type("Complete", (TaskKind,), complete_parts())) == []


@pytest.mark.parametrize("part", PARTS)
def test_a_kind_that_leaves_out_a_part_fails_the_check_and_the_registry(part, monkeypatch):
  parts = {name: value for name, value in complete_parts().items() if name != part}
  partial = type("Partial", (TaskKind,), {**parts, "name": parts.get("name") and "partial"})
  assert missing_parts(partial) == [part]
  if part not in ATTRIBUTES:  # an abstract method left out: Python will not make one either
    with pytest.raises(TypeError, match=part):
      partial(FinetuneConfig())
  # Registered as a kind of its own, the registry refuses it, naming the part.
  monkeypatch.setattr(kinds, "NAMES", (*task_kinds.NAMES, "partial"))
  monkeypatch.setitem(kinds.KINDS, "partial", partial)
  with pytest.raises(TypeError, match=rf"^the task kind partial \(.*\) is incomplete: it has "
                     rf"no {part}$"):
    kinds.kind_named("partial")


def test_an_unknown_kind_is_one_line():
  with pytest.raises(UserError, match=r"^unknown task 'choice': use one of classify, regress, "
                     r"tag, answer, choose$"):
    kinds.kind_named("choice")


def test_the_flags_offer_the_registry_s_names_without_tensorflow():
  choices = {field.name: field.metadata["choices"] for config in (FinetuneConfig, TrainConfig)
             for field in settings.declared(config)}
  assert choices["task"] == task_kinds.NAMES
  assert choices["probe_task"] == ("", *task_kinds.NAMES)
  assert [FinetuneConfig(task=name).seq_length for name in task_kinds.NAMES] == [
      128, 128, 128, 384, 128]
  script = ("import sys\n"
            "from bert_tf.finetune import kinds\n"
            "from bert_tf.finetune.finetune_settings import FinetuneConfig\n"
            "print([m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras')])\n")
  result = run(["-c", script], timeout=120, fresh=True)
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.strip() == "[]"


# === task.json ===


def test_task_json_is_written_and_read_as_one_record(tmp_path):
  answer = TaskRecord(task="answer", labels=[], pair=True, seq_length=384, lower_case=True,
                      max_query_length=64, doc_stride=128, max_answer_length=30,
                      n_best_size=20, null_score_diff_threshold=0.0,
                      version_2_with_negative=False)
  tag = TaskRecord(task="tag", labels=["B-X", "O"], pair=False, seq_length=16,
                   lower_case=False)
  for record in (answer, tag):
    record.write(str(tmp_path))
    assert read_task(str(tmp_path)) == record
  with open(tmp_path / "task.json") as f:  # the file of a kind has its kind's fields only
    assert json.load(f) == {"task": "tag", "labels": ["B-X", "O"], "pair": False,
                            "seq_length": 16, "lower_case": False}


def test_a_task_json_of_no_kind_or_without_a_field_is_one_line():
  with pytest.raises(UserError, match=r"^task.json: 'task' is none of classify, regress, tag, "
                     r"answer, choose$"):
    TaskRecord.from_json({"task": "choice"})
  with pytest.raises(UserError, match=r"^task.json: a tag task needs pair, seq_length$"):
    TaskRecord.from_json({"task": "tag", "labels": ["O"], "lower_case": True})

"""benchmarks/transfer_transformers.py: transformers' BertForSequenceClassification fine-tuned
from our Hugging Face export on GLUE-style TSV files, tiny and for a few steps."""

import argparse
import importlib.util
import os

import pytest

from bert_tf.data import builtin_task
from bert_tf.data.tokenization import Vocabulary
from bert_tf.interop.huggingface import export_huggingface
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from helpers import ROOT

_spec = importlib.util.spec_from_file_location(
    "transfer_transformers", os.path.join(ROOT, "benchmarks", "transfer_transformers.py"))
transfer_transformers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(transfer_transformers)

# A pair task a tiny encoder learns in a few dozen steps: is the second sentence's verb
# "raised" or "defined"? (The first sentence is noise.)
SUBJECTS = ["the class", "a function", "the module", "an exception"]
VERBS = ["is defined", "is raised", "is imported", "returns a value", "is called"]


def pairs(count, offset):
  """(sentence1, sentence2, label) rows, labelled by sentence2's verb."""
  rows = []
  for i in range(count):
    verb = ("raised", "defined")[(i // 2) % 2]
    rows.append((f"{SUBJECTS[(i // 4 + offset) % 4]} {VERBS[(i + offset) % 5]}.",
                 f"{SUBJECTS[i % 4]} is {verb}.", verb))
  return rows


def write_tsv(path, rows, header=("sentence1", "sentence2", "label")):
  path.write_text("\t".join(header) + "\n" + "".join("\t".join(r) + "\n" for r in rows),
                  encoding="utf-8")
  return str(path)


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory, vocab_file):
  vocabulary = Vocabulary(vocab_file)
  config = BertConfig.from_preset("bert_tiny", vocab_size=len(vocabulary),
                                  max_position_embeddings=64)
  directory = str(tmp_path_factory.mktemp("export") / "hf")
  export_huggingface(pretraining_model(config), config, vocabulary, directory, lower_case=True)
  return directory


@pytest.fixture(scope="module")
def files(tmp_path_factory):
  root = tmp_path_factory.mktemp("task")
  return (write_tsv(root / "train.tsv", pairs(64, 0)), write_tsv(root / "dev.tsv", pairs(32, 3)))


@pytest.mark.e2e
def test_learns_a_pair_task_from_the_export_and_is_deterministic(hf_dir, files, capsys):
  train, dev = files
  recipe = dict(text_columns=("sentence1", "sentence2"), epochs=8, learning_rate=1e-3,
                batch_size=16, seq_length=32, seed=1)
  first = transfer_transformers.finetune_transformers(hf_dir, train, dev, **recipe)
  printed = capsys.readouterr().out
  print(printed)  # per-epoch loss and dev accuracy, in the test's log
  assert printed.count("dev accuracy") == 8
  assert first >= 0.9
  again = transfer_transformers.finetune_transformers(
      hf_dir, train, dev, **{**recipe, "epochs": 1}, max_steps=2, verbose=False)
  assert again == transfer_transformers.finetune_transformers(
      hf_dir, train, dev, **{**recipe, "epochs": 1}, max_steps=2, verbose=False)


def test_bad_files_are_one_line_errors(hf_dir, files, tmp_path):
  train, dev = files
  with pytest.raises(ValueError, match=f"^{train} has no column question \\(its header: "
                     "sentence1, sentence2, label\\)$"):
    transfer_transformers.finetune_transformers(hf_dir, train, dev,
                                                text_columns=("question", "sentence2"))
  odd = write_tsv(tmp_path / "dev.tsv", [("a.", "b.", "maybe")])
  with pytest.raises(ValueError, match="has labels the training file does not: maybe$"):
    transfer_transformers.finetune_transformers(hf_dir, train, odd,
                                                text_columns=("sentence1", "sentence2"))


_transfer_spec = importlib.util.spec_from_file_location(
    "transfer", os.path.join(ROOT, "benchmarks", "transfer.py"))
transfer = importlib.util.module_from_spec(_transfer_spec)
_transfer_spec.loader.exec_module(transfer)


@pytest.mark.e2e
def test_the_transfer_benchmark_scores_every_other_kind_on_each_side(
    shallow_model_dir, data_dir, tmp_path, monkeypatch):
  """benchmarks/transfer.py --task=regress, tag, answer and choose (the built-in tasks;
  regression on a small TSV), one epoch of a tiny encoder (conftest's of one layer):
  transformers' gives the kind's figure, as ours does (ours once: it is `finetune` on the same
  settings for every kind)."""
  monkeypatch.syspath_prepend(os.path.join(ROOT, "benchmarks"))  # transfer_transformers
  rows = [(text, str(len(text.split()))) for text, _ in builtin_task.examples()[0][:96]]
  regress = (write_tsv(tmp_path / "train.tsv", rows[:64], ("text", "label")),
             write_tsv(tmp_path / "dev.tsv", rows[64:], ("text", "label")))
  for task, files, seq_length in (("regress", regress, 32), ("tag", ("builtin_tag",) * 2, 32),
                                  ("answer", ("builtin_answer",) * 2, 64),
                                  ("choose", ("builtin_choice",) * 2, 32)):
    args = argparse.Namespace(
        model_dir=shallow_model_dir, task=task, train_file=files[0], dev_file=files[1],
        data_dir=data_dir, text_columns="text", label_column="label", epochs=1,
        learning_rate=1e-3, batch_size=64, seq_length=seq_length, max_query_length=16,
        doc_stride=32)
    for name in ("ours", "transformers") if task == "regress" else ("transformers",):
      figure = transfer.CONTENDERS[name](args, 0, str(tmp_path))  # one export, in tmp_path/hf
      assert -1 <= figure <= 1, (task, name, figure)

"""A multiple-choice task's files: SWAG's CSV as published (quoted fields, its test file without
labels) and JSON Lines with any number of endings, rows with fewer padded with absent endings;
every mistake one `UserError` naming the file and the row or line; the features, each ending
paired with its context as `TextEncoder` pairs texts, an absent ending all 0; and end to end,
`--task=choose` on the built-in choice task's first rows: trained, its `choose` SavedModel
verified in a new process, exported as transformers' `BertForMultipleChoice` with our logits."""

import csv
import importlib
import io
import json
import logging
import os
import re
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import builtin_choice
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.export.formats import export_finetuned, verify_finetuned
from bert_tf.finetune import FinetuneConfig
from bert_tf.finetune.data import TextEncoder
from bert_tf.finetune.finetuned import load_finetuned
from bert_tf.finetune.kinds.choose import choice

SWAG_HEADER = ("video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,"
               "ending3")
SWAG_ROWS = [
    'anetv_1,5,"Members of the group stand, then the group",Members of the group stand,then the '
    'group,gold,dances.,"sits, smiling.",runs away.,eats a "cake".',
    "lsmdc_2,9,Someone opens the door. He,Someone opens the door.,He,gen,walks in.,flies.,"
    "sings.,cries.",
]


def write(path, text):
  path.write_text(text, encoding="utf-8")
  return str(path)


def swag(tmp_path, rows=SWAG_ROWS, labels=("1", "0"), header=SWAG_HEADER, name="train.csv"):
  lines = [header + (",label" if labels else "")]
  lines += [row + (f",{label}" if labels else "") for row, label in zip(rows, labels or rows)]
  return write(tmp_path / name, "\r\n".join(lines) + "\r\n")


def jsonl(tmp_path, rows, name="train.jsonl"):
  return write(tmp_path / name, "".join(
      (row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))


def test_swag_csv_as_published(tmp_path):
  read = choice.read_choices(swag(tmp_path), "--train_file")
  assert read.contexts == ["Members of the group stand", "Someone opens the door."]
  # sent2 goes before each ending, as run_swag.py pairs them; quoted commas kept.
  assert read.endings == [["then the group dances.", "then the group sits, smiling.",
                           "then the group runs away.", 'then the group eats a "cake".'],
                          ["He walks in.", "He flies.", "He sings.", "He cries."]]
  assert read.labels == [1, 0] and len(read) == 2 and read.most_endings == 4
  test = choice.read_choices(swag(tmp_path, labels=(), name="test.csv"), "--predict_file",
                             labelled=False)
  assert test.labels is None and test.endings == read.endings


def test_json_lines_with_any_number_of_endings(tmp_path):
  path = jsonl(tmp_path, [
      {"context": "The stack frame", "endings": ["is popped.", "sings."], "label": 0},
      "",
      {"id": "q2", "context": "Which is a keyword?", "prefix": "It is", "endings": [
          "if", "dog", "cat", "tree", "sky"], "label": 4}])
  read = choice.read_choices(path, "--train_file")
  assert read.endings == [["is popped.", "sings."],
                          ["It is if", "It is dog", "It is cat", "It is tree", "It is sky"]]
  assert read.labels == [0, 4] and read.most_endings == 5
  padded = choice.padded(read.endings, 6)
  assert padded.shape == (2, 6)
  assert padded[0].tolist() == ["is popped.", "sings.", "", "", "", ""]


@pytest.mark.parametrize("rows, message", [
    ((SWAG_HEADER.replace(",ending0,ending1,ending2,ending3", ""), "a,1,b,c,d,e"),
     "has no ending columns (ending0, ending1, ...): a multiple-choice CSV has SWAG's columns "
     "(its header: video-id, fold-ind, startphrase, sent1, sent2, gold-source)"),
    ((SWAG_HEADER.replace("sent1", "first") + ",label", "a,1,b,c,d,e,f,g,h,i,0"),
     "has no column sent1 (the context; its header: video-id, fold-ind, startphrase, first, "
     "sent2, gold-source, ending0, ending1, ending2, ending3, label)"),
    ((SWAG_HEADER, "a,1,b,c,d,e,f,g,h,i"),
     "has no column label (the right ending's number; its header: video-id, fold-ind, "
     "startphrase, sent1, sent2, gold-source, ending0, ending1, ending2, ending3)"),
    ((SWAG_HEADER + ",label",), "has a header row but no examples"),
    ((SWAG_HEADER + ",label", "a,1,b,c,d,e,f,g,h,i,0", "a,1,b,c,d,e,f,g,h,0"),
     ", row 3: 10 fields, the header has 11"),
    ((SWAG_HEADER + ",label", "a,1,b,c,d,e,f,,h,i,0"), ", row 2: ending 1 is empty"),
    ((SWAG_HEADER + ",label", "a,1,b,c,d,e,f,g,h,i,4"),
     ", row 2: label '4' is not one of the endings' numbers, 0 to 3"),
    ((SWAG_HEADER + ",label", "a,1,b,c,d,e,f,g,h,i,second"),
     ", row 2: label 'second' is not one of the endings' numbers, 0 to 3"),
])
def test_a_bad_swag_file_is_one_line(tmp_path, rows, message):
  path = write(tmp_path / "train.csv", "\n".join(rows) + "\n")
  separator = "" if message.startswith(",") else " "
  with pytest.raises(UserError, match="^" + re.escape(path + separator + message) + "$"):
    choice.read_choices(path, "--train_file")


@pytest.mark.parametrize("row, message", [
    ('{"context": "a", "endings": ["b", "c"], "label": 2}',
     "line 2: label 2 is not one of the endings' numbers, 0 to 1"),
    ('{"context": "a", "endings": ["b", "c"], "label": -1}',
     "line 2: label -1 is not one of the endings' numbers, 0 to 1"),
    ('{"context": "a", "endings": ["b", "c"], "label": true}',
     "line 2: label True is not one of the endings' numbers, 0 to 1"),
    ('{"context": "a", "endings": ["b", " "], "label": 0}', "line 2: ending 1 is empty"),
    ('{"context": "a", "endings": ["b"], "label": 0}',
     "line 2: 1 ending(s); a choice needs at least 2"),
    ('{"context": "a", "endings": "b c", "label": 0}', "line 2: 'endings' is not a list of texts"),
    ('{"endings": ["b", "c"], "label": 0}', "line 2: no 'context' text"),
    ('{"context": "a", "endings": ["b", "c"]}', "line 2: no 'label'"),
    ('{"context": "a", "endings": ["b", "c"], "label": 0', "line 2: not JSON"),
    ('["a", "b"]', "line 2: not a JSON object"),
])
def test_a_bad_json_lines_file_is_one_line(tmp_path, row, message):
  path = jsonl(tmp_path, [{"context": "x", "endings": ["y", "z"], "label": 1}, row])
  with pytest.raises(UserError, match="^" + re.escape(f"{path}, {message}")):
    choice.read_choices(path, "--train_file")


def test_an_empty_or_missing_file_is_one_line(tmp_path):
  with pytest.raises(UserError, match=r"empty \(a multiple-choice file is SWAG's CSV or JSON "
                     r"Lines\)$"):
    choice.read_choices(write(tmp_path / "dev.jsonl", "\n \n"), "--dev_file")
  with pytest.raises(UserError, match="^file not found: "):
    choice.read_choices(str(tmp_path / "none.csv"), "--dev_file")


def test_features_pair_the_context_with_each_ending(vocab_file, tmp_path):
  vocabulary = Vocabulary(vocab_file)
  texts = TextEncoder(vocabulary, lower_case=True, seq_length=16)
  encoder = choice.ChoiceEncoder(texts)
  contexts = ["The statement is executed.", "A frame is popped from the stack " * 4]
  endings = choice.padded([["Then it returns.", "Zürich."], ["The debugger stops."]], 2)
  features = encoder.features(tf.constant(contexts), tf.constant(endings))
  assert sorted(features) == ["padding_mask", "segment_ids", "token_ids"]
  assert all(value.shape == (2, 2, 16) for value in features.values())
  pairs = texts.features(tf.constant([contexts[0], contexts[0], contexts[1]]),
                         tf.constant(["Then it returns.", "Zürich.", "The debugger stops."]))
  for name, value in features.items():
    np.testing.assert_array_equal(value[0], pairs[name][:2])
    np.testing.assert_array_equal(value[1, 0], pairs[name][2])  # the long context cut first
    assert not value[1, 1].numpy().any()  # absent
  assert features["padding_mask"][1, 0].numpy().sum() == 16

  path = jsonl(tmp_path, [{"context": contexts[0], "endings": list(endings[0]), "label": 1},
                          {"context": contexts[1], "endings": ["a", "b"], "label": 0}])
  batches = list(choice.dataset(choice.read_choices(path, "--train_file"), 3, encoder,
                                batch_size=2, order=np.array([1, 0])))
  (batch, labels), = batches
  assert batch["token_ids"].shape == (2, 3, 16) and labels.numpy().tolist() == [0, 1]
  np.testing.assert_array_equal(batch["token_ids"][1, :2], features["token_ids"][0])
  assert not batch["padding_mask"][:, 2].numpy().any()  # padded to 3 endings


# === End to end ===


@pytest.fixture
def small_builtin_choice(tmp_path):
  """The first rows of the built-in choice task's two files (a few steps' worth), and a test
  file of SWAG's form without labels: the first dev rows' contexts and endings."""
  train, dev = builtin_choice.examples()
  rows = io.StringIO()
  csv.writer(rows, lineterminator="\n").writerows(
      ["x", i, "", row["context"], "", "gold", *row["endings"]] for i, row in enumerate(dev[:3]))
  rows = rows.getvalue().splitlines()
  return (jsonl(tmp_path, train[:40], "train.jsonl"), jsonl(tmp_path, dev[:12], "dev.jsonl"),
          swag(tmp_path, rows, labels=(), name="test.csv"))


@pytest.mark.e2e
@pytest.mark.usefixtures("warm_verification")  # the export's check forked, not a fresh Python
def test_choose_trains_serves_predicts_and_exports_to_transformers(
    shallow_model_dir, small_builtin_choice, tmp_path, caplog, capsys, monkeypatch):
  """The command's run (`python -m bert_tf.finetune`'s) with --predict_file: one run, said as
  one (its predictions, then its closing line; no sweep table, no sweep.json)."""
  import torch
  import transformers

  caplog.set_level(logging.INFO, logger="bert_tf")
  output_dir = str(tmp_path / "out")
  train_file, dev_file, test_file = small_builtin_choice
  importlib.import_module("bert_tf.finetune.__main__").run(FinetuneConfig(
      task="choose", model_dir=shallow_model_dir, train_file=train_file, dev_file=dev_file,
      output_dir=output_dir, epochs=2, learning_rate=2e-3, batch_size=8, seq_length=32,
      predict_file=test_file))
  predictions = os.path.join(output_dir, "predictions.tsv")
  printed = capsys.readouterr().out.splitlines()
  assert printed[0] == f"Predictions: {predictions}" and len(printed) == 2, printed
  assert re.fullmatch(rf"Best epoch [12] of 2: dev accuracy [\d.]+\. The model is in "
                      rf"{re.escape(output_dir)}/export \(signature choose\)\.", printed[1])
  assert not os.path.exists(os.path.join(output_dir, "sweep.json"))
  with open(os.path.join(output_dir, "metrics.json")) as f:
    results = json.load(f)
  assert results["task"] == "choose" and results["ranked_by"] == ["dev_accuracy"]
  assert (results["train_examples"], results["dev_examples"], results["endings"]) == (40, 12, 4)
  assert 0 <= results["dev_accuracy"] <= 1 and results["best_epoch"] in (1, 2)
  with open(os.path.join(output_dir, "task.json")) as f:
    task = json.load(f)
  assert (task["task"], task["labels"], task["pair"], task["seq_length"]) == ("choose", [], True,
                                                                             32)
  (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("verified:")]
  assert re.fullmatch(r"verified: choose savedmodel, largest output difference \S+ "
                      r"\(\w+; tolerance 1e-04\)", line), line

  # The test file predicted by the export: each row's most probable ending by the Keras model.
  finetuned = load_finetuned(output_dir)
  test = choice.read_choices(test_file, "--predict_file", labelled=False)
  encoder = choice.ChoiceEncoder(TextEncoder(finetuned.vocabulary, lower_case=True,
                                             seq_length=32))
  features = encoder.features(tf.constant(test.contexts), tf.constant(choice.padded(
      test.endings)))
  ours = finetuned.model(features, training=False).numpy()
  with open(predictions) as f:
    assert f.read() == "index\tprediction\n" + "".join(
        f"{i}\t{chosen}\n" for i, chosen in enumerate(ours.argmax(axis=-1)))

  hf_dir = str(tmp_path / "hf")
  export_finetuned(finetuned, "hf", hf_dir)
  said = verify_finetuned(finetuned, "hf", hf_dir)
  assert re.fullmatch(r"verified: choose hf ids equal, largest output difference \S+ "
                      r"\(logits; tolerance 1e-04\)", said), said
  with monkeypatch.context() as context:  # without transformers: a numpy forward pass
    context.setitem(sys.modules, "transformers", None)
    said = verify_finetuned(finetuned, "hf", hf_dir)
    assert float(re.search(r"difference (\S+) \(logits", said)[1]) <= 1e-5, said
  theirs, loading = transformers.BertForMultipleChoice.from_pretrained(
      hf_dir, output_loading_info=True)
  assert not any(loading.values()), loading  # no missing, unexpected or mismatched weights
  theirs.eval()
  with torch.no_grad():
    logits = theirs(**{name: torch.tensor(features[ours_name].numpy(), dtype=torch.long)
                       for name, ours_name in (("input_ids", "token_ids"),
                                               ("token_type_ids", "segment_ids"),
                                               ("attention_mask", "padding_mask"))}).logits
  assert logits.shape == (3, 4)
  np.testing.assert_allclose(logits.numpy(), ours, atol=1e-4)

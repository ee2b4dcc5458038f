"""The three task kinds beside classification, end to end on a tiny encoder and small real files
written here: `--task=regress` on a TSV of pairs with numeric labels, `--task=tag` on a CoNLL
file with two entity types and -DOCSTART-, `--task=answer` on a SQuAD v2.0 file whose context
needs several windows and with an unanswerable question. Each writes metrics.json with its
figures, task.json, the best epoch's weights and the encoder's files, and says that its
SavedModel verified (unless --skip_verify); the encoder comes from a train.py model_dir, a
Hugging Face directory or an original BERT checkpoint; bad input is one line before anything
trains."""

import json
import logging
import os
import shutil

import numpy as np
import pytest

from bert_tf.errors import UserError
from bert_tf.finetune import FinetuneConfig, finetune, task_model
from bert_tf.interop.huggingface import export_huggingface
from bert_tf.interop.state import model_state
from bert_tf.serving import trained
from finetune_files import squad_file, write_conll, write_json, write_regression
from helpers import run, verified

SETTINGS = dict(epochs=2, learning_rate=2e-3, batch_size=8)


@pytest.fixture(scope="module")
def model_dir(shallow_model_dir):
  """The encoder the kinds start from: conftest's of one layer (the tests check each kind's
  run and output_dir, not what the encoder learns; a layer less is less to trace)."""
  return shallow_model_dir


@pytest.fixture(scope="module")
def files(tmp_path_factory):
  directory = tmp_path_factory.mktemp("kinds")
  return {"regress": (write_regression(directory / "train.tsv", 48, 0),
                      write_regression(directory / "dev.tsv", 16, 1)),
          "tag": (write_conll(directory / "train.conll", 32, 0),
                  write_conll(directory / "dev.conll", 12, 1)),
          "answer": (write_json(directory / "train.json", squad_file(0)),
                     write_json(directory / "dev.json", squad_file(1)))}


def config_for(task, files, model_dir, output_dir, **options):
  settings = {"regress": dict(text_columns="sentence1,sentence2", label_column="score",
                              seq_length=24),
              "tag": dict(seq_length=16),
              "answer": dict(seq_length=32, max_query_length=8, doc_stride=8)}[task]
  return FinetuneConfig(task=task, model_dir=model_dir, train_file=files[task][0],
                        dev_file=files[task][1], output_dir=str(output_dir),
                        **{**SETTINGS, **settings, **options})


def read_json(directory, name):
  with open(os.path.join(directory, name)) as f:
    return json.load(f)


@pytest.fixture
def logged(caplog):
  """pytest's caplog, at INFO for bert_tf's logger (where the verification line goes)."""
  caplog.set_level(logging.INFO, logger="bert_tf")
  return caplog


def verification_lines(logged):
  """The verification lines logged so far."""
  return [r.getMessage() for r in logged.records if r.getMessage().startswith("verified:")]


def check_output_dir(config, results, task):
  assert read_json(config.output_dir, "metrics.json") == results
  assert results["task"] == task and results["epochs"] == 2 and 1 <= results["best_epoch"] <= 2
  task_json = read_json(config.output_dir, "task.json")
  assert task_json["task"] == task and task_json["seq_length"] == config.seq_length
  assert task_json["lower_case"] is True
  for name in ("model.weights.h5", "bert_config.json", "vocab.txt"):
    assert os.path.isfile(os.path.join(config.output_dir, name)), name
  assert os.listdir(os.path.join(config.output_dir, "logs", "dev"))
  return task_json


# === Each kind ===


@pytest.mark.e2e
@pytest.mark.usefixtures("warm_verification")  # the export's check forked, not a fresh Python
def test_answer_v2_with_windows(files, model_dir, tmp_path, logged):
  config = config_for("answer", files, model_dir, tmp_path / "out")
  results = finetune(config)
  task_json = check_output_dir(config, results, "answer")
  (line,) = verification_lines(logged)
  verified(line, "answer")
  assert task_json["version_2_with_negative"] is True  # read from the file
  assert {key: task_json[key] for key in ("max_query_length", "doc_stride", "max_answer_length",
                                          "n_best_size", "null_score_diff_threshold")} == {
      "max_query_length": 8, "doc_stride": 8, "max_answer_length": 30, "n_best_size": 20,
      "null_score_diff_threshold": 0.0}
  for prefix in ("", "has_answer_", "no_answer_"):
    assert 0 <= results[f"dev_{prefix}exact_match"] <= results[f"dev_{prefix}f1"] <= 1
  assert (results["train_examples"], results["dev_examples"]) == (12, 12)
  predictions = read_json(config.output_dir, "predictions.json")
  dev = json.load(open(files["answer"][1]))
  contexts = {qa["id"]: paragraph["context"] for paragraph in dev["data"][0]["paragraphs"]
              for qa in paragraph["qas"]}
  assert set(predictions) == set(contexts)
  for question_id, answer in predictions.items():
    assert isinstance(answer, str) and answer in contexts[question_id]  # cut from the context


def test_answer_defaults_are_run_squads():
  config = FinetuneConfig(task="answer")
  assert (config.seq_length, config.doc_stride, config.max_query_length) == (384, 128, 64)
  assert FinetuneConfig().seq_length == 128


# === The other encoder sources ===


@pytest.mark.e2e
@pytest.mark.usefixtures("warm_verification")  # the export's check forked, not a fresh Python
def test_tagging_from_a_hugging_face_directory(files, model_dir, tmp_path, logged):
  """Tagging (CoNLL, two entity types, -DOCSTART-) fine-tuned from a Hugging Face directory:
  the kind's output_dir, dev figures and verified export, the encoder's config from the
  directory. (--skip_verify, which leaves the export unchecked: test_glue.py's runs.)"""
  loaded = trained.load_trained(model_dir)
  hf_dir = export_huggingface(loaded.model, loaded.config, loaded.vocabulary,
                              str(tmp_path / "hf"), lower_case=True)
  config = config_for("tag", files, hf_dir, tmp_path / "out")
  results = finetune(config)
  task_json = check_output_dir(config, results, "tag")
  (line,) = verification_lines(logged)
  verified(line, "tag")
  assert task_json["labels"] == ["B-CODE", "B-DEBUG", "I-CODE", "I-DEBUG", "O"]
  assert task_json["pair"] is False
  for name in ("f1", "precision", "recall"):
    assert 0 <= results[f"dev_entity_{name}"] <= 1
  assert 0 < results["dev_token_accuracy"] <= 1
  assert set(results["dev_entity_per_type"]) <= {"CODE", "DEBUG"}
  assert (results["train_examples"], results["dev_examples"]) == (32, 12)  # -DOCSTART- skipped
  assert read_json(config.output_dir, "bert_config.json")["hidden_size"] == 32


@pytest.mark.e2e
@pytest.mark.usefixtures("warm_verification")  # the export's check forked, not a fresh Python
def test_regression_from_an_original_bert_checkpoint(files, model_dir, tmp_path,
                                                     write_tf1_checkpoint, logged):
  """Regression (text pairs, a score) fine-tuned from an original BERT checkpoint, the encoder
  source that needs the most conversion: the kind's output_dir, dev figures and verified
  export, and the checkpoint's vocab.txt copied."""
  loaded = trained.load_trained(model_dir)
  published = tmp_path / "uncased_L-2_H-32_A-2"
  write_tf1_checkpoint(model_state(loaded.model, loaded.config), loaded.config, str(published))
  shutil.copy(os.path.join(model_dir, "vocab.txt"), published / "vocab.txt")
  config = config_for("regress", files, str(published), tmp_path / "out")
  results = finetune(config)
  task_json = check_output_dir(config, results, "regress")
  (line,) = verification_lines(logged)
  assert verified(line, "regress") == "score"
  assert task_json["labels"] == [] and task_json["pair"] is True
  assert -1 <= results["dev_pearson"] <= 1 and -1 <= results["dev_spearman"] <= 1
  assert results["dev_mse"] >= 0
  assert (results["train_examples"], results["dev_examples"]) == (48, 16)
  with open(published / "vocab.txt") as mine, open(os.path.join(config.output_dir,
                                                                "vocab.txt")) as copied:
    assert mine.read() == copied.read()


# === The Keras function ===


@pytest.mark.e2e
def test_task_model_of_each_kind(model_dir):
  features = {"token_ids": np.ones((4, 12), np.int32), "segment_ids": np.zeros((4, 12), np.int32),
              "padding_mask": np.ones((4, 12), np.int32)}
  for task, shape in {"tag": (4, 12, 3), "answer": (4, 2, 12)}.items():
    model = task_model(model_dir, task, num_labels=3, train_steps=4)
    assert model.predict(features, verbose=0).shape == shape, task
  regressor = task_model(model_dir, "regress", train_steps=4, seq_length=16)
  texts = ["stack frame", "class method value", "the line", "object"]
  assert regressor.predict(regressor.text_features(texts), verbose=0).shape == (4, 1)
  history = regressor.fit(regressor.text_features(texts), np.array([0.0, 1.0, 0.5, 1.0]),
                          epochs=1, batch_size=2, verbose=0)
  assert np.isfinite(history.history["loss"][0])
  chooser = task_model(model_dir, "choose", train_steps=4, seq_length=16)
  features = chooser.choice_features(texts[:2], [["a stack", "a class"], ["x", "y", "z"]])
  assert features["token_ids"].shape == (2, 3, 16)
  logits = chooser.predict(features, verbose=0)
  assert logits.shape == (2, 3) and logits[0, 2] == -10000.0  # absent: no probability
  history = chooser.fit(features, np.array([1, 2]), epochs=1, batch_size=2, verbose=0)
  assert np.isfinite(history.history["loss"][0])


# === Bad input ===


def finetune_command(task, train_file, dev_file, model_dir, output_dir, *extra):
  """The command in a fresh process, TensorFlow's logging left to it as for a user."""
  return run(["-m", "bert_tf.finetune", f"--task={task}", f"--model_dir={model_dir}",
              f"--train_file={train_file}", f"--dev_file={dev_file}",
              f"--output_dir={output_dir}", *extra], timeout=300, as_user=True)


@pytest.mark.e2e
def test_bad_input_is_one_line_before_training(files, model_dir, tmp_path):
  not_a_number = tmp_path / "bad.tsv"
  not_a_number.write_text("sentence1\tsentence2\tscore\nstack\tframe\thigh\n")
  bad_start = squad_file(2)
  bad_start["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] += 1
  bad_squad = write_json(tmp_path / "bad.json", bad_start)
  no_endings = tmp_path / "bad.csv"
  no_endings.write_text("video-id,fold-ind,startphrase,sent1,sent2,gold-source,label\n"
                        "v,1,A man,A man,,gold,0\n")
  cases = [
      ("regress", [files["regress"][0], str(not_a_number),
                   "--text_columns=sentence1,sentence2", "--label_column=score"],
       f"error: {not_a_number}, row 2: label 'high' is not a number (a regression task's "
       "labels are)"),
      ("answer", [bad_squad, files["answer"][1]],
       f"error: {bad_squad}: question 'q2-0': answer "),
      ("choose", [str(no_endings), str(no_endings)],
       f"error: {no_endings} has no ending columns (ending0, ending1, ...)"),
  ]
  for task, (train_file, dev_file, *extra), message in cases:
    output_dir = tmp_path / f"out_{task}"
    result = finetune_command(task, train_file, dev_file, model_dir, output_dir, *extra)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), lines
    assert not output_dir.exists()


def test_each_kind_checks_its_files_before_anything_trains(files, model_dir, tmp_path):
  """The kinds' checks, as `finetune` meets them after the encoder's (the command says each as
  one line)."""
  no_tag, unseen_tag = tmp_path / "no_tag.conll", tmp_path / "unseen.conll"
  no_tag.write_text("-DOCSTART- O\n\nstack B-DEBUG\nframe\n")
  unseen_tag.write_text("stack B-TOOL\n")
  cases = [
      (dict(task="tag", dev_file=str(no_tag)),
       f"{no_tag}:4: 'frame' has no tag (a line is a word and its tag, the tag last)"),
      (dict(task="tag", dev_file=str(unseen_tag)),
       f"{unseen_tag} has tags the training file has not: 'B-TOOL'"),
      (dict(task="answer", seq_length=32, max_query_length=8, doc_stride=21),
       "--doc_stride 21 must be smaller than the room left for the context (21 tokens: "
       "--seq_length 32 - --max_query_length 8 - 3)"),
      (dict(task="regress", train_file="builtin_answer", dev_file="builtin_answer"),
       "builtin_answer is the built-in answer task, not a regress task: use --task=answer "
       "(the built-in regress task is builtin_similar)"),
  ]
  for settings, message in cases:
    task = settings["task"]
    config = FinetuneConfig(**{"model_dir": model_dir, "output_dir": str(tmp_path / "out"),
                               "train_file": files[task][0], "dev_file": files[task][1],
                               **settings})
    with pytest.raises(UserError) as error:
      finetune(config)
    assert str(error.value) == message
    assert not (tmp_path / "out").exists()

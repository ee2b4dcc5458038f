"""GLUE as distributed: each of the nine tasks' files, written here in GLUE's exact layouts, is
read right (columns, header row or none, label names, MNLI's two dev sets, test indices), and
so are what GLUE's real files hold beside (QQP's rows missing fields, quotation marks, carriage
returns); each task's metric on known predictions; the epoch, the seed and the grid cell kept
by the task's own score; the server's predictions file; the mean and spread over seeds; the
table; and real fine-tunes of CoLA over two seeds and of all nine tasks by the driver."""

import dataclasses
import json
import logging
import os
import re

import numpy as np
import pytest

import glue_files
from bert_tf.errors import UserError
from bert_tf.finetune import FinetuneConfig, data, metrics, sweep
from bert_tf.finetune.glue import reading, scoring, table, tasks
from bert_tf.finetune.glue.__main__ import run_glue
from bert_tf.finetune.kinds import registry as kinds
from bert_tf.finetune.predictor import Predictor
from bert_tf.finetune.tasks import task_kind
from glue_files import QUESTIONS, SENTENCES, UNACCEPTABLE
from helpers import ROOT


@pytest.fixture(scope="module")
def glue_dir(tmp_path_factory):
  directory = str(tmp_path_factory.mktemp("glue"))
  for write in glue_files.WRITERS.values():
    write(directory)
  return directory


S, Q = SENTENCES, QUESTIONS
# Task: (first training example's texts and label, the second's label).
FIRST_ROWS = {
    "cola": ((S[0],), "1", "0"),
    "sst2": ((S[0].lower(),), "0", "1"),
    "mrpc": ((S[0], S[1]), "0", "1"),
    "qqp": ((Q[0], Q[1]), "0", "1"),
    "stsb": ((S[0], S[1]), "0.000", "0.700"),
    "mnli": ((S[0], S[1]), "entailment", "neutral"),
    "qnli": ((Q[0], S[1]), "entailment", "not_entailment"),
    "rte": ((S[0], S[1]), "entailment", "not_entailment"),
    "wnli": ((S[0], S[1]), "0", "1"),
}


@pytest.mark.parametrize("name", list(tasks.TASKS))
def test_each_task_reads_as_distributed(glue_dir, name):
  task = tasks.TASKS[name]
  train, dev = reading.read_splits(task, glue_dir)
  texts, first_label, second_label = FIRST_ROWS[name]
  assert len(train) == 12
  assert tuple(column[0] for column in train.texts) == texts
  assert train.labels[:2] == [first_label, second_label]
  if task.kind == "classify":
    assert set(train.labels) <= set(task.labels)
  assert {dev_set: len(examples) for dev_set, examples in dev.items()} == (
      {"matched": 4, "mismatched": 3} if name == "mnli" else {"": 4})
  test = reading.read_test_files(task, glue_dir)
  expected_files = {"mnli": ["MNLI-m.tsv", "MNLI-mm.tsv", "AX.tsv"]}.get(
      name, [f"{task.directory}.tsv"])
  assert [os.path.basename(file) for file, _, _ in test] == expected_files
  _, indices, test_texts = test[0]
  assert indices == (["100", "101", "102"] if name == "qqp" else ["0", "1", "2"])
  assert len(test_texts) == len(task.text_columns) and len(test_texts[0]) == 3


def test_cola_has_no_header_row_and_its_columns_by_number(glue_dir):
  path = os.path.join(glue_dir, "CoLA", "dev.tsv")
  dev = data.read_examples(path, ["3"], "1", header=False)
  assert dev.texts == ([S[5], UNACCEPTABLE[2], S[7], UNACCEPTABLE[0]],)
  assert dev.labels == ["1", "0", "1", "0"]
  with pytest.raises(UserError, match=r"has no header row: give its columns by number, 0 to 3 "
                                      r"\(not 'sentence'\)"):
    data.read_examples(path, ["sentence"], "1", header=False)
  with pytest.raises(UserError, match=r"has no column 3 \(its header: gj04, 1, , "):
    data.read_examples(path, ["3"], "1")


def test_a_file_of_another_layout_is_one_line(glue_dir, tmp_path):
  rte = tasks.TASKS["rte"]
  wrong = dataclasses.replace(rte, directory="WNLI")  # WNLI's labels are 0 and 1
  with pytest.raises(UserError, match=r"WNLI.train\.tsv: labels '0', '1' are not WNLI's "
                                      r"\(entailment, not_entailment\); is it GLUE's layout\?"):
    reading.read_splits(wrong, glue_dir)
  with pytest.raises(UserError, match="unknown --glue_task 'sts'"):
    FinetuneConfig(glue_task="sts", glue_dir=glue_dir).check_sweep()
  with pytest.raises(UserError, match="--glue_task needs --glue_dir"):
    FinetuneConfig(glue_task="cola").check_sweep()
  with pytest.raises(UserError, match="--predict_file=test predicts"):
    FinetuneConfig(glue_task="cola", glue_dir=str(tmp_path), predict_file="x.tsv").check_sweep()
  with pytest.raises(UserError, match="^--predict_file is predicted by the serving SavedModel: "
                                      "drop --noserving_export$"):
    FinetuneConfig(model_dir="runs/mine", output_dir=str(tmp_path), predict_file="test.tsv",
                   serving_export=False).check()
  with pytest.raises(UserError, match="--seeds '0,1,0' repeats a seed"):
    FinetuneConfig(seeds="0,1,0").check_sweep()
  with pytest.raises(UserError, match="--batch_sizes '8,x': give numbers"):
    FinetuneConfig(batch_sizes="8,x").check_sweep()


def test_a_glue_task_is_read_by_its_own_kind(glue_dir):
  def kind(name, **settings):
    return task_kind(FinetuneConfig(model_dir="m", output_dir="o", glue_dir=glue_dir,
                                    glue_task=name, **settings))

  mnli = kind("mnli", text_columns="text")  # the task's columns, not the flags'
  assert (mnli.name, mnli.pair, list(mnli.dev_sets)) == ("classify", True,
                                                         ["matched", "mismatched"])
  assert mnli.dev is mnli.dev_sets["matched"]
  assert mnli.labels == ["contradiction", "entailment", "neutral"]
  assert mnli.ranking == ("dev_glue_score", "dev_accuracy", "dev_macro_f1")
  cola = kind("cola")
  assert not cola.pair and cola.train.texts[0][:2] == [S[0], UNACCEPTABLE[1]]
  stsb = kind("stsb", task="classify")  # STS-B is a regression whatever --task says
  assert stsb.name == "regress" and stsb.ranking == ("dev_glue_score", "dev_pearson",
                                                     "dev_spearman")
  assert stsb.dev_targets.tolist() == pytest.approx([0.0, 0.7, 1.4, 2.1])
  sst2 = os.path.join(glue_dir, "SST-2")
  plain = task_kind(FinetuneConfig(
      model_dir="m", output_dir="o", train_file=os.path.join(sst2, "train.tsv"),
      dev_file=os.path.join(sst2, "dev.tsv"), text_columns="sentence", label_column="label"))
  assert plain.glue is None and list(plain.dev_sets) == [""]
  assert plain.ranking == kinds.kind_named("classify").ranking == ("dev_accuracy", "dev_macro_f1")


def test_each_task_scored_by_its_own_metric():
  cola = scoring.scores(tasks.TASKS["cola"], {"": list("110010")}, {"": list("100110")})
  # TP 2, TN 2, FP 1, FN 1: (2*2 - 1*1) / sqrt(3*3*3*3)
  assert cola == {"matthews_correlation": pytest.approx(1 / 3)}
  mrpc = scoring.scores(tasks.TASKS["mrpc"], {"": list("11100")}, {"": list("11010")})
  assert mrpc == {"f1": pytest.approx(2 / 3), "accuracy": pytest.approx(3 / 5)}  # of class 1
  stsb = scoring.scores(tasks.TASKS["stsb"], {"": ["1", "2", "3", "4"]},
                        {"": [1.0, 2.0, 2.0, 4.0]})
  # Spearman with a tie: ranks [1, 2, 3, 4] against [1, 2.5, 2.5, 4].
  assert stsb == {"pearson": pytest.approx(4.5 / np.sqrt(5 * 4.75)),
                  "spearman": pytest.approx(4.5 / np.sqrt(5 * 4.5))}
  mnli = scoring.scores(
      tasks.TASKS["mnli"],
      {"matched": ["entailment", "neutral", "contradiction", "neutral"],
       "mismatched": ["neutral", "neutral", "entailment"]},
      {"matched": ["entailment", "neutral", "contradiction", "entailment"],
       "mismatched": ["neutral", "entailment", "contradiction"]})
  assert mnli == {"matched_accuracy": 0.75, "mismatched_accuracy": pytest.approx(1 / 3)}
  assert tasks.TASKS["mnli"].score_names == list(mnli)
  rte = scoring.scores(tasks.TASKS["rte"], {"": ["entailment", "not_entailment"]},
                       {"": ["entailment", "entailment"]})
  assert rte == {"accuracy": 0.5}
  # As metrics.json holds them, with the task's score: the mean of its figures.
  assert scoring.dev_figures(tasks.TASKS["mrpc"], {"": list("11100")}, {"": list("11010")}) == {
      "dev_f1": pytest.approx(2 / 3), "dev_accuracy": pytest.approx(3 / 5),
      "dev_glue_score": pytest.approx((2 / 3 + 3 / 5) / 2)}


def _epoch(task, **figures):
  """An epoch's figures as a GLUE task's run reports them, from made-up `figures` (the task's
  own, and a classifier's accuracy): the kind's, the task's and its score."""
  own = {f"dev_{name}": figures[name] for name in task.score_names}
  plain = ({"dev_pearson": figures["pearson"], "dev_spearman": figures["spearman"]}
           if task.kind == "regress"
           else {"dev_accuracy": figures["accuracy"], "dev_macro_f1": figures["accuracy"]})
  return {**plain, **own, "dev_glue_score": task.score(own, "dev_")}


# Task: two epochs' figures, the first better by the kind's own ranking (accuracy, Pearson),
# the second by the task's score.
EPOCHS = {
    "cola": ({"accuracy": 0.7, "matthews_correlation": 0.0},
             {"accuracy": 0.5, "matthews_correlation": 0.09}),
    "mrpc": ({"accuracy": 0.8, "f1": 0.0}, {"accuracy": 0.7, "f1": 0.57}),
    "stsb": ({"pearson": 0.9, "spearman": 0.3}, {"pearson": 0.8, "spearman": 0.7}),
    "mnli": ({"accuracy": 1.0, "matched_accuracy": 1.0, "mismatched_accuracy": 0.0},
             {"accuracy": 0.75, "matched_accuracy": 0.75, "mismatched_accuracy": 2 / 3}),
}


@pytest.mark.parametrize("name", list(EPOCHS))
def test_the_epoch_kept_is_the_best_by_the_tasks_own_score(glue_dir, name):
  task = tasks.TASKS[name]
  first, second = (_epoch(task, **figures) for figures in EPOCHS[name])
  kind = task_kind(FinetuneConfig(model_dir="m", output_dir="o", glue_task=name,
                                  glue_dir=glue_dir))
  assert max([first, second], key=kind.rank) is second
  plain = kinds.kind_named(task.kind)
  assert max([first, second], key=lambda f: tuple(f[n] for n in plain.ranking)) is first


def test_the_grid_keeps_the_best_cell_and_seed_by_the_tasks_own_score(glue_dir):
  mrpc = tasks.TASKS["mrpc"]
  ranked_by = task_kind(FinetuneConfig(model_dir="m", output_dir="o", glue_task="mrpc",
                                       glue_dir=glue_dir)).ranking
  # Cell (1e-4, 16) has the better accuracy, (3e-5, 32) the better score (mean of F1 and
  # accuracy); in the latter, seed 0 has the better F1, seed 1 the better score.
  cells = {(1e-4, 16): [{"accuracy": 0.8, "f1": 0.5}, {"accuracy": 0.8, "f1": 0.5}],
           (3e-5, 32): [{"accuracy": 0.6, "f1": 0.8}, {"accuracy": 0.75, "f1": 0.7}]}
  runs = []
  for (rate, size), seeds in cells.items():
    for seed, figures in enumerate(seeds):
      results = {**_epoch(mrpc, **figures), "ranked_by": list(ranked_by), "dev_examples": 4}
      scores, score = sweep.scored(results, mrpc)
      assert scores == {"f1": figures["f1"], "accuracy": figures["accuracy"]}
      assert score == pytest.approx(mrpc.score(figures))
      runs.append({"learning_rate": rate, "batch_size": size, "seed": seed,
                   "output_dir": f"{rate:g}_{size}_{seed}", "scores": scores, "score": score})
  summary = sweep.summarize(runs)
  assert (summary["best"]["learning_rate"], summary["best"]["batch_size"]) == (3e-5, 32)
  assert summary["best"]["best_run"] == "3e-05_32_1"
  assert summary["best"]["score"] == pytest.approx((0.7 + 0.725) / 2)
  # A plain run's score is its kind's first ranking figure; its figures are all dev figures.
  plain = {"dev_accuracy": 0.5, "dev_macro_f1": 0.25, "dev_examples": 4,
           "ranked_by": ["dev_accuracy", "dev_macro_f1"], "best_epoch": 2}
  assert sweep.scored(plain, None) == ({"dev_accuracy": 0.5, "dev_macro_f1": 0.25}, 0.5)


def test_predictions_in_the_servers_layout(tmp_path):
  scoring.write_predictions(str(tmp_path / "RTE.tsv"), ["0", "1", "2"],
                            ["entailment", "not_entailment", "entailment"], "classify")
  assert (tmp_path / "RTE.tsv").read_text() == (
      "index\tprediction\n0\tentailment\n1\tnot_entailment\n2\tentailment\n")
  scoring.write_predictions(str(tmp_path / "STS-B.tsv"), ["0", "1"], [3.14159, 0.5], "regress")
  assert (tmp_path / "STS-B.tsv").read_text() == "index\tprediction\n0\t3.142\n1\t0.500\n"


def test_what_glues_real_files_hold_beside_their_layout(tmp_path, caplog):
  """QQP's training file has rows missing fields (a question cut by a line break), left out
  with a warning; quotation marks are text (GLUE's files are not quoted); carriage returns, a
  byte-order mark and test indices that are not the rows' numbers are read as they are."""
  glue_dir = str(tmp_path)
  glue_files.write_qqp(glue_dir)
  train = os.path.join(glue_dir, "QQP", "train.tsv")
  with open(train, "a", encoding="utf-8") as f:
    f.write("12\t24\t25\tHow do I learn\n")  # row 14, and its rest on row 15
    f.write("Python?\tWhat is Python?\t0\n")
  with caplog.at_level(logging.WARNING, logger="bert_tf"):
    examples, _ = reading.read_splits(tasks.TASKS["qqp"], glue_dir)
  assert len(examples) == 12 and examples.texts[0][3] == '"Where did she finish reading the novel?'
  assert "2 rows left out, their fields not the 6 the header has (the first: row 14)" in caplog.text
  with pytest.raises(UserError, match=r"train\.tsv, row 14: 4 fields, the header has 6"):
    data.read_examples(train, ["question1", "question2"], "is_duplicate")  # a plain file's
  # Windows line ends, a byte-order mark, a carriage return inside a text, an open quotation.
  rte = os.path.join(glue_dir, "RTE")
  os.makedirs(rte)
  rows = ["index\tsentence1\tsentence2\tlabel", '0\t"It rained.\tThe\rground is wet.\tentailment',
          "1\tIt rained.\tThe sun shone.\tnot_entailment"]
  for name in ("train.tsv", "dev.tsv"):
    with open(os.path.join(rte, name), "w", encoding="utf-8-sig", newline="") as f:
      f.write("\r\n".join(rows) + "\r\n")
  examples, dev = reading.read_splits(tasks.TASKS["rte"], glue_dir)
  assert examples.texts == (['"It rained.', "It rained."],
                            ["The\rground is wet.", "The sun shone."])
  assert examples.labels == dev[""].labels == ["entailment", "not_entailment"]
  with open(os.path.join(rte, "test.tsv"), "w", encoding="utf-8") as f:
    f.write("index\tsentence1\tsentence2\n7\ta\tb\n3\tc\td\n")
  assert reading.read_test_files(tasks.TASKS["rte"], glue_dir) == [
      (os.path.join("submission", "RTE.tsv"), ["7", "3"], (["a", "c"], ["b", "d"]))]


def test_a_plain_file_to_predict_is_numbered_without_an_index(tmp_path):
  path = tmp_path / "plain.tsv"
  path.write_text("gj04\t1\t\tA sentence.\ngj04\t0\t*\tSentence a.\n")
  config = FinetuneConfig(predict_file=str(path), text_columns="3", no_header=True)
  assert sweep.to_predict(config, None) == [
      ("predictions.tsv", ["0", "1"], (["A sentence.", "Sentence a."],))]
  path.write_text("index\ttext\n7\tA sentence.\n9\tSentence a.\n")
  assert sweep.to_predict(dataclasses.replace(config, no_header=False, text_columns="text"),
                          None)[0][1] == ["7", "9"]


def _runs(figures):
  return [{"learning_rate": rate, "batch_size": size, "seed": seed,
           "output_dir": f"lr{rate}_batch{size}_seed{seed}", "scores": {"accuracy": value},
           "score": value}
          for (rate, size), values in figures.items() for seed, value in enumerate(values)]


def test_seeds_mean_and_spread_and_the_grid_keeps_the_best():
  summary = sweep.summarize(_runs({(1e-4, 16): [0.5, 0.6, 0.7], (3e-5, 32): [0.8, 0.7, 0.9],
                                   (5e-5, 8): [0.75, 0.75, 0.75]}))
  first, second, third = summary["cells"]
  assert first["mean"] == {"accuracy": pytest.approx(0.6)}
  assert first["std"] == {"accuracy": pytest.approx(0.1)}  # the sample's, n - 1
  assert third["std"] == {"accuracy": 0.0}
  assert first["seeds"] == {0: {"accuracy": 0.5}, 1: {"accuracy": 0.6}, 2: {"accuracy": 0.7}}
  assert summary["best"] is second and second["score"] == pytest.approx(0.8)
  assert second["best_run"] == "lr3e-05_batch32_seed2"  # its best seed (0.9)
  assert sweep.spread([0.7]) == (0.7, 0.0)
  assert sweep.grid(FinetuneConfig(learning_rates="3e-4,1e-4", batch_sizes="8,16")) == [
      (3e-4, 8), (3e-4, 16), (1e-4, 8), (1e-4, 16)]
  assert sweep.grid(FinetuneConfig()) == [(5e-5, 32)] and sweep.seeds(FinetuneConfig()) == [0]


def test_the_table_and_its_macro_average():
  mrpc = sweep.summarize([
      {"learning_rate": 2e-5, "batch_size": 32, "seed": seed, "output_dir": str(seed),
       "scores": {"f1": f1, "accuracy": accuracy}, "score": (f1 + accuracy) / 2}
      for seed, (f1, accuracy) in enumerate([(0.9, 0.8), (0.8, 0.7)])])
  cola = sweep.summarize(_runs({(1e-4, 16): [0.5]}))
  cola["cells"][0]["mean"] = {"matthews_correlation": 0.5}
  entries = {"cola": table.task_entry(tasks.TASKS["cola"], cola),
             "mrpc": table.task_entry(tasks.TASKS["mrpc"], mrpc)}
  assert entries["mrpc"]["score"] == pytest.approx(0.8)  # the mean of F1 0.85, accuracy 0.75
  results = table.glue_json(entries)
  assert results["macro_average"] == pytest.approx(0.65)
  assert table.glue_markdown(results).splitlines()[2:] == [
      "| CoLA | matthews correlation 50.0 | 50.0 | 0.0001 | 16 | 1 |",
      "| MRPC | f1 85.0 ± 7.1, accuracy 75.0 ± 7.1 | 80.0 | 2e-05 | 32 | 2 |",
      "| macro average | | 65.0 | | | |"]


# === Real fine-tunes ===


def _tiny(model_dir, output_dir, **settings):
  """An epoch of one step: the batch holds the 12 training rows (one shape, one trace); the
  export not verified (test_finetune*'s are). `model_dir`: conftest's one-layer encoder (the
  tests check the driver and the sweep, not what the encoder learns)."""
  return FinetuneConfig(model_dir=model_dir, output_dir=output_dir, epochs=1,
                        learning_rate=1e-3, batch_size=12, seq_length=16, skip_verify=True,
                        **settings)


@pytest.mark.e2e
def test_cola_over_two_seeds(shallow_model_dir, glue_dir, tmp_path, caplog):
  caplog.set_level(logging.INFO, logger="bert_tf")
  summary = sweep.run(_tiny(shallow_model_dir, str(tmp_path), glue_task="cola",
                            glue_dir=glue_dir, seeds="0,1", predict_file="test"))
  # --skip_verify: the runs' exports, written, are not checked.
  assert all(os.path.exists(os.path.join(run["output_dir"], "export", "saved_model.pb"))
             for run in summary["runs"])
  assert not [r for r in caplog.records if r.getMessage().startswith("verified:")]
  assert [run["seed"] for run in summary["runs"]] == [0, 1]
  for run in summary["runs"]:
    assert list(run["scores"]) == ["matthews_correlation"]
    assert -1 <= run["scores"]["matthews_correlation"] <= 1
    with open(os.path.join(run["output_dir"], "metrics.json")) as f:
      assert json.load(f)["dev_examples"] == 4
  values = [run["scores"]["matthews_correlation"] for run in summary["runs"]]
  (cell,) = summary["cells"]
  assert cell["mean"]["matthews_correlation"] == pytest.approx(np.mean(values))
  assert cell["std"]["matthews_correlation"] == pytest.approx(np.std(values, ddof=1))
  assert summary["scored_by"] == "dev_glue_score"
  # The figure fine-tuning reported is the exported model's on CoLA's dev set.
  best = summary["best"]["best_run"]
  dev = data.read_examples(os.path.join(glue_dir, "CoLA", "dev.tsv"), ["3"], "1", header=False)
  predicted = Predictor(best)(dev.texts)
  assert max(values) == pytest.approx(
      metrics.matthews_correlation(np.array(dev.labels), np.array(predicted)))
  lines = (tmp_path / "submission" / "CoLA.tsv").read_text().splitlines()
  assert lines[0] == "index\tprediction" and len(lines) == 4
  assert [line.split("\t")[0] for line in lines[1:]] == ["0", "1", "2"]
  assert {line.split("\t")[1] for line in lines[1:]} <= {"0", "1"}
  assert summary["predictions"] == [str(tmp_path / "submission" / "CoLA.tsv")]
  with open(tmp_path / "sweep.json") as f:
    assert json.load(f)["best"]["mean"] == cell["mean"]


def _docs_table() -> list[str]:
  """The GLUE table docs/finetuning.md shows."""
  with open(os.path.join(ROOT, "docs", "finetuning.md"), encoding="utf-8") as f:
    lines = f.read().splitlines()
  start = lines.index("| task | dev metrics | score | learning rate | batch size | seeds |")
  end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
  return lines[start:end]


def _figures_masked(lines: list[str]) -> list[str]:
  return [re.sub(r"-?\d+\.\d\b", "x", line) for line in lines]


@pytest.mark.e2e
def test_the_driver_fine_tunes_all_nine_tasks(shallow_model_dir, glue_dir, tmp_path):
  """Each task in GLUE's layout trains (one step), reports its own metrics, and predicts its
  test files into the server's; the table is the one docs/finetuning.md shows."""
  results = run_glue(_tiny(shallow_model_dir, str(tmp_path), glue_dir=glue_dir,
                           predict_file="test"))
  assert list(results["tasks"]) == list(tasks.TASKS)
  for name, entry in results["tasks"].items():
    task = tasks.TASKS[name]
    assert list(entry["mean"]) == task.score_names
    assert entry["score"] == pytest.approx(task.score(entry["mean"]))
    with open(tmp_path / task.directory / "metrics.json") as f:
      run = json.load(f)
    assert run["ranked_by"][0] == "dev_glue_score" and run["dev_examples"] == 4
    assert run["dev_glue_score"] == pytest.approx(entry["score"])
    for server_file, test_file in task.test_files:
      indices, _ = reading.read_test(task.path(glue_dir, test_file), task.columns_of_test,
                                     task.test_index_column)
      header, *rows = [line.split("\t") for line in
                       (tmp_path / "submission" / server_file).read_text().splitlines()]
      assert header == ["index", "prediction"]
      assert [index for index, _ in rows] == indices
      if task.kind == "regress":
        assert all(re.fullmatch(r"-?\d+\.\d{3}", prediction) for _, prediction in rows)
      else:
        assert {prediction for _, prediction in rows} <= set(task.labels)
  assert sorted(os.listdir(tmp_path / "submission")) == [
      "AX.tsv", "CoLA.tsv", "MNLI-m.tsv", "MNLI-mm.tsv", "MRPC.tsv", "QNLI.tsv", "QQP.tsv",
      "RTE.tsv", "SST-2.tsv", "STS-B.tsv", "WNLI.tsv"]
  assert results["macro_average"] == pytest.approx(
      np.mean([entry["score"] for entry in results["tasks"].values()]))
  with open(tmp_path / "glue.json") as f:
    assert json.load(f) == results
  written = (tmp_path / "glue.md").read_text()
  assert written == table.glue_markdown(results)
  assert _figures_masked(_docs_table()) == _figures_masked(written.splitlines())

"""GLUE as distributed: each of the nine tasks' files, written here in GLUE's exact layouts, is
read right (columns, header row or none, label names, MNLI's two dev sets, test indices); each
task's metric on known predictions; the server's predictions file; the mean and spread over
seeds and the grid's best cell; the table; and real fine-tunes of CoLA over two seeds and of
the all-tasks driver on MNLI."""

import dataclasses
import json
import os

import numpy as np
import pytest

import glue_files
from bert_tf.errors import UserError
from bert_tf.finetune import FinetuneConfig, data, sweep
from bert_tf.finetune.glue import scoring, table, tasks
from bert_tf.finetune.glue.__main__ import run_glue
from glue_files import QUESTIONS, SENTENCES, UNACCEPTABLE


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
  train = data.read_examples(task.path(glue_dir, task.train_file), list(task.text_columns),
                             task.label_column, header=task.header)
  texts, first_label, second_label = FIRST_ROWS[name]
  assert len(train) == 12
  assert tuple(column[0] for column in train.texts) == texts
  assert train.labels[:2] == [first_label, second_label]
  if task.kind == "classify":
    assert set(train.labels) <= set(task.labels)
  dev = scoring.read_dev(task, glue_dir)
  assert {dev_set: len(examples) for dev_set, examples in dev.items()} == (
      {"matched": 4, "mismatched": 3} if name == "mnli" else {"": 4})
  test = scoring.read_test_files(task, glue_dir)
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
  with pytest.raises(UserError, match=r"labels '0', '1' are not WNLI's \(entailment, "
                                      r"not_entailment\); is it GLUE's layout\?"):
    scoring.read_dev(wrong, glue_dir)
  with pytest.raises(UserError, match="unknown --glue_task 'sts'"):
    tasks.glue_task("sts")
  with pytest.raises(UserError, match="--glue_task needs --glue_dir"):
    FinetuneConfig(glue_task="cola").check_sweep()
  with pytest.raises(UserError, match="--predict_file=test predicts"):
    FinetuneConfig(glue_task="cola", glue_dir=str(tmp_path), predict_file="x.tsv").check_sweep()
  with pytest.raises(UserError, match="--seeds '0,1,0' repeats a seed"):
    FinetuneConfig(seeds="0,1,0").check_sweep()
  with pytest.raises(UserError, match="--batch_sizes '8,x': give numbers"):
    FinetuneConfig(batch_sizes="8,x").check_sweep()


def test_task_config_points_at_the_tasks_files(glue_dir):
  base = FinetuneConfig(model_dir="m", output_dir="o", glue_dir=glue_dir, text_columns="text")
  cola = tasks.task_config(tasks.TASKS["cola"], base)
  assert (cola.train_file, cola.dev_file) == (os.path.join(glue_dir, "CoLA", "train.tsv"),
                                              os.path.join(glue_dir, "CoLA", "dev.tsv"))
  assert (cola.text_columns, cola.label_column, cola.no_header) == ("3", "1", True)
  mnli = tasks.task_config(tasks.TASKS["mnli"], base)
  assert mnli.dev_file.endswith(os.path.join("MNLI", "dev_matched.tsv")) and not mnli.no_header
  assert (mnli.text_columns, mnli.label_column) == ("sentence1,sentence2", "gold_label")
  assert tasks.task_config(tasks.TASKS["stsb"], base).task == "regress"
  assert mnli.task == "classify"


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


def test_predictions_in_the_servers_layout(tmp_path):
  scoring.write_predictions(str(tmp_path / "RTE.tsv"), ["0", "1", "2"],
                            ["entailment", "not_entailment", "entailment"], "classify")
  assert (tmp_path / "RTE.tsv").read_text() == (
      "index\tprediction\n0\tentailment\n1\tnot_entailment\n2\tentailment\n")
  scoring.write_predictions(str(tmp_path / "STS-B.tsv"), ["0", "1"], [3.14159, 0.5], "regress")
  assert (tmp_path / "STS-B.tsv").read_text() == "index\tprediction\n0\t3.142\n1\t0.500\n"


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
           "output_dir": f"lr{rate}_batch{size}_seed{seed}", "scores": {"accuracy": value}}
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
       "scores": {"f1": f1, "accuracy": accuracy}}
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


def _tiny(model_dir, output_dir, **settings):  # noqa: F811
  """A fine-tune of one short epoch whose exports are not verified (test_finetune*'s are)."""
  return FinetuneConfig(model_dir=model_dir, output_dir=output_dir, epochs=1,
                        learning_rate=1e-3, batch_size=8, seq_length=16, skip_verify=True,
                        **settings)


@pytest.mark.e2e
def test_cola_over_two_seeds(model_dir, glue_dir, tmp_path):
  summary = sweep.run(_tiny(model_dir, str(tmp_path), glue_task="cola", glue_dir=glue_dir,
                            seeds="0,1", predict_file="test"))
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
  # The reported figure is the exported model's Matthews correlation on CoLA's dev set.
  best = summary["best"]["best_run"]
  dev = data.read_examples(os.path.join(glue_dir, "CoLA", "dev.tsv"), ["3"], "1", header=False)
  predicted = scoring.Predictor(best, "classify", pair=False)(dev.texts)
  from bert_tf.finetune import metrics
  assert max(values) == pytest.approx(
      metrics.matthews_correlation(np.array(dev.labels), np.array(predicted)))
  lines = (tmp_path / "submission" / "CoLA.tsv").read_text().splitlines()
  assert lines[0] == "index\tprediction" and len(lines) == 4
  assert [line.split("\t")[0] for line in lines[1:]] == ["0", "1", "2"]
  assert {line.split("\t")[1] for line in lines[1:]} <= {"0", "1"}
  assert summary["predictions"] == [str(tmp_path / "submission" / "CoLA.tsv")]
  with open(tmp_path / "sweep.json") as f:
    assert json.load(f)["best"]["mean"] == cell["mean"]


@pytest.mark.e2e
def test_the_driver_runs_every_task_present(model_dir, glue_dir, tmp_path):
  only_mnli = tmp_path / "glue"
  glue_files.write_mnli(str(only_mnli))
  output = tmp_path / "out"
  results = run_glue(_tiny(model_dir, str(output), glue_dir=str(only_mnli),
                           predict_file="test"))
  assert list(results["tasks"]) == ["mnli"]
  mnli = results["tasks"]["mnli"]
  assert list(mnli["mean"]) == ["matched_accuracy", "mismatched_accuracy"]
  assert mnli["score"] == pytest.approx(np.mean(list(mnli["mean"].values())))
  assert results["macro_average"] == mnli["score"]
  with open(output / "glue.json") as f:
    assert json.load(f) == results
  assert (output / "glue.md").read_text() == table.glue_markdown(results)
  rows = {name: len((output / "submission" / name).read_text().splitlines()) - 1
          for name in sorted(os.listdir(output / "submission"))}
  assert rows == {"AX.tsv": 2, "MNLI-m.tsv": 3, "MNLI-mm.tsv": 2}
  mnli_labels = (output / "submission" / "MNLI-m.tsv").read_text().splitlines()[1:]
  assert {line.split("\t")[1] for line in mnli_labels} <= {
      "entailment", "neutral", "contradiction"}

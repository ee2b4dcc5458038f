"""A user's first day as the docs write it, run as printed (`journeys.py`) with a small flagfile
appended for size: (a) README's quickstart, its fine-tune of the quickstart's encoder, its ONNX
int8 export of that fine-tune and its example answering with the export without TensorFlow,
one run feeding the next; (d) docs/finetuning.md's GLUE command on a GLUE directory in GLUE's
layout, and its fine-tune on a user's own MRPC files (GLUE's MRPC as distributed). README's
sample outputs are checked against what the commands print, line by line in their shape
(numbers and quoted texts aside). The fast tier checks that every journey is still in its doc
and that the harness reads and compares as it says."""

import glob
import json
import os
import re
import subprocess

import pytest

import glue_files
import journeys
from journeys import JourneyMissing, assert_prints, completed, printed

README = "README.md"
# Each journey's command: (doc, marker, the words it starts with, whether the doc shows what
# it prints).
QUICKSTART = (README, "quickstart", "python train.py", True)
FINETUNE = (README, "finetune", "python -m bert_tf.finetune", True)
EXPORT = (README, "export", "python -m bert_tf.export", True)
EXAMPLE = (README, "example", "python examples/classify.py", True)
GLUE = ("docs/finetuning.md", "glue", "python -m bert_tf.finetune", False)
OWN_MRPC = ("docs/finetuning.md", "own_files",
            "python -m bert_tf.finetune --model_dir=runs/mine --train_file=glue/MRPC/train.tsv",
            False)
PACKING = ("docs/pipeline.md", "packing", "python -m bert_tf.audit", True)
OWN_CORPUS = (README, "own_corpus", "python train.py", False)
RECORDS = ("docs/pipeline.md", "records", "python train.py", False)
# The quickstart's flags made small: its model (bert_tiny, no dropout, 40% masked) at sequence
# 64 for 12 steps, the probe it runs at the end cut to 10 steps.
SMALL_QUICKSTART = ["--seq_length=64", "--max_predictions_per_seq=26", "--global_batch_size=8",
                    "--train_steps=12", "--warmup_steps=2", "--checkpoint_every=6",
                    "--eval_every=12", "--probe_steps=10"]
# The fine-tune at shorter sequences (the task's texts are sentences), its epochs as README's.
SMALL_FINETUNE = ["--seq_length=64"]
# README's own-corpus run made small: its vocabulary learned as printed, bert_tiny for its
# bert_mini, 4 steps at sequence 32, no serving SavedModel (the hf export reads the weights); the
# audit of 64 examples; the hf export unverified (the quickstart's exports verify theirs).
SMALL_OWN_RUN = ["--config=bert_tiny", "--seq_length=32", "--max_predictions_per_seq=5",
                 "--global_batch_size=8", "--train_steps=4", "--warmup_steps=1",
                 "--checkpoint_every=4", "--eval_steps=1", "--noserving_export"]
SMALL_OWN_AUDIT = ["--num_examples=64"]
SMALL_OWN_EXPORT = ["--skip_verify"]
# docs/pipeline.md's records: one epoch of the corpus at sequence 32 in two files, then a run
# of bert_tiny for 2 steps on them (its sequence the records').
SMALL_PREPARE = ["--dupe_factor=1", "--num_output_files=2", "--seq_length=32",
                 "--max_predictions_per_seq=5"]
SMALL_RECORDS_RUN = ["--config=bert_tiny", "--global_batch_size=8", "--train_steps=2",
                     "--warmup_steps=1", "--checkpoint_every=2", "--eval_steps=1",
                     "--noserving_export"]
# GLUE's seeds in one epoch each, no self-check of each seed's SavedModel (the fine-tune above
# checks its own, as every fine-tune does by default).
SMALL_GLUE = ["--epochs=1", "--seq_length=32", "--skip_verify"]
# The fine-tune on the user's MRPC files the same: one epoch (one step: 12 rows, batch 32).
SMALL_OWN_MRPC = SMALL_GLUE


def command(journey):
  doc, name, start, _ = journey
  return journeys.command(doc, name, start)


@pytest.mark.parametrize("journey", [QUICKSTART, FINETUNE, EXPORT, EXAMPLE, GLUE, OWN_MRPC,
                                     PACKING, OWN_CORPUS, RECORDS],
                         ids=lambda journey: journey[1])
def test_each_journey_is_in_its_doc(journey):
  doc, name, start, prints = journey
  assert command(journey)[:len(start.split())] == start.split()
  if prints:
    assert printed(doc, name)


def test_a_journey_gone_from_its_doc_fails_loudly(tmp_path):
  doc = tmp_path / "doc.md"
  doc.write_text("<!-- journey: kept -->\n```sh\npython train.py --x=1 \\\n    --y=2 && "
                 "python -m bert_tf.vocab --z  # a comment\n```\n")
  assert journeys.commands(str(doc), "kept") == [
      ["python", "train.py", "--x=1", "--y=2"], ["python", "-m", "bert_tf.vocab", "--z"]]
  with pytest.raises(JourneyMissing, match=r"doc.md has no fenced block after "
                                           r"<!-- journey: renamed -->"):
    journeys.commands(str(doc), "renamed")
  with pytest.raises(JourneyMissing, match="has 0 commands starting `python -m bert_tf.export`"):
    journeys.command(str(doc), "kept", "python -m bert_tf.export")


def test_a_sample_line_matches_lines_of_its_shape_only():
  sample = ["Trained 2000 steps at 79 examples/s (9,355 real tokens/s, 7% padding).", "...",
            "  the 0.06, a 0.03, . 0.03", "  followed by 'Literals': P(IsNext) = 0.07"]
  printed_lines = ["Trained 12 steps at 104 examples/s (6,549 real tokens/s, 1% padding).",
                   "something else", '  " 0.00, , 0.01, the 0.00',
                   "  followed by 'Another, longer text': P(IsNext) = 0.59"]
  assert_prints(sample, subprocess.CompletedProcess([], 0, "\n".join(printed_lines), ""))
  for changed in ("Trained 12 steps at 104 examples/s (6,549 tokens/s, 1% padding).",
                  "  followed by 'Literals': P(NotNext) = 0.59"):
    with pytest.raises(AssertionError, match="has no line of its shape"):
      assert_prints(sample, subprocess.CompletedProcess(
          [], 0, "\n".join(line if line[:9] != changed[:9] else changed
                           for line in printed_lines), ""))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
  return journeys.checkout(tmp_path_factory.mktemp("first_day"))


@pytest.fixture(scope="module")
def quickstart(workdir):
  """README's quickstart, started as a user starts it (a fresh interpreter, TensorFlow's
  logging as theirs)."""
  return completed(journeys.run(command(QUICKSTART), workdir, flags=SMALL_QUICKSTART,
                                as_user=True))


@pytest.fixture(scope="module")
def finetuned(workdir, quickstart):
  return completed(journeys.run(command(FINETUNE), workdir, flags=SMALL_FINETUNE))


@pytest.fixture(scope="module")
def exported(workdir, finetuned):
  return completed(journeys.run(command(EXPORT), workdir))


@pytest.mark.e2e
def test_quickstart_prints_what_readme_shows(workdir, quickstart):
  assert_prints(printed(README, "quickstart"), quickstart)
  assert os.path.exists(os.path.join(workdir, "runs", "quickstart", "export", "saved_model.pb"))
  assert os.path.exists(os.path.join(workdir, "data", "vocab.txt"))


@pytest.mark.e2e
def test_finetune_of_the_quickstart_prints_what_readme_shows(workdir, finetuned):
  assert_prints(printed(README, "finetune"), finetuned)
  metrics = json.load(open(os.path.join(workdir, "runs", "quickstart_task", "metrics.json")))
  assert metrics["task"] == "classify" and 0 <= metrics["dev_accuracy"] <= 1


@pytest.mark.e2e
def test_onnx_export_of_the_finetune_prints_what_readme_shows(workdir, exported):
  assert_prints(printed(README, "export"), exported)
  output = os.path.join(workdir, "runs", "quickstart_onnx")
  assert {"model.onnx", "tokenizer.json", "portable.json"} <= set(os.listdir(output))


@pytest.mark.e2e
def test_packed_audit_of_the_quickstart_corpus_prints_what_the_docs_show(workdir, quickstart):
  """docs/pipeline.md's audit with --packing, on the quickstart's corpus and vocabulary: it
  prints the docs' figures, and writes nothing."""
  def files():
    return {os.path.join(root, name) for root, _, names in os.walk(workdir) for name in names
            if name != journeys.FLAGFILE}

  before = files()
  result = completed(journeys.run(command(PACKING), workdir, flags=["--num_examples=512"]))
  assert_prints(printed(*PACKING[:2]), result)
  assert files() == before


@pytest.mark.e2e
def test_example_answers_with_the_export_without_tensorflow(workdir, exported):
  """README's example command, in a fresh interpreter that reports every module it imports
  (`PYTHONPROFILEIMPORTTIME`): one JSON line per text, and no TensorFlow."""
  argv = command(EXAMPLE)
  result = completed(journeys.run(argv, workdir, fresh=True, PYTHONPROFILEIMPORTTIME="1"))
  answers = [json.loads(line) for line in result.stdout.splitlines()]
  assert len(answers) == len(argv) - 3 >= 1  # python examples/classify.py EXPORT_DIR TEXT...
  imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()
              if line.startswith("import time:")]
  assert "onnxruntime" in imported and "tokenizers" in imported
  assert not [name for name in imported if name.split(".")[0] == "tensorflow"]
  assert_prints(printed(README, "example"), result)


@pytest.mark.e2e
@pytest.mark.xdist_group("journey_glue")
def test_glue_command_of_the_docs_runs_on_glues_layout(tmp_path, model_dir):
  """docs/finetuning.md's GLUE command in a clone where `runs/mine` is a finished encoder (the
  suite's `model_dir`, a BERT of width 32) and `glue_data` is GLUE's CoLA as distributed."""
  workdir = journeys.checkout(tmp_path)
  os.makedirs(os.path.join(workdir, "runs"))
  os.symlink(model_dir, os.path.join(workdir, "runs", "mine"))
  glue_files.write_cola(os.path.join(workdir, "glue_data"))
  argv = command(GLUE)
  completed(journeys.run(argv, workdir, flags=SMALL_GLUE))
  output = os.path.join(workdir, journeys.flag_value(argv, "output_dir"))
  sweep = json.load(open(os.path.join(output, "sweep.json")))
  assert sweep["task"] == "cola" and sweep["scored_by"] == "dev_glue_score"
  seeds = [int(seed) for seed in journeys.flag_value(argv, "seeds").split(",")]
  assert [run["seed"] for run in sweep["runs"]] == seeds
  predictions = open(os.path.join(output, "submission", "CoLA.tsv")).read().splitlines()
  assert predictions[0] == "index\tprediction" and len(predictions) == 4


def files_in(directory) -> dict:
  """Every file under `directory` with its size and time of change, links followed: a clone's
  links reach this checkout and the encoder it fine-tunes, which a run must not write either."""
  found = {}
  for root, folders, names in os.walk(directory, followlinks=True):
    folders[:] = [name for name in folders if name != "__pycache__"]  # Python's, not the run's
    for name in names:
      status = os.stat(os.path.join(root, name))
      found[os.path.relpath(os.path.join(root, name), directory)] = (status.st_size,
                                                                     status.st_mtime_ns)
  return found


@pytest.mark.e2e
@pytest.mark.xdist_group("journey_glue")
def test_fine_tune_on_the_users_mrpc_files_writes_its_output_dir_alone(tmp_path, model_dir):
  """docs/finetuning.md's fine-tune on a user's MRPC files (`glue/MRPC/`, GLUE's layout), with
  `runs/mine` the suite's `model_dir`: it says its epoch and ends on the kept epoch's figures
  and where the model is, writes what the doc lists in its --output_dir, and changes nothing
  else in the clone (this checkout and the encoder included)."""
  workdir = journeys.checkout(tmp_path)
  os.makedirs(os.path.join(workdir, "runs"))
  os.symlink(model_dir, os.path.join(workdir, "runs", "mine"))
  glue_files.write_mrpc(os.path.join(workdir, "glue"))
  argv = command(OWN_MRPC)
  output = journeys.flag_value(argv, "output_dir")
  before = files_in(workdir)
  result = completed(journeys.run(argv, workdir, flags=SMALL_OWN_MRPC))
  assert "of 2 labels (0, 1) for 1 epoch of 1 step; 4 dev examples" in result.stderr
  assert re.search(r"^epoch 1/1: training loss [\d.]+, dev accuracy [\d.]+, macro F1 [\d.]+$",
                   result.stderr, re.MULTILINE)
  assert re.fullmatch(rf"Best epoch 1 of 1: dev accuracy [\d.]+, macro F1 [\d.]+\. The model "
                      rf"is in {output}/export \(signature classify\)\.",
                      result.stdout.splitlines()[-1])
  assert set(os.listdir(os.path.join(workdir, output))) == {
      "metrics.json", "task.json", "model.weights.h5", "bert_config.json", "vocab.txt", "logs",
      "export", "classes.json"}
  after = files_in(workdir)
  assert {path: after.get(path) for path in before} == before
  assert {path for path in after if path not in before} == {
      journeys.FLAGFILE, *(path for path in after if path.startswith(output + os.sep))}


def clone_with_a_corpus(directory, corpus_pattern) -> str:
  """A clone (`journeys.checkout`) holding the user's corpus as `corpus/*.txt`: the built-in
  corpus's files, as a user brings theirs."""
  workdir = journeys.checkout(directory)
  os.mkdir(os.path.join(workdir, "corpus"))
  for path in glob.glob(corpus_pattern):
    os.symlink(path, os.path.join(workdir, "corpus", os.path.basename(path)))
  return workdir


@pytest.mark.e2e
def test_own_corpus_commands_of_the_readme_write_only_what_they_name(tmp_path, corpus_pattern):
  """README's four commands on a corpus of the user's own, one after the other as printed: the
  vocabulary, the run, its audit and its hf export, each where the command names it; nothing
  else appears in the clone."""
  workdir = clone_with_a_corpus(tmp_path, corpus_pattern)
  before = set(os.listdir(workdir))
  vocab, train, audit, export = journeys.commands(README, "own_corpus")
  completed(journeys.run(vocab, workdir))
  completed(journeys.run(train, workdir, flags=SMALL_OWN_RUN))
  shown = completed(journeys.run(audit, workdir, flags=SMALL_OWN_AUDIT))
  assert "[MASK]" in shown.stdout and "masked_share" in shown.stdout
  completed(journeys.run(export, workdir, flags=SMALL_OWN_EXPORT))
  vocab_file, model_dir, output = (journeys.flag_value(vocab, "vocab_file"),
                                   journeys.flag_value(train, "model_dir"),
                                   journeys.flag_value(export, "output"))
  assert journeys.flag_value(train, "vocab_file") == vocab_file
  assert journeys.flag_value(export, "model_dir") == model_dir
  assert os.path.exists(os.path.join(workdir, model_dir, "model.weights.h5"))
  assert {"config.json", "model.safetensors", "vocab.txt"} <= set(
      os.listdir(os.path.join(workdir, output)))
  assert set(os.listdir(workdir)) - before == {vocab_file, "runs", journeys.FLAGFILE}
  assert set(os.listdir(os.path.join(workdir, "runs"))) == {
      os.path.basename(model_dir), os.path.basename(output)}


@pytest.mark.e2e
def test_records_commands_of_the_docs_train_where_they_name(tmp_path, corpus_pattern,
                                                            vocab_file):
  """docs/pipeline.md's two commands on the user's corpus and vocabulary (`vocab.txt`): the
  records in `records/`, the run on them in its --model_dir and nowhere else (not the
  quickstart's runs/quickstart, train.py's default)."""
  workdir = clone_with_a_corpus(tmp_path, corpus_pattern)
  os.symlink(vocab_file, os.path.join(workdir, "vocab.txt"))
  prepare, train = journeys.commands(*RECORDS[:2])
  completed(journeys.run(prepare, workdir, flags=SMALL_PREPARE))
  output = journeys.flag_value(prepare, "output")
  assert len(glob.glob(os.path.join(workdir, journeys.flag_value(train, "input_files")))) == 2
  run = completed(journeys.run(train, workdir, flags=SMALL_RECORDS_RUN))
  assert "Records of 32 tokens and 5 predictions each" in run.stderr
  model_dir = journeys.flag_value(train, "model_dir")
  assert model_dir, f"{RECORDS[0]}'s train.py names no --model_dir: it trains in runs/quickstart"
  assert os.path.exists(os.path.join(workdir, model_dir, "model.weights.h5"))
  assert os.listdir(os.path.join(workdir, "runs")) == [os.path.basename(model_dir)]
  assert os.path.isdir(os.path.join(workdir, output))

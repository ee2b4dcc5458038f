"""End to end, what a user watching `python train.py` gets: a quiet console (our lines only, for
every command), training scalars by global step every --log_every steps and held-out ones at
the steps they were measured, one continuous curve across a resume, and artifacts the size of
the model (not of the model and Adam's two slots).

The run is conftest's `finished_run` (`helpers.TINY_RUN`: it builds its vocabulary first and
holds out a fifth of the documents), which test_train.py reads too."""

import json
import os
import re

import h5py
import pytest

from helpers import NOISE, TINY_RUN_STEPS, run

# In the process that made conftest's finished run, with test_train.py: it trains once.
pytestmark = pytest.mark.xdist_group("finished_run")

TRAINING_STEPS = list(range(2, TINY_RUN_STEPS + 1, 2))  # a window of --log_every=2 steps each
HELD_OUT_STEPS = [4, 8, 12]  # each checkpoint's


def run_train(args):
  """train.py in a fresh process, with the environment a user has (no log level set)."""
  return run(["train.py", *args], timeout=900, as_user=True)


@pytest.mark.e2e
def test_console_shows_our_lines_only(finished_run):
  _, result = finished_run
  for text in (result.stdout, result.stderr):
    assert not NOISE.search(text), NOISE.search(text)
  # Not a terminal: a progress line each window (every 2 steps) on stdout, no Keras bars.
  progress = [line for line in result.stdout.splitlines() if line.startswith("step ")]
  assert [line.split(" | ")[0] for line in progress] == [
      f"step {s}/12" for s in TRAINING_STEPS]
  assert "Epoch" not in result.stdout and "━" not in result.stdout
  for expected in ("Trained 12 steps", "real tokens/s", "Held out: MLM accuracy", "fill_mask:",
                   "P(IsNext)"):
    assert expected in result.stdout, expected
  # stderr: what is being built, checkpoints and evaluations, one line each, where the time
  # went, and nothing else.
  lines = result.stderr.splitlines()
  split = lines.pop(-3)  # where the time went
  assert [re.sub(r"[/:].*", "", line) for line in lines] == [
      "Vocabulary ", "Learning a 8000-token WordPiece vocabulary from 0.4 MB of 4 files",
      "Wrote 3437 tokens to ",
      *[line for step in HELD_OUT_STEPS
        for line in (f"checkpoint at step {step}", f"held-out at step {step}")],
      "Writing the serving SavedModel to ", "verified"]
  assert split.startswith("Wall time "), split
  for kind in ("training", "start-up", "checkpoints", "held-out evaluations", "other"):
    assert re.search(f"[:,] {kind} \\d+% \\(", split), (kind, split)


def history(model_dir) -> list:
  with open(os.path.join(model_dir, "history.jsonl")) as f:
    return [json.loads(line) for line in f]


def event_steps(directory) -> dict:
  """{tag: [step, ...]} over every event file in a TensorBoard run directory, as any reader of
  the files sees them (duplicates included)."""
  import tensorflow as tf
  steps = {}
  for name in sorted(os.listdir(directory)):
    for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
      for value in event.summary.value:
        steps.setdefault(value.tag, []).append(event.step)
  return steps


@pytest.mark.e2e
def test_evaluations_reach_every_output(finished_run):
  model_dir, _ = finished_run
  held_out = [r for r in history(model_dir) if "eval_loss" in r]
  assert [r["step"] for r in held_out] == HELD_OUT_STEPS
  metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
  # The final figures are the last evaluation's: the same batches, the same weights.
  for name in ("eval_loss", "eval_mlm_loss", "eval_nsp_loss", "eval_mlm_accuracy",
               "eval_nsp_accuracy"):
    assert metrics[name] == pytest.approx(held_out[-1][name], rel=1e-6), name
  assert os.path.getsize(os.path.join(model_dir, "curves.png")) > 10_000


@pytest.mark.e2e
def test_tensorboard_draws_by_global_step(finished_run):
  model_dir, _ = finished_run
  training = event_steps(os.path.join(model_dir, "logs", "train"))
  assert set(training) == {"loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy",
                           "gradient_norm", "learning_rate", "examples_per_second",
                           "tokens_per_second", "padding_share"}
  assert all(steps == TRAINING_STEPS for steps in training.values()), training
  held_out = event_steps(os.path.join(model_dir, "logs", "eval"))
  assert set(held_out) == {"loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy"}
  assert all(steps == HELD_OUT_STEPS for steps in held_out.values()), held_out
  # history.jsonl holds the same windows (curves.png is drawn from it).
  records = [r for r in history(model_dir) if "loss" in r]
  assert [r["step"] for r in records] == TRAINING_STEPS
  assert all(0 <= r["padding_share"] < 1 and r["gradient_norm"] > 0 for r in records)


def parameter_count(model_dir) -> int:
  from bert_tf.model.bert_config import BertConfig
  from bert_tf.model.pretraining import pretraining_model
  model = pretraining_model(BertConfig.from_json_file(os.path.join(model_dir,
                                                                   "bert_config.json")))
  return model.count_params()


@pytest.mark.e2e
def test_artifacts_hold_the_model_only(finished_run):
  model_dir, _ = finished_run
  model_bytes = 4 * parameter_count(model_dir)  # float32
  export = os.path.join(model_dir, "export", "variables")
  export_bytes = sum(os.path.getsize(os.path.join(export, name)) for name in os.listdir(export))
  weights_bytes = os.path.getsize(os.path.join(model_dir, "model.weights.h5"))
  # Within 5% of the model (with Adam's slots they would be 3 times it); HDF5's own overhead
  # is 3% of this tiny model.
  assert export_bytes == pytest.approx(model_bytes, rel=0.05), (export_bytes, model_bytes)
  assert weights_bytes == pytest.approx(model_bytes, rel=0.05), (weights_bytes, model_bytes)
  with h5py.File(os.path.join(model_dir, "model.weights.h5")) as f:
    assert "optimizer" not in f
  # The checkpoints keep the optimizer: resuming needs it (about 3 times the model).
  checkpoints = os.path.join(model_dir, "checkpoints")
  latest = max((n for n in os.listdir(checkpoints) if n.endswith(".index")),
               key=lambda n: int(n.split("-")[1].split(".")[0]))
  checkpoint_bytes = sum(os.path.getsize(os.path.join(checkpoints, n))
                         for n in os.listdir(checkpoints) if n.startswith(latest[:-6] + "."))
  assert checkpoint_bytes > 2.9 * model_bytes


@pytest.mark.e2e
def test_exports_load_the_trained_weights(finished_run):
  import numpy as np
  import tensorflow as tf

  from bert_tf.model.pretraining import pretraining_model
  from bert_tf.serving.trained import load_trained
  model_dir, _ = finished_run
  trained = load_trained(model_dir)  # what python -m bert_tf.export reads
  reference = pretraining_model(trained.config)
  tf.train.Checkpoint(model=reference).restore(
      tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))).expect_partial()
  assert len(trained.model.weights) == len(reference.weights)
  for loaded, trained_weight in zip(trained.model.weights, reference.weights):
    np.testing.assert_array_equal(loaded.numpy(), trained_weight.numpy())


@pytest.mark.e2e
def test_a_mistake_is_one_line_and_debug_brings_the_noise_back(tmp_path):
  """Bad input is one line on stderr and exit status 2, before anything trains; with
  --verbosity=debug, TensorFlow's start-up lines and the traceback come before the line."""
  args = ["--input_files=/nonexistent/*.txt", f"--model_dir={tmp_path}"]
  quiet = run_train(args)
  assert quiet.returncode == 2
  assert quiet.stderr == "error: no file matches '/nonexistent/*.txt'\n"
  assert "Traceback" not in quiet.stderr
  debug = run_train([*args, "--verbosity=debug"])
  assert debug.returncode == 2
  assert debug.stderr.endswith("error: no file matches '/nonexistent/*.txt'\n")
  assert debug.stderr.strip().splitlines()[-1] == "error: no file matches '/nonexistent/*.txt'"
  assert "Traceback (most recent call last)" in debug.stderr
  assert "InitializeLog" in debug.stderr  # oneDNN's notice only on CPUs it optimises for


@pytest.fixture
def resumed(finished_run, copy_of):
  """A copy of the run as if killed after its last window, before its last checkpoint: the
  checkpoint at step 12 is gone, and the same command (in the copy, without the serving
  export) resumes from step 8."""
  import tensorflow as tf
  model_dir = copy_of(finished_run[0])
  before = history(model_dir)
  checkpoints = os.path.join(model_dir, "checkpoints")
  for name in os.listdir(checkpoints):
    if name.startswith("ckpt-12."):
      os.remove(os.path.join(checkpoints, name))
  tf.compat.v1.train.update_checkpoint_state(checkpoints, os.path.join(checkpoints, "ckpt-8"))
  # Forked from the warm Python (the console is test_console_shows_our_lines_only's), with no
  # serving export (the curves are what is tested; the run's own export, other tests').
  result = run(["train.py", f"--flagfile={os.path.join(model_dir, 'flags.txt')}",
                f"--model_dir={model_dir}", "--noserving_export"], timeout=900)
  assert result.returncode == 0, result.stderr[-3000:]
  return model_dir, before, result


@pytest.mark.e2e
def test_a_resumed_run_draws_one_continuous_curve(resumed):
  model_dir, before, result = resumed
  assert "checkpoint at step 12" in result.stderr
  # Each step once in every reader of the event files: the killed run's points after step 8
  # were replaced by the resumed run's.
  assert all(steps == TRAINING_STEPS
             for steps in event_steps(os.path.join(model_dir, "logs", "train")).values())
  assert all(steps == HELD_OUT_STEPS
             for steps in event_steps(os.path.join(model_dir, "logs", "eval")).values())
  after = history(model_dir)
  assert [r["step"] for r in after] == [r["step"] for r in before]
  # Resuming is exact (the same batches, the same dropout): the resumed steps' figures are
  # the killed run's.
  for old, new in zip(before, after):
    for name in ("loss", "mlm_accuracy", "eval_loss"):
      if name in old:
        assert new[name] == pytest.approx(old[name], rel=1e-4), (old["step"], name)


@pytest.mark.e2e
@pytest.mark.parametrize("command", ["vocab", "export"])
def test_every_command_is_quiet(command, finished_run, data_dir, tmp_path):
  """bert_tf.audit's console: test_audit.py. The export is the default format's (test_train.py
  exports the others)."""
  model_dir, _ = finished_run
  args, said = {
      "vocab": ([f"--input_files={data_dir}/pydoc_topics/*.txt",
                 f"--vocab_file={tmp_path}/vocab.txt", "--vocab_size=500"],
                ["Learning a 500-token WordPiece vocabulary from 0.4 MB of 4 files",
                 "Wrote "]),
      "export": ([f"--model_dir={model_dir}", f"--output={tmp_path}/export"],
                 [f"Exporting {model_dir} as savedmodel to {tmp_path}/export"]),
  }[command]
  result = run(["-m", f"bert_tf.{command}", *args], timeout=900, as_user=True)
  assert result.returncode == 0, result.stderr[-3000:]
  assert not NOISE.search(result.stdout + result.stderr), NOISE.search(result.stderr)
  assert [line[:len(expected)] for line, expected in
          zip(result.stderr.splitlines(), said)] == said
  assert len(result.stderr.splitlines()) == len(said), result.stderr
  if command == "export":
    assert os.path.exists(os.path.join(tmp_path, "export", "saved_model.pb"))

"""End to end, what a user watching `python train.py` gets: a quiet console (our lines only),
held-out evaluations while training written to every output, and artifacts the size of the
model (not of the model and Adam's two slots)."""

import json
import os
import re
import subprocess
import sys

import h5py
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["--config=bert_tiny", "--seq_length=64", "--max_predictions_per_seq=10",
        "--global_batch_size=8", "--train_steps=6", "--checkpoint_every=3", "--warmup_steps=2",
        "--eval_steps=2"]

# What the console must not show by default.
NOISE = re.compile(
    r"absl::InitializeLog|oneDNN|TF_ENABLE_ONEDNN_OPTS|cuda|cuInit|cpu_feature_guard"
    r"|shuffle=True|UserWarning|Sharding callback|Assets written|fingerprint"
    r"|signature_serialization|unsupported characters|^[IWE]\d{4} ", re.MULTILINE)


def run_train(args):
  """train.py in a fresh process, with the environment a user has (no log level set)."""
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  return subprocess.run([sys.executable, "train.py", *args], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def run(tmp_path_factory, data_dir):
  """A tiny run that builds its vocabulary first and holds out a fifth of the documents."""
  model_dir = str(tmp_path_factory.mktemp("run"))
  vocab_file = os.path.join(model_dir, "new_vocab.txt")
  result = run_train([f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
                      f"--model_dir={model_dir}", "--eval_fraction=0.2", *TINY])
  assert result.returncode == 0, result.stderr[-3000:]
  return model_dir, result


def test_console_shows_our_lines_only(run):
  _, result = run
  for text in (result.stdout, result.stderr):
    assert not NOISE.search(text), NOISE.search(text)
  # Not a terminal: a progress line every step for 6 steps on stdout, none of Keras's bars.
  progress = [line for line in result.stdout.splitlines() if line.startswith("step ")]
  assert [line.split(" | ")[0] for line in progress] == [f"step {s}/6" for s in range(1, 7)]
  assert "Epoch" not in result.stdout and "━" not in result.stdout
  for expected in ("Trained 6 steps", "Held out: MLM accuracy", "fill_mask:", "P(IsNext)"):
    assert expected in result.stdout, expected
  # stderr: what is being built, checkpoints and evaluations, one line each, and nothing else.
  assert [re.sub(r"[/:].*", "", line) for line in result.stderr.splitlines()] == [
      "Vocabulary ", "Learning a 8000-token WordPiece vocabulary from 0.4 MB of 4 files",
      "Wrote 3437 "
      "tokens to ", "checkpoint at step 3", "held-out at step 3", "checkpoint at step 6",
      "held-out at step 6", "Writing the serving SavedModel to "]


def test_evaluations_reach_every_output(run):
  from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
  model_dir, _ = run
  with open(os.path.join(model_dir, "history.jsonl")) as f:
    held_out = [r for r in map(json.loads, f) if "eval_loss" in r]
  assert [r["step"] for r in held_out] == [3, 6]
  metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
  # The final figures are the last evaluation's: the same batches, the same weights.
  for name in ("eval_loss", "eval_mlm_loss", "eval_nsp_loss", "eval_mlm_accuracy",
               "eval_nsp_accuracy"):
    assert metrics[name] == pytest.approx(held_out[-1][name], rel=1e-6), name
  events = EventAccumulator(os.path.join(model_dir, "logs", "eval"))
  events.Reload()
  assert len(events.Tensors("epoch_mlm_loss")) == 2
  assert os.path.getsize(os.path.join(model_dir, "curves.png")) > 10_000


def parameter_count(model_dir) -> int:
  from bert_tf.config import BertConfig
  from bert_tf.model.pretraining import pretraining_model
  model = pretraining_model(BertConfig.from_json_file(os.path.join(model_dir,
                                                                   "bert_config.json")))
  return model.count_params()


def test_artifacts_hold_the_model_only(run):
  model_dir, _ = run
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


def test_exports_load_the_trained_weights(run):
  import numpy as np
  import tensorflow as tf
  from bert_tf.export.trained import load_trained
  from bert_tf.model.pretraining import pretraining_model
  model_dir, _ = run
  trained = load_trained(model_dir)  # what python -m bert_tf.export reads
  reference = pretraining_model(trained.config)
  tf.train.Checkpoint(model=reference).restore(
      tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))).expect_partial()
  assert len(trained.model.weights) == len(reference.weights)
  for loaded, trained_weight in zip(trained.model.weights, reference.weights):
    np.testing.assert_array_equal(loaded.numpy(), trained_weight.numpy())


def test_a_mistake_is_one_line_and_debug_brings_the_noise_back(tmp_path):
  args = ["--input_files=/nonexistent/*.txt", f"--model_dir={tmp_path}"]
  quiet = run_train(args)
  assert quiet.returncode == 2
  assert quiet.stderr == "error: no file matches '/nonexistent/*.txt'\n"
  debug = run_train([*args, "--verbosity=debug"])
  assert debug.returncode == 2
  assert debug.stderr.endswith("error: no file matches '/nonexistent/*.txt'\n")
  assert "oneDNN" in debug.stderr and "InitializeLog" in debug.stderr

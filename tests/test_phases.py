"""Two-phase pre-training with the configs/small_phase{1,2}.flags recipe (shortened): phase 2
goes on from phase 1's checkpoint at a longer sequence, with the step count, the optimizer and
the learning-rate schedule carried on."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from helpers import run

pytestmark = pytest.mark.e2e

SHORT = ["--train_steps=4", "--decay_steps=8", "--warmup_steps=2", "--checkpoint_every=2",
         "--global_batch_size=8", "--eval_steps=2", "--log_every=1", "--verbose"]


def checkpoint_values(model_dir, step):
  reader = tf.train.load_checkpoint(os.path.join(model_dir, "checkpoints", f"ckpt-{step}"))
  return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
          if name.startswith(("model/", "optimizer/")) and "OBJECT_GRAPH" not in name}


def test_phase_two_goes_on_from_phase_one(tmp_path, data_dir, vocab_file):
  phase1, phase2 = str(tmp_path / "phase1"), str(tmp_path / "phase2")
  common = [f"--data_dir={data_dir}", f"--vocab_file={vocab_file}"]
  result = run(["train.py", "--flagfile=configs/small_phase1.flags", *common,
                f"--model_dir={phase1}", "--seq_length=64", "--max_predictions_per_seq=10",
                *SHORT, "--noserving_export"])  # phase 2 continues it: no SavedModel needed
  assert result.returncode == 0, result.stderr[-3000:]
  assert not os.path.exists(os.path.join(phase1, "export"))
  result = run(["train.py", "--flagfile=configs/small_phase2.flags", *common,
                f"--model_dir={phase2}", f"--init_checkpoint={phase1}", *SHORT,
                "--train_steps=8", "--seq_length=128", "--max_predictions_per_seq=20",
                "--noserving_export"])  # what is tested is in checkpoints/ and the run's files
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Going on from" in result.stderr and "at step 4 of 8" in result.stderr

  # Phase 2 starts from phase 1's last state (weights, moments, step) and trains to step 8.
  start, end = checkpoint_values(phase1, 4), checkpoint_values(phase2, 4)
  assert len(start) > 20 and start.keys() == end.keys()
  for name in start:
    np.testing.assert_array_equal(start[name], end[name], err_msg=name)
  assert json.load(open(os.path.join(phase2, "metrics.json")))["steps"] == 8
  steps = [json.loads(line)["step"] for line in open(os.path.join(phase2, "history.jsonl"))]
  assert steps == [5, 6, 7, 8]
  flags = open(os.path.join(phase2, "flags.txt")).read()
  assert "--seq_length=128" in flags and "--decay_steps=8" in flags


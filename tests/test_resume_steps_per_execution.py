"""Kill -9 and resume with `--steps_per_execution=4` ends with the weights of an uninterrupted
run of one step per execution: the data position, the checkpoints and the step count are all
counted in optimizer updates. Dropout on; tolerance 1e-5 as in test_resume.py."""

import os
import re
import signal
import subprocess
import time

import numpy as np

from test_resume import ENV, ROOT, command, wait_for, weights

FOUR = ["--steps_per_execution=4", "--checkpoint_every=4"]
LONGER = ["--train_steps=12", "--dropout=0.1"]  # 8 steps after the kill: still running


def test_sigkill_then_rerun_with_four_steps_per_execution(tmp_path, data_dir, vocab_file):
  reference_dir = str(tmp_path / "uninterrupted")
  result = subprocess.run(command(reference_dir, data_dir, vocab_file, *LONGER),
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]

  model_dir = str(tmp_path / "run")
  run = command(model_dir, data_dir, vocab_file, *LONGER, *FOUR)
  process = subprocess.Popen(run, cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
  wait_for(os.path.join(model_dir, "checkpoints", "ckpt-4.index"), process)
  state = os.path.join(model_dir, "checkpoints", "checkpoint")
  while "ckpt-4" not in open(state).read():  # the index naming the latest comes last
    assert process.poll() is None, process.stderr.read()[-3000:]
    time.sleep(0.05)
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert not os.path.exists(os.path.join(model_dir, "model.weights.h5"))  # killed mid-run

  result = subprocess.run(run, cwd=ROOT, env=ENV, capture_output=True, text=True,
                          timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(r"Resumed from the checkpoint at step [48] of 12", result.stderr)
  assert "Taking over" in result.stderr  # the killed run's lock
  reference, resumed = weights(reference_dir), weights(model_dir)
  assert sorted(reference) == sorted(resumed)
  for name in reference:
    np.testing.assert_allclose(resumed[name], reference[name], atol=1e-5, err_msg=name)

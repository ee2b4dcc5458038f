"""Kill -9 and resume with `--steps_per_execution=4` ends with the weights of an uninterrupted
run of one step per execution: the data position, the checkpoints and the step count are all
counted in optimizer updates. Dropout on; tolerance 1e-5 as in test_resume.py."""

import os
import re
import signal

import numpy as np

from helpers import resumable_run, run, start, wait_for_checkpoint, weights

FOUR = ["--steps_per_execution=4", "--checkpoint_every=4"]
LONGER = ["--train_steps=12", "--dropout=0.1"]  # 8 steps after the kill: still running


def test_sigkill_then_rerun_with_four_steps_per_execution(tmp_path, data_dir, vocab_file):
  reference_dir = str(tmp_path / "uninterrupted")
  result = run(resumable_run(reference_dir, data_dir, vocab_file, *LONGER))
  assert result.returncode == 0, result.stderr[-3000:]

  model_dir = str(tmp_path / "run")
  args = resumable_run(model_dir, data_dir, vocab_file, *LONGER, *FOUR)
  process = start(args)
  wait_for_checkpoint([model_dir], 4, [process])
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert not os.path.exists(os.path.join(model_dir, "model.weights.h5"))  # killed mid-run

  result = run(args)
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(r"Resumed from the checkpoint at step [48] of 12", result.stderr)
  assert "Taking over" in result.stderr  # the killed run's lock
  reference, resumed = weights(reference_dir), weights(model_dir)
  assert sorted(reference) == sorted(resumed)
  for name in reference:
    np.testing.assert_allclose(resumed[name], reference[name], atol=1e-5, err_msg=name)

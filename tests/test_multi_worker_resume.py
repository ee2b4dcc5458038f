"""Two workers on 127.0.0.1, both killed with -9 mid-run, both re-run: they resume from the same
step and end with the weights of an uninterrupted two-worker run (tolerance 1e-5)."""

import os
import signal
import subprocess

import numpy as np
import pytest

from helpers import TRAIN_AS_WORKER, finish, start_workers, wait_for_checkpoint, weights

pytestmark = pytest.mark.e2e

WORKER = TRAIN_AS_WORKER + r"""
train_as_worker(seq_length=32, max_predictions_per_seq=5, global_batch_size=4, train_steps=8,
                checkpoint_every=2, eval_steps=1, serving_export=False)
"""


def start(model_dir, data_dir, vocab_file):
  return start_workers(WORKER, [data_dir, vocab_file, model_dir], stdout=subprocess.DEVNULL)


def worker_dirs(model_dir):
  return [model_dir, os.path.join(model_dir, "workers", "worker-1")]


def test_two_workers_killed_then_rerun_resume_exactly(tmp_path, data_dir, vocab_file):
  reference_dir = str(tmp_path / "uninterrupted")
  finish(start(reference_dir, data_dir, vocab_file))
  reference = weights(reference_dir)

  model_dir = str(tmp_path / "run")
  workers = start(model_dir, data_dir, vocab_file)
  wait_for_checkpoint(worker_dirs(model_dir), 2, workers)
  for worker in workers:
    worker.send_signal(signal.SIGKILL)
  for worker in workers:
    worker.wait()
  assert not os.path.exists(os.path.join(model_dir, "model.weights.h5"))  # killed mid-run

  outputs = finish(start(model_dir, data_dir, vocab_file))
  for stderr in outputs:
    assert "Resumed from the checkpoint at step" in stderr
  for directory in worker_dirs(model_dir):
    resumed = weights(directory)
    assert sorted(resumed) == sorted(reference)
    for name in reference:
      np.testing.assert_allclose(resumed[name], reference[name], atol=1e-5, err_msg=name)

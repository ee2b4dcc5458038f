"""Two workers on 127.0.0.1, both killed with -9 mid-run, both re-run: they resume from the same
step and end with the weights of an uninterrupted two-worker run (tolerance 1e-5)."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

from test_multi_worker import ROOT, free_ports, weights

WORKER = r"""
import logging, sys
logging.basicConfig(level=logging.INFO)
from bert_tf.training.trainer import TrainConfig, train
data_dir, vocab_file, model_dir = sys.argv[1:4]
train(TrainConfig(
    data_dir=data_dir, vocab_file=vocab_file, model_dir=model_dir, strategy="multi_worker",
    config="bert_tiny", seq_length=32, max_predictions_per_seq=5, global_batch_size=4,
    train_steps=8, checkpoint_every=2, warmup_steps=1, eval_steps=1, verbose=0))
"""


def start_workers(model_dir, data_dir, vocab_file):
  cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
  return [
      subprocess.Popen(
          [sys.executable, "-c", WORKER, data_dir, vocab_file, model_dir], cwd=ROOT,
          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
                   TF_CONFIG=json.dumps({"cluster": cluster,
                                         "task": {"type": "worker", "index": index}})))
      for index in range(2)]


def finish(workers):
  outputs = [worker.communicate(timeout=600)[1] for worker in workers]
  for worker, stderr in zip(workers, outputs):
    assert worker.returncode == 0, stderr[-3000:]
  return outputs


def worker_dirs(model_dir):
  return [model_dir, os.path.join(model_dir, "workers", "worker-1")]


def test_two_workers_killed_then_rerun_resume_exactly(tmp_path, data_dir, vocab_file):
  reference_dir = str(tmp_path / "uninterrupted")
  finish(start_workers(reference_dir, data_dir, vocab_file))
  reference = weights(os.path.join(reference_dir, "model.weights.h5"))

  model_dir = str(tmp_path / "run")
  workers = start_workers(model_dir, data_dir, vocab_file)
  checkpoints = [os.path.join(d, "checkpoints", "ckpt-2.index") for d in worker_dirs(model_dir)]
  start = time.time()
  while not all(os.path.exists(c) for c in checkpoints):
    assert all(w.poll() is None for w in workers), workers[0].stderr.read()[-3000:]
    assert time.time() - start < 300, "no checkpoint at step 2"
    time.sleep(0.05)
  for worker in workers:
    worker.send_signal(signal.SIGKILL)
  for worker in workers:
    worker.wait()
  assert not os.path.exists(os.path.join(model_dir, "model.weights.h5"))  # killed mid-run

  outputs = finish(start_workers(model_dir, data_dir, vocab_file))
  for stderr in outputs:
    assert "Resumed from the checkpoint at step" in stderr
  for directory in worker_dirs(model_dir):
    resumed = weights(os.path.join(directory, "model.weights.h5"))
    assert sorted(resumed) == sorted(reference)
    for name in reference:
      np.testing.assert_allclose(resumed[name], reference[name], atol=1e-5, err_msg=name)

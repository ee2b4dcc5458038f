"""How a two-worker train.py run on 127.0.0.1 (TF_CONFIG) ends when its cluster is wrong, never
forms or loses a worker: one line each, the right exit status, within the bound, and the files
a re-run resumes from left in place (benchmarks/cluster_faults.py times the same faults)."""

import os
import signal
import socket
import subprocess
import time

import pytest

from helpers import (
  NOISE,
  free_ports,
  latest_checkpoint_step,
  resumable_run,
  run,
  start,
  tf_config,
  wait_for_checkpoint,
)

pytestmark = pytest.mark.e2e

LOST_WITHIN = 60  # seconds from a worker's loss until every other worker has stopped
TIMEOUT = 20  # --cluster_timeout of these runs


def worker_command(model_dir, data_dir, vocab_file, *extra):
  return resumable_run(model_dir, data_dir, vocab_file, "--strategy=multi_worker",
                       f"--cluster_timeout={TIMEOUT}", *extra)


def lines(stderr):
  """The lines of `stderr`, but TensorFlow's start-up noise (the quiet level of the tests is not
  a user's)."""
  return [line for line in stderr.splitlines() if line.strip() and not NOISE.search(line)]


def test_a_wrong_or_missing_cluster_is_one_line(tmp_path, data_dir, vocab_file):
  model_dir = str(tmp_path / "run")
  addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
  result = run(worker_command(model_dir, data_dir, vocab_file, "--cluster_timeout=3"),
               TF_CONFIG=tf_config(addresses, 0), CUDA_VISIBLE_DEVICES="")
  assert result.returncode == 1, result.stderr[-3000:]
  assert lines(result.stderr)[-1] == (f"stopped: the cluster did not form within 3 s: worker 1 "
                                      f"({addresses[1]}) never joined; nothing was written")
  assert not os.path.exists(model_dir)

  with socket.create_server(("127.0.0.1", int(addresses[1].rsplit(":", 1)[1]))):
    # worker 1 answers on its port (a worker that went away or hung after that) but never joins
    result = run(worker_command(model_dir, data_dir, vocab_file, "--cluster_timeout=3"),
                 TF_CONFIG=tf_config(addresses, 0), CUDA_VISIBLE_DEVICES="")
  assert result.returncode == 1, result.stderr[-3000:]
  assert lines(result.stderr)[-1] == (f"stopped: the cluster did not form within 3 s: worker 1 "
                                      f"({addresses[1]}) answered on its port but never joined; "
                                      "nothing was written")
  assert not os.path.exists(model_dir)

  for variables, line in (
      (dict(TF_CONFIG="{not json"), "error: TF_CONFIG is not JSON: "),
      (dict(TF_CONFIG=tf_config(addresses, 2)), "error: task index 2 is out of range: "),
      (dict(TF_CONFIG=tf_config(["nowhere.invalid:1", addresses[1]], 1)),
       "error: the address of worker 0, nowhere.invalid:1, does not resolve")):
    result = run(worker_command(model_dir, data_dir, vocab_file), **variables)
    assert result.returncode == 2 and lines(result.stderr)[-1].startswith(line), result.stderr
  result = run(worker_command(model_dir, data_dir, vocab_file, "--cluster=slurm"))
  assert result.returncode == 2
  assert lines(result.stderr) == ["error: --cluster=slurm outside a Slurm allocation (no "
                                  "SLURM_PROCID): launch with srun"]
  assert not os.path.exists(model_dir)


def start_two_workers(model_dir, data_dir, vocab_file):
  """Two workers of a run long enough to be stopped mid-run; their processes and addresses."""
  addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
  workers = [start(worker_command(model_dir, data_dir, vocab_file, "--train_steps=2000",
                                  "--checkpoint_every=2"),
                   stdout=subprocess.DEVNULL, TF_CONFIG=tf_config(addresses, index),
                   CUDA_VISIBLE_DEVICES="")
             for index in range(2)]
  dirs = [model_dir, os.path.join(model_dir, "workers", "worker-1")]
  wait_for_checkpoint(dirs, 2, workers)
  return workers, addresses, dirs


def ends_with_lost_worker(process, within, lost, address):
  """Waits at most `within` seconds for `process` to end; checks it said in one line, without
  a traceback, that worker `lost` at `address` was lost."""
  started = time.monotonic()
  _, stderr = process.communicate(timeout=within + 30)
  assert time.monotonic() - started < within, stderr[-3000:]
  assert process.returncode == 1, stderr[-3000:]
  assert "Traceback" not in stderr and "could not read the input" not in stderr
  assert lines(stderr)[-1].startswith(
      f"stopped: a worker was lost: worker {lost} ({address}) "), stderr[-3000:]


def test_a_worker_killed_mid_run_stops_the_other_saying_so(tmp_path, data_dir, vocab_file):
  model_dir = str(tmp_path / "run")
  (chief, other), addresses, dirs = start_two_workers(model_dir, data_dir, vocab_file)
  other.send_signal(signal.SIGKILL)
  other.wait()
  ends_with_lost_worker(chief, LOST_WITHIN, 1, addresses[1])
  assert min(latest_checkpoint_step(d) for d in dirs) >= 2  # what a re-run resumes from


def test_a_silent_worker_stops_the_other_then_itself(tmp_path, data_dir, vocab_file):
  model_dir = str(tmp_path / "run")
  (chief, other), addresses, dirs = start_two_workers(model_dir, data_dir, vocab_file)
  other.send_signal(signal.SIGSTOP)
  try:
    ends_with_lost_worker(chief, LOST_WITHIN, 1, addresses[1])
  finally:
    other.send_signal(signal.SIGCONT)
  ends_with_lost_worker(other, TIMEOUT, 0, addresses[0])
  assert min(latest_checkpoint_step(d) for d in dirs) >= 2

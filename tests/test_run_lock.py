"""One run per model_dir: a second run is refused in one line, a lock left by a killed run (or a
silent host) is taken over, and the lock goes when the run ends."""

import json
import os
import socket
import subprocess
import time

import pytest
import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.runtime import run_lock
from bert_tf.runtime.run_lock import RunLock
from helpers import run, write_lock


def read_lock(model_dir):
  with tf.io.gfile.GFile(os.path.join(model_dir, run_lock.LOCK_FILE)) as f:
    return json.loads(f.read())


@pytest.fixture
def other_process():
  process = subprocess.Popen(["sleep", "60"])
  yield process.pid
  process.kill()
  process.wait()


@pytest.mark.parametrize("model_dir", ["local", "ram://run_lock_test"])
def test_acquire_writes_who_holds_it_and_release_removes_it(tmp_path, model_dir):
  model_dir = str(tmp_path / model_dir) if "://" not in model_dir else model_dir
  lock = RunLock.acquire(model_dir)
  holder = read_lock(model_dir)
  assert (holder["host"], holder["pid"]) == (socket.gethostname(), os.getpid())
  assert abs(holder["started"] - time.time()) < 60
  assert tf.io.gfile.listdir(model_dir) == [run_lock.LOCK_FILE]  # no temporary left
  lock.release()
  assert not tf.io.gfile.exists(os.path.join(model_dir, run_lock.LOCK_FILE))


def test_a_running_process_keeps_its_lock(tmp_path, other_process):
  model_dir = str(tmp_path / "run")
  write_lock(model_dir, pid=other_process)
  with pytest.raises(UserError) as refused:
    RunLock.acquire(model_dir)
  assert str(refused.value) == (
      f"{model_dir} is in use by process {other_process} on host {socket.gethostname()} since "
      "2023-11-14 22:13:20 UTC: wait for it to end, or use another --model_dir")
  assert read_lock(model_dir)["pid"] == other_process  # untouched


def test_the_lock_of_a_killed_process_is_taken_over(tmp_path, caplog):
  dead = subprocess.Popen(["true"])
  dead.wait()
  model_dir = str(tmp_path / "run")
  write_lock(model_dir, pid=dead.pid)
  lock = RunLock.acquire(model_dir)
  assert read_lock(model_dir)["pid"] == os.getpid()
  assert f"left by process {dead.pid}" in caplog.text
  lock.release()


def test_another_hosts_lock_is_taken_over_once_its_heartbeat_is_stale(tmp_path):
  model_dir = str(tmp_path / "run")
  write_lock(model_dir, host="elsewhere", pid=os.getpid(),
             heartbeat=time.time() - run_lock.STALE_SECONDS + 30)
  with pytest.raises(UserError, match="in use by process .* on host elsewhere"):
    RunLock.acquire(model_dir)
  write_lock(model_dir, host="elsewhere", heartbeat=time.time() - run_lock.STALE_SECONDS - 1)
  RunLock.acquire(model_dir).release()


def test_the_heartbeat_refreshes_the_lock(tmp_path, monkeypatch):
  monkeypatch.setattr(run_lock, "HEARTBEAT_SECONDS", 0.05)
  model_dir = str(tmp_path / "run")
  lock = RunLock.acquire(model_dir)
  first = read_lock(model_dir)["heartbeat"]
  time.sleep(0.5)
  assert read_lock(model_dir)["heartbeat"] > first
  lock.release()


@pytest.mark.e2e
def test_a_second_train_py_on_a_model_dir_in_use_exits_2(tmp_path, other_process, data_dir,
                                                          vocab_file):
  model_dir = str(tmp_path / "run")
  write_lock(model_dir, pid=other_process)
  result = run(["train.py", f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
                f"--model_dir={model_dir}", "--train_steps=2", "--verbose=0"], timeout=300)
  assert result.returncode == 2
  assert "Traceback" not in result.stderr
  assert result.stderr.strip().splitlines()[-1] == (
      f"error: {model_dir} is in use by process {other_process} on host "
      f"{socket.gethostname()} since 2023-11-14 22:13:20 UTC: wait for it to end, or use "
      "another --model_dir")
  assert os.listdir(model_dir) == [run_lock.LOCK_FILE]  # nothing written

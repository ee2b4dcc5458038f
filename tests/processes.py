"""Commands in new processes, started from a warm Python (`warm_python.py`) when the test does
not depend on what a fresh interpreter does before the command runs, else in a fresh one.

`WarmProcess` answers as much of `subprocess.Popen` as the tests use (streams, `pid`, `poll`,
`wait`, `communicate`, signals), for a process that is this test process's child by adoption
(a subreaper adopts its orphaned descendants: the warm Python forks each command twice).
"""

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

TESTS = os.path.dirname(os.path.abspath(__file__))
PR_SET_CHILD_SUBREAPER = 36
# Environment variables a command may read after TensorFlow is imported (the others a test
# sets, such as the locale, act when an interpreter starts: a fresh one runs those).
READ_LATE = {"TF_CONFIG", "CUDA_VISIBLE_DEVICES", "PYTEST_CURRENT_TEST", "SLURM_PROCID",
             "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE",
             "JOB_COMPLETION_INDEX", "HOSTNAME"}


def without_graph_optimisation():
  """Turns off TensorFlow's graph optimiser (Grappler) in this process, before it runs an op:
  what the suite's runs compute is the same (to float32 rounding), and each tf.function's
  first call costs less (test_resume and test_chaos alone on one core: 143 -> 109 s). The
  commands a test starts as a user starts them (`as_user`, `fresh`) keep it, as users do."""
  import tensorflow as tf
  tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})


class WarmProcess:
  """A command forked from the warm Python, with `subprocess.Popen`'s interface."""

  def __init__(self, args, pid, stdout, stderr):
    self.args, self.pid, self.stdout, self.stderr = args, pid, stdout, stderr
    self.returncode = None

  def poll(self):
    if self.returncode is None:
      pid, status = os.waitpid(self.pid, os.WNOHANG)
      if pid:
        self.returncode = os.waitstatus_to_exitcode(status)
    return self.returncode

  def wait(self, timeout=None):
    deadline = None if timeout is None else time.monotonic() + timeout
    while self.poll() is None:
      if deadline is not None and time.monotonic() > deadline:
        raise subprocess.TimeoutExpired(self.args, timeout)
      time.sleep(0.02)
    return self.returncode

  def communicate(self, timeout=None):
    """Both streams read to their end (together, so that neither pipe fills), then the exit."""
    texts = {}

    def read(name, stream):
      texts[name] = stream.read() if stream else None

    readers = [threading.Thread(target=read, args=item, daemon=True)
               for item in (("stdout", self.stdout), ("stderr", self.stderr))]
    for reader in readers:
      reader.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    for reader in readers:
      reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    if any(reader.is_alive() for reader in readers):
      raise subprocess.TimeoutExpired(self.args, timeout)
    self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    return texts["stdout"], texts["stderr"]

  def send_signal(self, number):
    if self.poll() is None:
      os.kill(self.pid, number)

  def terminate(self):
    self.send_signal(signal.SIGTERM)

  def kill(self):
    self.send_signal(signal.SIGKILL)


class WarmPython:
  """The warm Python of this test process, started on first use."""

  def __init__(self, environment):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
      raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    self.environment = environment
    self.connection, theirs = socket.socketpair()
    self.server = subprocess.Popen(
        [sys.executable, os.path.join(TESTS, "warm_python.py"), str(theirs.fileno())],
        pass_fds=[theirs.fileno()], env=environment, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL)
    theirs.close()
    self.lock = threading.Lock()

  def start(self, args, cwd, env, stdout):
    """Forks `python *args` in `cwd` with `env`; stdout to a pipe, `subprocess.DEVNULL` or an
    open file; stderr to a pipe."""
    with open(os.devnull) as null_in, open(os.devnull, "w") as null_out:
      err_read, err_write = os.pipe()
      out_read, out_write, ours = None, None, [err_write]
      if stdout == subprocess.PIPE:
        out_read, out_write = os.pipe()
        ours.append(out_write)
      else:
        out_write = null_out.fileno() if stdout == subprocess.DEVNULL else stdout.fileno()
      request = json.dumps({"args": [str(arg) for arg in args], "cwd": str(cwd),
                            "env": env}).encode()
      with self.lock:
        socket.send_fds(self.connection, [request], [null_in.fileno(), out_write, err_write])
        pid = int(self._answer())
    for fd in ours:  # the command holds its own copies: the pipes end when it does
      os.close(fd)
    stdout_stream = None if out_read is None else os.fdopen(out_read, encoding="utf-8")
    return WarmProcess(args, pid, stdout_stream, os.fdopen(err_read, encoding="utf-8"))

  def _answer(self) -> str:
    answer = b""
    while not answer.endswith(b"\n"):
      chunk = self.connection.recv(64)
      if not chunk:
        raise RuntimeError(f"the warm Python stopped (exit {self.server.wait()})")
      answer += chunk
    return answer.decode().strip()


_warm: WarmPython | None = None


def can_be_warm(env, warm_environment) -> bool:
  """Whether a command with `env` runs the same in the warm Python as in a fresh one: the
  environment the warm Python started with, apart from variables read late."""
  names = (set(env) | set(warm_environment)) - READ_LATE
  return all(env.get(name) == warm_environment.get(name) for name in names)


def popen(args, cwd, env, base_environment, stdout=subprocess.PIPE, fresh=False):
  """`python *args`: forked from the warm Python (started with `base_environment` on first
  use) unless `fresh` or `env` differs from its environment in a variable read at start-up;
  a fresh interpreter otherwise."""
  global _warm
  if not fresh and _warm is None:
    _warm = WarmPython(base_environment)
  if fresh or not can_be_warm(env, _warm.environment):
    return subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, stdout=stdout,
                            stderr=subprocess.PIPE, text=True)
  return _warm.start(args, cwd, env, stdout)

"""One run per model_dir (or fine-tuning's output_dir): a lock file naming the process that
trains there.

`model_dir/run.lock` holds the host, the process id, the start time and a heartbeat that the
running process refreshes every `HEARTBEAT_SECONDS`. A second run on the directory stops at once
with a `UserError` naming the holder. A lock left by a run that was killed is taken over:
- on the same host, when its process no longer exists (or is this very process: one process
  trains one model at a time, so its lock is from an earlier `train` call that failed);
- from another host (a shared or object-store file system), when its heartbeat is older than
  `STALE_SECONDS`: ten missed heartbeats.

Written through `tf.io.gfile` (any file system) as a unique temporary file renamed into place,
then read back: of two runs starting at once, the one whose token is in the file has the lock.
"""

import atexit
import datetime
import json
import logging
import os
import socket
import threading
import time
import uuid

import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.runtime import failures

log = logging.getLogger("bert_tf")

LOCK_FILE = "run.lock"
HEARTBEAT_SECONDS = 60
STALE_SECONDS = 10 * HEARTBEAT_SECONDS


def _process_exists(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:  # another user's process
    return True
  return True


def _read(path: str) -> dict | None:
  try:
    with tf.io.gfile.GFile(path) as f:
      return json.loads(f.read())
  except (tf.errors.NotFoundError, ValueError):  # gone, or caught half-written by a copy
    return None


def _abandoned(holder: dict) -> bool:
  if holder["host"] == socket.gethostname():
    return holder["pid"] == os.getpid() or not _process_exists(holder["pid"])
  return time.time() - holder["heartbeat"] > STALE_SECONDS


def _since(holder: dict) -> str:
  return datetime.datetime.fromtimestamp(holder["started"], datetime.UTC).strftime(
      "%Y-%m-%d %H:%M:%S UTC")


class RunLock:
  """This process's hold on `model_dir`; `acquire` takes it, `release` gives it back. Used as
  `with RunLock.acquire(model_dir):`, the lock is released whatever ends the block (in a
  notebook, an exception must not leave the directory locked for the next call); at exit too.
  """

  def __init__(self, model_dir: str, flag: str = "--model_dir"):
    self.model_dir = model_dir
    self.flag = flag  # the setting that names the directory, for the messages
    self.path = os.path.join(model_dir, LOCK_FILE)
    self.record = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time(),
                   "heartbeat": time.time(), "token": uuid.uuid4().hex}
    self._stop = threading.Event()
    self._heartbeat = None

  @classmethod
  def acquire(cls, model_dir: str, flag: str = "--model_dir") -> "RunLock":
    """Takes `model_dir` for this process, or raises a UserError naming the run using it;
    `flag` is the setting that named the directory."""
    lock = cls(model_dir, flag)
    try:
      tf.io.gfile.makedirs(model_dir)
      holder = _read(lock.path)
    except tf.errors.OpError as e:
      raise lock._not_writable(e) from None
    if holder and not _abandoned(holder):
      raise lock._in_use(holder)
    if holder:
      log.warning("Taking over %s, left by process %d on host %s (started %s)",
                  lock.path, holder["pid"], holder["host"], _since(holder))
    try:
      lock._write()
    except tf.errors.OpError as e:
      raise lock._not_writable(e) from None
    holder = _read(lock.path)
    if not holder or holder["token"] != lock.record["token"]:  # another run won the race
      raise lock._in_use(holder or lock.record)
    lock._heartbeat = threading.Thread(target=lock._beat, daemon=True)
    lock._heartbeat.start()
    atexit.register(lock.release)
    return lock

  def release(self) -> None:
    """Removes the lock file if it is still this run's."""
    self._stop.set()
    if self._heartbeat:
      self._heartbeat.join()
    holder = _read(self.path)
    if holder and holder["token"] == self.record["token"]:
      tf.io.gfile.remove(self.path)
    atexit.unregister(self.release)

  def __enter__(self) -> "RunLock":
    return self

  def __exit__(self, *exception) -> None:
    self.release()

  def _in_use(self, holder: dict) -> UserError:
    return UserError(f"{self.model_dir} is in use by process {holder['pid']} on host "
                     f"{holder['host']} since {_since(holder)}: wait for it to end, or use "
                     f"another {self.flag}")

  def _not_writable(self, error: tf.errors.OpError) -> UserError:
    return UserError(f"{self.flag.removeprefix('--')} {self.model_dir} is not writable: "
                     f"{failures.describe(error)}")

  def _write(self) -> None:
    self.record["heartbeat"] = time.time()
    temporary = f"{self.path}.{self.record['token']}.tmp"
    with tf.io.gfile.GFile(temporary, "w") as f:
      f.write(json.dumps(self.record))
    tf.io.gfile.rename(temporary, self.path, overwrite=True)

  def _beat(self) -> None:
    while not self._stop.wait(HEARTBEAT_SECONDS):
      holder = _read(self.path)
      if holder and holder["token"] != self.record["token"]:
        log.error("%s was taken over by process %d on host %s: this run no longer holds it",
                  self.path, holder["pid"], holder["host"])
        return
      try:
        self._write()
      except tf.errors.OpError as e:  # a file-system hiccup: the next beat tries again
        log.warning("Could not refresh %s: %s", self.path, e)

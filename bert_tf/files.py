"""Writing files so that a crash never leaves a half-written one behind, on any file system.

Everything goes through `tf.io.gfile` (local disks, `gs://`, `ram://`, ...). A file is written
under a temporary name unique to the writer, then renamed into place: processes writing the
same file at once (workers building the same vocabulary) never share a temporary, and the last
rename decides between complete copies. Temporary names start with a dot and never extend the
final name: on file systems that are flat maps of names (`ram://`), `export.tmp` would make
`export` seem to exist.
"""

import json
import os
import uuid

import tensorflow as tf


def _beside(path: str, label: str) -> str:
  """A hidden name next to `path`, `dir/.name.label`."""
  head, tail = os.path.split(path.rstrip("/"))
  return os.path.join(head, f".{tail}.{label}")


def _temporary(path: str) -> str:
  return _beside(path, f"tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _holds_files(directory: str) -> bool:
  """Whether `directory` exists with something in it. Not `tf.io.gfile.exists`: on `ram://`,
  a flat map of file names, that is true of any name that sorts before an existing one."""
  return bool(tf.io.gfile.glob(os.path.join(directory, "*")))


def _remove_directory(directory: str) -> None:
  try:
    tf.io.gfile.rmtree(directory)
  except tf.errors.NotFoundError:  # nothing there (or, on ram://, no entry of its own)
    pass


def _each_file(source: str, target: str, transfer) -> None:
  """Applies `transfer(from, to, overwrite=True)` to every file of the tree `source`, into the
  same place under `target` (directories made as needed)."""
  for directory, _, names in list(tf.io.gfile.walk(source)):
    destination = target + directory[len(source):]
    tf.io.gfile.makedirs(destination)
    for name in names:
      transfer(os.path.join(directory, name), os.path.join(destination, name), overwrite=True)


def copy_directory(source: str, target: str) -> None:
  """Copies the tree `source` to `target` (made if needed), file by file."""
  _each_file(source, target, tf.io.gfile.copy)


def _move_directory(source: str, target: str) -> None:
  """Renames a directory: in one step on a local disk; file by file elsewhere, since not every
  file system renames directories (`ram://` renames only the directory's own entry; object
  stores copy object by object anyway)."""
  if "://" not in source:
    tf.io.gfile.rename(source, target)
    return
  _each_file(source, target, tf.io.gfile.rename)
  _remove_directory(source)


def temporary_directory(final: str) -> str:
  """Where to write a directory before `replace_directory` moves it to `final` (emptied)."""
  temporary = _beside(final, "tmp")
  _remove_directory(temporary)  # left by a crash
  return temporary


def write_bytes(path: str, data: bytes) -> None:
  """Writes `data` through a temporary file renamed into place."""
  temporary = _temporary(path)
  with tf.io.gfile.GFile(temporary, "wb") as f:
    f.write(data)
  tf.io.gfile.rename(temporary, path, overwrite=True)


def write_text(path: str, text: str) -> None:
  """Writes `text` (UTF-8) through a temporary file renamed into place."""
  write_bytes(path, text.encode("utf-8"))


def write_json(path: str, values: dict) -> None:
  """Writes `values` as JSON through a temporary file renamed into place."""
  write_text(path, json.dumps(values, indent=2, sort_keys=True) + "\n")


def copy(source: str, destination: str) -> None:
  """Copies `source` to `destination` through a temporary file renamed into place."""
  with tf.io.gfile.GFile(source, "rb") as f:
    write_bytes(destination, f.read())


def replace_directory(temporary: str, final: str) -> None:
  """Moves a fully written directory to `final`, replacing what was there.

  The old copy is renamed aside to `.final.old` before the new one is renamed in, and deleted
  only then: a crash in between leaves the old copy complete at `.final.old` (and the new one
  at `temporary`); the next replacement cleans up.
  """
  aside = _beside(final, "old")
  _remove_directory(aside)  # left by a crash during an earlier replacement
  if _holds_files(final):
    _move_directory(final, aside)
  _move_directory(temporary, final)
  _remove_directory(aside)

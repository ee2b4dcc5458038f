"""Writing files so that a crash never leaves a half-written one behind."""

import json

import tensorflow as tf


def write_json(path: str, values: dict) -> None:
  """Writes `values` as JSON through a temporary file renamed into place."""
  with tf.io.gfile.GFile(path + ".tmp", "w") as f:
    f.write(json.dumps(values, indent=2, sort_keys=True) + "\n")
  tf.io.gfile.rename(path + ".tmp", path, overwrite=True)


def write_text(path: str, text: str) -> None:
  """Writes `text` through a temporary file renamed into place."""
  with tf.io.gfile.GFile(path + ".tmp", "w") as f:
    f.write(text)
  tf.io.gfile.rename(path + ".tmp", path, overwrite=True)


def replace_directory(temporary: str, final: str) -> None:
  """Moves a fully written directory to `final`, replacing what was there."""
  if tf.io.gfile.exists(final):
    tf.io.gfile.rmtree(final)
  tf.io.gfile.rename(temporary, final)

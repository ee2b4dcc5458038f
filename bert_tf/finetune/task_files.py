"""A task's file read whole as text, any `tf.io.gfile` path; a missing one is a `UserError`."""

import tensorflow as tf

from bert_tf.errors import UserError


def read_text(path: str, flag: str) -> str:
  """The file's text (UTF-8, a byte-order mark dropped, invalid bytes replaced); `flag` names
  the setting that gives the path, for the message when there is none."""
  if not path:
    raise UserError(f"no file given: {flag} is needed")
  if not tf.io.gfile.exists(path):
    raise UserError(f"file not found: {path}")
  if tf.io.gfile.isdir(path):
    raise UserError(f"{path} is a directory: {flag} names a file")
  with tf.io.gfile.GFile(path, "rb") as f:
    return f.read().decode("utf-8-sig", errors="replace")

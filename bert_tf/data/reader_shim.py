"""TEMPORARY: the issue12-reader interface (FileRange, plan_pieces, read_range) with whole
files as pieces, until that branch is merged; then this file goes."""

import typing

import tensorflow as tf

from bert_tf.data import corpus

PIECE_BYTES = 8 * 2**20


class FileRange(typing.NamedTuple):
  path: str
  start: int
  end: int


def plan_pieces(files, piece_bytes=PIECE_BYTES, min_pieces=1) -> list[list[FileRange]]:
  del piece_bytes
  parts = -(-min_pieces // len(files))
  pieces = []
  for path in files:
    content = tf.io.gfile.GFile(path, "rb").read()
    cuts = [0]
    for part in range(1, parts):
      cut = content.find(b"\n\n", max(cuts[-1], len(content) * part // parts))
      if cut >= 0:
        cuts.append(cut + 2)
    cuts.append(len(content))
    pieces.extend([FileRange(path, start, end)] for start, end in zip(cuts, cuts[1:])
                  if end > start)
  return pieces


def read_range(path, start, end, input_format) -> tf.data.Dataset:
  content = tf.strings.substr(tf.io.read_file(path), start, end - start)
  return tf.data.Dataset.from_tensor_slices(corpus.documents_from_text(content, input_format))

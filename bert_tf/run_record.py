"""The record each training checkpoint carries of what it is: the model's shape, the
vocabulary's tokens in order, the run's settings and its corpus's fingerprint.

The same facts are side files of the model_dir (`bert_config.json`, `vocab.txt`,
`train_config.json`, `corpus.json`), which a user may delete or copy apart from
`checkpoints/`. The record, saved inside every checkpoint as one JSON string, is what a re-run
believes when they are gone or disagree with it, so that a model_dir left with its checkpoints
alone can be resumed (the run writes its side files again: the model_dir is its own) and
exported or fine-tuned from (read from the record, nothing written into that model_dir:
`bert_tf/interop/source.py` `RunDirectory`).
"""

import hashlib
import json

import tensorflow as tf

from bert_tf import model_dir
from bert_tf.model_dir import CONFIG_FILE, TRAIN_CONFIG_FILE, VOCAB_FILE

CORPUS_FILE = "corpus.json"  # under model_dir: {path: [size, modification time in ns]}
NAME = "record"  # the record's name in a checkpoint's object graph
_KEY = f"{NAME}/.ATTRIBUTES/json"  # and its tensor's


class Record(tf.__internal__.tracking.Trackable):
  """A JSON string saved with a `tf.train.Checkpoint` (as `record=Record(...)`); it is read
  with `read`, never restored into a model."""

  def __init__(self, values: dict):
    self.text = json.dumps(values, sort_keys=True)

  def _serialize_to_tensors(self):
    return {"json": tf.constant(self.text)}

  def _restore_from_tensors(self, restored_tensors):
    return tf.no_op()


def make(bert_config: dict, tokens: list[str], train_config: dict, corpus: dict) -> dict:
  """The record of a run: what each side file holds, and the vocabulary's size and hash."""
  return {"bert_config": bert_config, "train_config": train_config, "corpus": corpus,
          "vocabulary": {"size": len(tokens), "sha256": tokens_hash(tokens),
                         "tokens": list(tokens)}}


def tokens_hash(tokens: list[str]) -> str:
  """The SHA-256 of the tokens in order, one a line: the same as vocab.txt's bytes."""
  return hashlib.sha256("".join(token + "\n" for token in tokens).encode("utf-8")).hexdigest()


def read(checkpoint: str) -> dict | None:
  """The record of the checkpoint `checkpoint` (a prefix); None when it has none or cannot
  be read."""
  try:
    reader = tf.train.load_checkpoint(checkpoint)
    if not reader.has_tensor(_KEY):
      return None
    value = reader.get_tensor(_KEY)
  except (IndexError, ValueError, tf.errors.OpError):
    return None
  return json.loads(value.decode("utf-8") if isinstance(value, bytes) else value)


def checkpoint_named(path: str) -> str | None:
  """The checkpoint `path` names: a `ckpt-N` prefix itself, else the newest whole one of a
  model_dir or its checkpoints/ (`model_dir.newest_whole`); None without one."""
  if tf.io.gfile.exists(path + ".index"):
    return path
  return model_dir.newest_whole(path)


def latest(path: str) -> tuple[str, dict] | None:
  """(the newest whole checkpoint of `path`, a model_dir or a fine-tune's output_dir, its
  record); None without a recorded one."""
  checkpoint = model_dir.newest_whole(path)
  record = read(checkpoint) if checkpoint else None
  return (checkpoint, record) if record else None


def side_files(record: dict) -> dict[str, str]:
  """The side files' names and texts, as a run writes them, from a record."""
  return {CONFIG_FILE: _json(record["bert_config"]),
          TRAIN_CONFIG_FILE: _json(record["train_config"]),
          CORPUS_FILE: _json(record["corpus"]),
          VOCAB_FILE: "".join(token + "\n" for token in record["vocabulary"]["tokens"])}


def _json(values: dict) -> str:
  return json.dumps(values, indent=2, sort_keys=True) + "\n"


"""The data position of a run: per replica, the stream position of the last example it
trained on, kept in every checkpoint, so that a resumed run (or a rollback) starts each
input pipeline right after it, recomputing at most one piece of the corpus.

Keys are `bert_tf.data.stream_position` keys; they grow along a pipeline's stream, so the
last example a pipeline gave is the largest key of its replicas. Replica r is fed by input
pipeline r // (replicas / pipelines): one pipeline for all local replicas, as
`distribute_datasets_from_function` does under MirroredStrategy, MultiWorkerMirroredStrategy
(one pipeline per worker) and TPUStrategy (one per host). A mixture of corpora
(`mixture.py`) keeps a vector per replica: each group's stream position, and the number of
examples its choices have drawn.

Beside the positions a checkpoint holds their layout (`piece_deal.Layout`: how many input
pipelines made them, and the pieces each carries on after a change of that number), read with
`read_layout`, so that a run of another number of replicas or pipelines can deal the old
pipelines' unread pieces to its own (`piece_deal.py`; a mixture's, group by group) instead of
failing to restore them.
"""

import contextlib

import numpy as np
import tensorflow as tf

from bert_tf.data import piece_deal, stream_position
from bert_tf.data.input_plan import Start, StreamStart
from bert_tf.errors import UserError

NAME, LAYOUT_NAME = "data_position", "data_layout"  # their names in a checkpoint
_LAYOUT_KEY = f"{LAYOUT_NAME}/.ATTRIBUTES/json"


class DataPosition:
  """The variable that holds the positions, and their layout; create it under the strategy's
  scope. A checkpoint saves `saved` (the positions) and `saved_layout`."""

  def __init__(self, num_replicas: int, num_pipelines: int = 1, width: int | None = None):
    """`width`: the length of a mixture's position vector (None: one key a replica)."""
    # -1: nothing consumed yet, so every pipeline starts at stream_position.BEGINNING (0).
    shape = [num_replicas] if width is None else [num_replicas, width]
    self.last_consumed = tf.Variable(
        tf.fill(shape, tf.constant(-1, tf.int64)), trainable=False,
        name="data_position", aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
    self.layout = piece_deal.Layout(num_pipelines)
    self.restored = None  # the positions last restored, of whatever number of replicas
    self.saved = _SavedPositions(self)
    self.saved_layout = _SavedLayout(self)

  def record(self, keys: tf.Tensor) -> None:
    """In a replica's training step: `keys` are its batch's stream positions. Every replica
    gathers every replica's last key, so the variable is the same everywhere."""
    last = tf.reduce_max(keys, axis=0)[None]
    self.last_consumed.assign(tf.distribute.get_replica_context().all_gather(last, axis=0))

  def start(self, num_pipelines: int, pipeline: int) -> int | list[int]:
    """Where input pipeline `pipeline` of `num_pipelines` starts: after its last example (of
    a mixture, after each group's and the choices')."""
    return next_keys(self.last_consumed.numpy(), num_pipelines)[pipeline]

  def reading(self, num_pipelines: int, pipeline: int) -> Start:
    """Where input pipeline `pipeline` of `num_pipelines` starts: after its last example in
    each stream it reads, with the pieces it carries on there (of a mixture, each group's),
    and a mixture's next draw."""
    if num_pipelines != self.layout.pipelines:
      raise UserError(f"{num_pipelines} input pipelines read a data position laid out for "
                      f"{self.layout.pipelines}")
    start = self.start(num_pipelines, pipeline)
    if not isinstance(start, list):
      return Start((self._stream_start(self.layout, start, pipeline),))
    return Start(tuple(self._stream_start(self.layout.group(group), key, pipeline)
                       for group, key in enumerate(start[:-1])), start[-1])

  @staticmethod
  def _stream_start(layout: piece_deal.Layout, key: int, pipeline: int) -> StreamStart:
    return StreamStart(key, layout.carried_by(pipeline) or (), layout.carried_epoch)

  def saved_by_other_pipelines(self, checkpoint: str) -> bool:
    """Whether the checkpoint `checkpoint` was saved by another number of input pipelines
    than this run's (never, for one written before layouts)."""
    layout = read_layout(checkpoint)
    return layout is not None and layout.pipelines != self.layout.pipelines

  def place(self, layout: piece_deal.Layout, first_keys: list) -> None:
    """Lays the position out anew (after another number of pipelines, or in a new stream):
    each pipeline's replicas just before its first key (of a mixture, its first keys)."""
    replicas = self.last_consumed.shape[0]
    per_pipeline = replicas // layout.pipelines
    self.last_consumed.assign(tf.constant(
        np.array([first_keys[r // per_pipeline] for r in range(replicas)]) - 1, tf.int64))
    self.layout = layout

  def start_all_at(self, key: int) -> None:
    """Every input pipeline starts at `key`, carrying no pieces (a new stream); a mixture's
    every group at `key`, its choices at their first."""
    shape = self.last_consumed.shape
    first = [key] * (shape[1] - 1) + [0] if shape.rank == 2 else key
    self.place(piece_deal.Layout(self.layout.pipelines), [first] * self.layout.pipelines)

  @contextlib.contextmanager
  def kept_across_restore(self):
    """Keeps the position across a checkpoint restore: a rollback restores the weights of the
    last good checkpoint but goes on after the batches that made the loss non-finite."""
    consumed = self.last_consumed.numpy()
    yield
    self.last_consumed.assign(consumed)


def next_keys(last: np.ndarray, num_pipelines: int) -> list:
  """The key after each input pipeline's last example, from the replicas' `last` keys (of a
  mixture, the keys after each group's and the choices' last: a list per pipeline)."""
  if len(last) % num_pipelines:
    raise UserError(f"the checkpoint's data position has {len(last)} replicas, which "
                    f"{num_pipelines} input pipelines cannot share")
  per_pipeline = len(last) // num_pipelines
  return [(last[p * per_pipeline:(p + 1) * per_pipeline].max(axis=0) + 1).tolist()
          for p in range(num_pipelines)]


def read_layout(checkpoint: str) -> piece_deal.Layout | None:
  """The layout of the checkpoint `checkpoint`'s data position; None when it has none
  (written before layouts: then by as many pipelines as replicas or one)."""
  # A reader of the prefix itself: `tf.train.load_checkpoint` would take a prefix on a file
  # system where every path is also a directory (ram://) for a directory of checkpoints.
  reader = tf.compat.v1.train.NewCheckpointReader(checkpoint)
  if not reader.has_tensor(_LAYOUT_KEY):
    return None
  value = reader.get_tensor(_LAYOUT_KEY)
  return piece_deal.Layout.from_json(value.decode() if isinstance(value, bytes) else value)


class _SavedPositions(tf.__internal__.tracking.Trackable):
  """The positions in a checkpoint, saved as the variable itself was (so checkpoints written
  before layouts restore alike); restored into the variable when it has as many replicas, and
  kept in `restored` whatever their number."""

  def __init__(self, position: DataPosition):
    self.position = position

  def _serialize_to_tensors(self):
    return {"VARIABLE_VALUE": self.position.last_consumed.read_value()}

  def _restore_from_tensors(self, restored_tensors):
    value = restored_tensors["VARIABLE_VALUE"]
    self.position.restored = value.numpy()
    if value.shape != self.position.last_consumed.shape:
      return tf.no_op()
    return self.position.last_consumed.assign(value)


class _SavedLayout(tf.__internal__.tracking.Trackable):
  """The layout in a checkpoint, one JSON string, read with `read_layout`, never restored."""

  def __init__(self, position: DataPosition):
    self.position = position

  def _serialize_to_tensors(self):
    return {"json": tf.constant(self.position.layout.to_json())}

  def _restore_from_tensors(self, restored_tensors):
    return tf.no_op()


def strip_stream_positions(features: dict, position: DataPosition | None) -> dict:
  """The features without their stream positions, recorded in `position` (if given)."""
  if stream_position.FEATURE not in features:
    return features
  features = dict(features)
  keys = features.pop(stream_position.FEATURE)
  if position is not None:
    position.record(keys)
  return features

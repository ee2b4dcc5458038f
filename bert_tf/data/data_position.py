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
"""

import contextlib

import tensorflow as tf

from bert_tf.data import stream_position
from bert_tf.errors import UserError


class DataPosition:
  """The variable that holds the positions; create it under the strategy's scope."""

  def __init__(self, num_replicas: int, width: int | None = None):
    """`width`: the length of a mixture's position vector (None: one key a replica)."""
    # -1: nothing consumed yet, so every pipeline starts at stream_position.BEGINNING (0).
    shape = [num_replicas] if width is None else [num_replicas, width]
    self.last_consumed = tf.Variable(
        tf.fill(shape, tf.constant(-1, tf.int64)), trainable=False,
        name="data_position", aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)

  def record(self, keys: tf.Tensor) -> None:
    """In a replica's training step: `keys` are its batch's stream positions. Every replica
    gathers every replica's last key, so the variable is the same everywhere."""
    last = tf.reduce_max(keys, axis=0)[None]
    self.last_consumed.assign(tf.distribute.get_replica_context().all_gather(last, axis=0))

  def start(self, num_pipelines: int, pipeline: int) -> int | list[int]:
    """Where input pipeline `pipeline` of `num_pipelines` starts: after its last example (of
    a mixture, after each group's and the choices')."""
    last = self.last_consumed.numpy()
    if len(last) % num_pipelines:
      raise UserError(f"the checkpoint's data position has {len(last)} replicas, which "
                      f"{num_pipelines} input pipelines cannot share")
    per_pipeline = len(last) // num_pipelines
    return (last[pipeline * per_pipeline:(pipeline + 1) * per_pipeline].max(axis=0) + 1
            ).tolist()

  @contextlib.contextmanager
  def kept_across_restore(self):
    """Keeps the position across a checkpoint restore: a rollback restores the weights of the
    last good checkpoint but goes on after the batches that made the loss non-finite."""
    consumed = self.last_consumed.numpy()
    yield
    self.last_consumed.assign(consumed)


def strip_stream_positions(features: dict, position: DataPosition | None) -> dict:
  """The features without their stream positions, recorded in `position` (if given)."""
  if stream_position.FEATURE not in features:
    return features
  features = dict(features)
  keys = features.pop(stream_position.FEATURE)
  if position is not None:
    position.record(keys)
  return features

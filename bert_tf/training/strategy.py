"""The `tf.distribute` strategy named by `--strategy`, and input sharded for it."""

import tensorflow as tf

from bert_tf.errors import UserError

STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")


def create_strategy(name: str, tpu: str = "") -> tf.distribute.Strategy:
  if name == "default":
    return tf.distribute.get_strategy()
  if name == "mirrored":
    return tf.distribute.MirroredStrategy()
  if name == "multi_worker":
    return tf.distribute.MultiWorkerMirroredStrategy()
  if name == "tpu":
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  raise UserError(f"unknown strategy {name!r}: use one of {', '.join(STRATEGIES)}")


def per_replica_batch_size(strategy: tf.distribute.Strategy, global_batch_size: int) -> int:
  replicas = strategy.num_replicas_in_sync
  if global_batch_size % replicas:
    raise UserError(
        f"global_batch_size {global_batch_size} is not divisible by the {replicas} replicas")
  return global_batch_size // replicas


def distribute(strategy: tf.distribute.Strategy, make_dataset, global_batch_size: int):
  """The training input for `strategy`: each input pipeline reads its own shard.

  `make_dataset(batch_size, num_shards, shard_index, batches_per_step)` builds one pipeline's
  dataset; each training step takes `batches_per_step` batches from it (one per local
  replica).
  """
  batch_size = per_replica_batch_size(strategy, global_batch_size)
  if strategy.num_replicas_in_sync == 1:
    return make_dataset(batch_size, 1, 0, 1)
  return strategy.distribute_datasets_from_function(
      lambda context: make_dataset(
          context.get_per_replica_batch_size(global_batch_size),
          context.num_input_pipelines, context.input_pipeline_id,
          context.num_replicas_in_sync // context.num_input_pipelines))

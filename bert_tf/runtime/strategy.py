"""The `tf.distribute` strategy named by `--strategy`, and input sharded for it."""

import functools
import logging
import os

import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.runtime import cluster
from bert_tf.runtime.runtime_settings import STRATEGIES, ClusterConfig

log = logging.getLogger("bert_tf")

DEFAULT_CLUSTER = ClusterConfig()  # TF_CONFIG's cluster, if any


@functools.cache
def create_strategy(name: str, tpu: str = "",
                    cluster_config: ClusterConfig = DEFAULT_CLUSTER) -> tf.distribute.Strategy:
  """The strategy `name` (`new_strategy`), made once per process and reused by every run in
  it (a sweep's runs, the probe's): a second `MirroredStrategy` of the same devices numbers its
  collective ops as the first did, and TensorFlow, which remembers the first's shapes under
  those numbers, fails the second run with a shape mismatch; a TPU system and a cluster's
  collectives are set up once per process, too (the cluster is formed once)."""
  return new_strategy(name, tpu, cluster_config)


def new_strategy(name: str, tpu: str = "",
                 cluster_config: ClusterConfig = DEFAULT_CLUSTER) -> tf.distribute.Strategy:
  """A new strategy of the kind `name` (`--strategy`), on this machine's devices (`tpu`: the
  TPU's address); `multi_worker`'s with the cluster `cluster_config` describes, once it
  formed (`cluster.join`)."""
  if name == "default":
    return tf.distribute.get_strategy()
  if name == "mirrored":
    return tf.distribute.MirroredStrategy()
  if name == "multi_worker":
    resolver = cluster.join(cluster_config)
    with cluster.registered(resolver, cluster_config.cluster_timeout):
      return tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
  if name == "tpu":
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    return tf.distribute.TPUStrategy(resolver)
  raise UserError(f"unknown strategy {name!r}: use one of {', '.join(STRATEGIES)}")


def is_chief(resolver) -> bool:
  """Whether this process writes the user's `model_dir`: the chief, worker 0 of a cluster
  without one, or a process outside any cluster (`resolver` None or without a task)."""
  if resolver is None or resolver.task_type in ("chief", None):
    return True
  return (resolver.task_type == "worker" and resolver.task_id == 0
          and "chief" not in resolver.cluster_spec().as_dict())


def worker_model_dir(strategy: tf.distribute.Strategy, model_dir: str) -> str:
  """Where this worker writes: `model_dir` on the chief, and its own subdirectory on the
  others, so that workers sharing a file system never write the same files (every worker
  saves, as collective training requires; only the chief's copy is the user's)."""
  resolver = getattr(strategy, "cluster_resolver", None)
  if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or is_chief(resolver):
    return model_dir
  return os.path.join(model_dir, "workers", f"{resolver.task_type}-{resolver.task_id}")


def check_batch_size(strategy: tf.distribute.Strategy, global_batch_size: int,
                     accumulation_steps: int = 1) -> None:
  """Rejects a global batch that the replicas, each splitting its share into
  `accumulation_steps` parts, cannot share equally."""
  replicas = strategy.num_replicas_in_sync
  if global_batch_size % (replicas * accumulation_steps):
    raise UserError(
        f"global_batch_size {global_batch_size} is not divisible by the {replicas} replicas"
        + (f" times {accumulation_steps} accumulation steps" if accumulation_steps > 1 else ""))


def per_replica_batch_size(strategy: tf.distribute.Strategy, global_batch_size: int) -> int:
  """Examples each replica takes per optimizer update (then split into accumulated parts)."""
  check_batch_size(strategy, global_batch_size)
  return global_batch_size // strategy.num_replicas_in_sync


def distribute(strategy: tf.distribute.Strategy, make_dataset, global_batch_size: int):
  """The training input for `strategy`: each input pipeline reads its own shard.

  `make_dataset(batch_size, num_shards, shard_index)` builds one pipeline's dataset; each
  training step takes one batch from it per local replica.
  """
  batch_size = per_replica_batch_size(strategy, global_batch_size)
  if strategy.num_replicas_in_sync == 1:
    return make_dataset(batch_size, 1, 0)

  def pipeline(context: tf.distribute.InputContext) -> tf.data.Dataset:
    log.info("Input pipeline %d of %d, %d examples per replica", context.input_pipeline_id,
             context.num_input_pipelines, batch_size)
    return make_dataset(batch_size, context.num_input_pipelines, context.input_pipeline_id)

  return strategy.distribute_datasets_from_function(pipeline)

"""The preamble every run goes through, pre-training's and fine-tuning's alike.

First the strategy (`create`): a multi-worker strategy must exist before any other TensorFlow
op. Then, once the run's inputs are checked, its models are built inside `building_models`:
the global batch checked against the replicas, the seed set (Keras draws the initial weights
and the dropout seeds from it), and the strategy's scope and the precision policy entered.
"""

import contextlib
import dataclasses

import keras
import tensorflow as tf

from bert_tf.runtime import precision
from bert_tf.runtime import strategy as strategy_lib
from bert_tf.runtime.runtime_settings import ClusterConfig, ExecutionConfig


def create(config: ExecutionConfig) -> tf.distribute.Strategy:
  """The strategy `--strategy` names (of the cluster `--cluster` describes, once it formed);
  call it before any other TensorFlow op. A strategy that contradicts `--cluster` is refused
  first, before anything is written."""
  ExecutionConfig.check(config)
  cluster_config = ClusterConfig(**{field.name: getattr(config, field.name)
                                    for field in dataclasses.fields(ClusterConfig)})
  return strategy_lib.create_strategy(config.strategy, config.tpu, cluster_config)


@contextlib.contextmanager
def building_models(strategy: tf.distribute.Strategy, config: ExecutionConfig, *,
                    global_batch_size: int, accumulation_steps: int = 1):
  """The block where a run builds its models: under `strategy`'s scope and the precision
  policy, after the batch is checked and the seed set."""
  strategy_lib.check_batch_size(strategy, global_batch_size, accumulation_steps)
  keras.utils.set_random_seed(config.seed)
  with strategy.scope(), precision.policy(config.mixed_precision):
    yield

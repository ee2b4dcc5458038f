import pytest
import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.runtime.strategy import create_strategy, is_chief, per_replica_batch_size


class TwoReplicas:
  num_replicas_in_sync = 2


def test_global_batch_must_divide_among_replicas():
  assert per_replica_batch_size(TwoReplicas(), 32) == 16
  with pytest.raises(UserError, match="global_batch_size 33 is not divisible by the 2"):
    per_replica_batch_size(TwoReplicas(), 33)


def test_a_process_makes_each_strategy_once():
  """Every run in a process (a sweep's) gets the same strategy: a second MirroredStrategy of
  the same devices would clash with the first's collective ops."""
  assert create_strategy("mirrored") is create_strategy("mirrored")
  assert create_strategy("default") is tf.distribute.get_strategy()


def test_unknown_strategy_is_a_user_error():
  with pytest.raises(UserError, match="unknown strategy 'gpus'"):
    create_strategy("gpus")


def test_the_chief_is_the_one_process_that_writes_model_dir():
  def process(task_type, task_id, cluster):
    return tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id)

  workers = {"worker": ["a:1", "b:1"]}
  with_chief = {"chief": ["c:1"], "worker": ["a:1", "b:1"]}
  assert is_chief(None) and is_chief(tf.distribute.cluster_resolver.TFConfigClusterResolver())
  assert is_chief(process("worker", 0, workers)) and not is_chief(process("worker", 1, workers))
  assert is_chief(process("chief", 0, with_chief))
  assert not is_chief(process("worker", 0, with_chief))


import pytest

from bert_tf.errors import UserError
from bert_tf.training.strategy import create_strategy, per_replica_batch_size


def test_global_batch_must_divide_among_replicas():
  class TwoReplicas:
    num_replicas_in_sync = 2

  assert per_replica_batch_size(TwoReplicas(), 32) == 16
  with pytest.raises(UserError, match="global_batch_size 33 is not divisible by the 2"):
    per_replica_batch_size(TwoReplicas(), 33)


def test_unknown_strategy_is_a_user_error():
  with pytest.raises(UserError, match="unknown strategy 'gpus'"):
    create_strategy("gpus")

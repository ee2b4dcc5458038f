"""`TrainConfig.check`: settings that could only fail or train wrongly are one line, before any
file is read; each group's own fields and the checks across groups."""

import pytest

from bert_tf.errors import UserError
from bert_tf.training.train_settings import TrainConfig


@pytest.mark.parametrize("changes, message", [
    (dict(train_steps=0), "must be positive"),
    (dict(checkpoint_every=0), "must be positive"),
    (dict(decay_steps=10, train_steps=20), "decay_steps 10 is before train_steps 20"),
    (dict(dropout=1.0), r"dropout 1.0 is not in \[0, 1\)"),
    (dict(mixed_precision="fp8"), "unknown mixed_precision 'fp8'"),
    (dict(on_nan="retry"), "unknown on_nan 'retry': use one of stop, rollback"),
    (dict(seq_length=4), "seq_length 4 is too short"),
    (dict(steps_per_execution=3, checkpoint_every=10), "steps_per_execution"),
    (dict(eval_files="x", eval_fraction=0.1), "not both"),
    (dict(eval_fraction=1.0), r"eval_fraction 1.0 is not in \[0, 1\)"),
    (dict(eval_fraction=0.1, eval_every=250), "not a multiple of checkpoint_every 500"),
    (dict(eval_every=500), "needs held-out data"),
    (dict(probe_train_file="builtin"), "give both --probe_train_file and --probe_dev_file"),
    (dict(probe_train_file="builtin", probe_dev_file="builtin", probe_steps=0),
     "probe_steps 0 must be positive"),
    (dict(probe_train_file="builtin", probe_dev_file="builtin", probe_task="ner"),
     "unknown probe_task 'ner': use one of '', classify, regress, tag, answer"),
])
def test_settings_that_could_only_fail_are_one_line(changes, message):
  with pytest.raises(UserError, match=message):
    TrainConfig(**changes).check()


def test_steps_per_execution_must_divide_the_intervals():
  TrainConfig(steps_per_execution=4, checkpoint_every=100, train_steps=1000).check()
  with pytest.raises(UserError, match="checkpoint_every 10 is not a multiple of "
                     "steps_per_execution 4"):
    TrainConfig(steps_per_execution=4, checkpoint_every=10, train_steps=1000).check()
  with pytest.raises(UserError, match="train_steps 1002 is not a multiple"):
    TrainConfig(steps_per_execution=4, checkpoint_every=100, train_steps=1002).check()
  with pytest.raises(UserError, match="must be positive"):
    TrainConfig(steps_per_execution=0, checkpoint_every=100, train_steps=1000).check()

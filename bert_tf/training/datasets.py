"""The run's input plans (`bert_tf.data.input_plan`), made once from the run's settings after
preparation, and its three streams of pre-training batches, read from them
(`readers.batches`): the training stream (sharded over input pipelines, resumable), the
held-out batches (--eval_files, or the --eval_fraction documents or records) and the fresh
batches the final figures are measured on. The training corpus's groups (--input_weights) are
mixed in all three but --eval_files, which is one corpus."""

import tensorflow as tf

from bert_tf.data import input_plan, readers
from bert_tf.data.holdout import Holdout
from bert_tf.data.input_plan import Batching, InputPipeline
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.runtime import strategy as strategy_lib
from bert_tf.training.train_settings import TrainConfig


class RunInputs:
  """The plans of a run: `training` (its files listed once, the training side of
  --eval_fraction), `held_out` (None without held-out data) and `measured`. Every stream is
  endless and of the global batch size (the training stream's shared by its replicas)."""

  def __init__(self, config: TrainConfig, vocabulary: Vocabulary):
    split = config.eval_fraction
    kept = Holdout(split, held_out=False) if split else None
    self.training = input_plan.from_settings(config, vocabulary, holdout=kept,
                                             batching=Batching(config.global_batch_size))
    self.measured = self.training.replace(seed=config.seed + 1)
    held_out = Holdout(split, held_out=True) if split else None
    self.held_out = (
        input_plan.from_settings(config, vocabulary, config.eval_files, holdout=held_out,
                                 batching=self.training.batching) if config.eval_files else
        self.training.replace(holdout=held_out) if split else None)

  def position_width(self) -> int | None:
    """The length of the training stream's position vector: a mixture's groups and its
    choices (`mixture.py`); None for one key."""
    weights = self.training.weights
    return None if weights is None else len(weights) + 1

  def training_stream(self, strategy, data_position):
    """The distributed training batches; each input pipeline starts right after the last
    example it gave before (`data_position`, with the pieces it carries on from another
    number of pipelines), with each example's stream position."""
    plan = self.training.batched(with_positions=True)
    return strategy_lib.distribute(
        strategy,
        lambda batch_size, num_shards, shard_index: readers.batches(
            plan.batched(batch_size=batch_size),
            InputPipeline(num_shards, shard_index,
                          data_position.reading(num_shards, shard_index))),
        plan.batching.batch_size)

  def held_out_batches(self) -> tf.data.Dataset:
    """The held-out batches, the same on each call. Files listed at the start of the run and
    gone since are an input failure (`NotFoundError`), as a training file's."""
    try:
      return readers.batches(self.held_out)
    except UserError as e:
      raise tf.errors.NotFoundError(None, None, str(e)) from None

  def measured_batches(self) -> tf.data.Dataset:
    """Fresh batches of the training corpus (new pairs and masks: another seed) for the final
    figures, so that they are the same whether a run trained or found its training done."""
    return readers.batches(self.measured)


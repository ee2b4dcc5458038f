"""The run's three streams of pre-training batches, made from the run's settings by
`pretraining_dataset` from text or by `records_dataset` from original BERT's records
(--input_format=tfrecord): the training stream (sharded over input pipelines, resumable), the
held-out batches (--eval_files, or the --eval_fraction documents or records) and the fresh
batches the final figures are measured on. The training corpus's groups (--input_weights) are
mixed in all three but --eval_files, which is one corpus."""

import tensorflow as tf

from bert_tf.data.data_settings import RECORDS, pipeline_options, records_options
from bert_tf.data.holdout import Holdout
from bert_tf.data.pipeline import pretraining_dataset
from bert_tf.data.record_dataset import records_dataset
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.runtime import strategy as strategy_lib
from bert_tf.training.train_settings import TrainConfig


def batches(config: TrainConfig, vocabulary: Vocabulary, file_patterns: str, *,
            batch_size: int, seed: int, held_out: bool = False, **options) -> tf.data.Dataset:
  """An endless stream of `file_patterns`' batches (the training corpus's mixed by
  --input_weights). With --eval_fraction, of the held-out documents or records (`held_out`)
  or of all the others, in each group."""
  split = Holdout(config.eval_fraction, held_out) if config.eval_fraction else None
  if config.input_format == RECORDS:
    return records_dataset(file_patterns, vocabulary, batch_size=batch_size, seed=seed,
                           repeat=True, holdout=split, **options, **records_options(config))
  weights = config.weights() if file_patterns == config.input_files else None
  return pretraining_dataset(
      file_patterns, vocabulary, batch_size=batch_size, seed=seed, repeat=True,
      data_dir=config.data_dir, holdout=split, weights=weights, **options,
      **pipeline_options(config))


def position_width(config: TrainConfig) -> int | None:
  """The length of the training stream's position vector: a mixture's groups and its
  choices (`mixture.py`); None for one key."""
  weights = config.weights()
  return None if weights is None else len(weights) + 1


def training_stream(config: TrainConfig, vocabulary: Vocabulary, strategy, data_position):
  """The distributed training batches; each input pipeline starts right after the last
  example it gave before (`data_position`, with the pieces it carries on from another number
  of pipelines), with each example's stream position."""
  return strategy_lib.distribute(
      strategy,
      lambda batch_size, num_shards, shard_index: batches(
          config, vocabulary, config.input_files, batch_size=batch_size, seed=config.seed,
          num_shards=num_shards, shard_index=shard_index,
          **data_position.reading(num_shards, shard_index), with_positions=True),
      config.global_batch_size)


def has_held_out(config: TrainConfig) -> bool:
  return bool(config.eval_files or config.eval_fraction)


def held_out_batches(config: TrainConfig, vocabulary: Vocabulary) -> tf.data.Dataset:
  """The held-out batches (`has_held_out`), the same on each call. Files listed at the start
  of the run and gone since are an input failure (`NotFoundError`), as a training file's."""
  try:
    return batches(config, vocabulary, config.eval_files or config.input_files,
                   batch_size=config.global_batch_size, seed=config.seed, held_out=True)
  except UserError as e:
    raise tf.errors.NotFoundError(None, None, str(e)) from None


def measured_batches(config: TrainConfig, vocabulary: Vocabulary) -> tf.data.Dataset:
  """Fresh batches of the training corpus (new pairs and masks: another seed) for the final
  figures, so that they are the same whether a run trained or found its training done."""
  return batches(config, vocabulary, config.input_files, batch_size=config.global_batch_size,
                 seed=config.seed + 1)

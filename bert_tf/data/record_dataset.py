"""`records_dataset`: original BERT's pre-training TFRecords to the batches `model.fit` takes,
the same features, labels and weights as `pipeline.pretraining_dataset` (docs/records.md).

Stages: this pipeline's files (or its share of every file's records, when the files are
fewer than the pipelines) in an order drawn from (seed, epoch) -> per file: records in blocks
of `shuffle_block`, each block shuffled, parsed, converted (and with `remask` masked anew),
all from a seed keyed on (seed, epoch, file, block) -> examples -> batches.

So an example depends only on its record position (`record_position.py`), and the stream
starts at any position by skipping records (read, not parsed) within one file.
"""

import tensorflow as tf

from bert_tf.data import corpus, record_checks, record_position, records
from bert_tf.data.holdout import held_out_mask
from bert_tf.data.remasking import Remasker
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError

SHUFFLE_BLOCK = 1000  # records shuffled together within a file (they come shuffled already)


class _Files:
  """This input pipeline's files as tensors: file i goes to pipeline i % num_shards; with
  fewer files than pipelines, every pipeline reads every file and keeps record j of each
  when j % num_shards is its index."""

  def __init__(self, files: list[str], num_shards: int, shard_index: int):
    if len(files) >= num_shards:
      ids = list(range(shard_index, len(files), num_shards))
      self.stride, self.offset = 1, 0
    else:
      ids = list(range(len(files)))
      self.stride, self.offset = num_shards, shard_index
    if len(ids) > record_position.MAX_FILES:
      raise UserError(f"{len(ids)} record files per input pipeline: at most "
                      f"{record_position.MAX_FILES} (use more workers or bigger files)")
    self.count = len(ids)
    self.ids = tf.constant(ids, tf.int64)  # in the whole list: what the randomness is keyed on
    self.paths = tf.constant([files[i] for i in ids])


def records_dataset(file_patterns, vocab_file, *, batch_size: int = 32, seed: int = 0,
                    repeat: bool = True, num_shards: int = 1, shard_index: int = 0,
                    start_position: int = record_position.BEGINNING,
                    with_positions: bool = False, holdout=None, compression: str = "",
                    seq_length: int | None = None, max_predictions_per_seq: int | None = None,
                    shuffle: bool = True, remask: bool = False, shuffle_block: int = SHUFFLE_BLOCK,
                    masked_lm_prob: float = 0.15, mask_token_rate: float = 0.8,
                    random_token_rate: float = 0.1, whole_word_masking: bool = False
                    ) -> tf.data.Dataset:
  """Batches of `(features, labels, sample_weights)` from original BERT's records.

  Args:
    file_patterns: globs or comma list (or a list of them), any `tf.io.gfile` path.
    vocab_file: the vocabulary the records were made with (checked against a sample).
    batch_size, seed, repeat, num_shards, shard_index, with_positions, holdout: as
      `pretraining_dataset`'s (`holdout` keeps or drops a hashed share of the records).
    start_position: the record position (`record_position.py`) of the first example.
    compression: "", "GZIP" or "ZLIB".
    seq_length, max_predictions_per_seq: None to take the records'; else they must agree.
    shuffle: False reads the files in order and each file's records in order.
    remask: mask the records anew (`remasking.py`) with the masking settings that follow.
  """
  files = corpus.list_files(file_patterns)
  vocabulary = vocab_file if isinstance(vocab_file, Vocabulary) else Vocabulary(vocab_file)
  shape = record_checks.check_records(files, vocabulary, compression)
  shape.check_settings(seq_length, max_predictions_per_seq)
  remasker = remask and Remasker(
      vocabulary, max_predictions=shape.max_predictions_per_seq, masked_lm_prob=masked_lm_prob,
      mask_token_rate=mask_token_rate, random_token_rate=random_token_rate,
      whole_word_masking=whole_word_masking)
  mine = _Files(files, num_shards, shard_index)
  first_epoch, first_rank, first_record = record_position.decode(start_position)

  def epoch_files(epoch):
    """(epoch, rank, file) of one epoch's files from the start position on."""
    order = tf.range(mine.count, dtype=tf.int64)
    if shuffle:
      order = tf.random.experimental.stateless_shuffle(
          order, tf.stack([tf.cast(seed, tf.int64), epoch]))
    first = tf.where(epoch == first_epoch, tf.constant(first_rank, tf.int64), 0)
    return tf.data.Dataset.range(first, mine.count).map(lambda rank: (epoch, rank, order[rank]))

  def file_examples(epoch, rank, local):
    """(key, example) of one file, each keyed on (seed, epoch, file, block)."""
    file_seed = tf.random.experimental.stateless_fold_in(
        tf.stack([tf.cast(seed, tf.int64), epoch]), mine.ids[local])
    serialized = tf.data.TFRecordDataset(mine.paths[local], compression).shard(
        mine.stride, mine.offset)
    if holdout:
      serialized = serialized.filter(lambda record: records_held_out(record, holdout))
    first = tf.where((epoch == first_epoch) & (rank == first_rank),
                     tf.constant(first_record, tf.int64), 0)
    first_block = first // shuffle_block

    def block_examples(block, serialized):
      order_seed, mask_seed = tf.unstack(tf.random.experimental.stateless_split(
          tf.random.experimental.stateless_fold_in(file_seed, block), 2))
      if shuffle:
        serialized = tf.gather(serialized, tf.random.experimental.stateless_shuffle(
            tf.range(tf.shape(serialized)[0]), order_seed))
      example = records.parse(serialized, shape)
      if remasker:
        example = remasker(*example, mask_seed)
      keys = record_position.encode(epoch, rank, block * shuffle_block + tf.range(
          tf.shape(serialized, out_type=tf.int64)[0]))
      return keys, *example

    blocks = serialized.skip(first_block * shuffle_block).batch(shuffle_block)
    blocks = blocks.enumerate(first_block)
    examples = blocks.map(block_examples, num_parallel_calls=tf.data.AUTOTUNE,
                          deterministic=True).unbatch()
    return examples.skip(first - first_block * shuffle_block)

  epochs = (tf.data.Dataset.counter(first_epoch) if repeat else
            tf.data.Dataset.range(first_epoch, 1))
  examples = epochs.flat_map(epoch_files).flat_map(file_examples)
  batches = examples.batch(batch_size, drop_remainder=repeat)
  if with_positions:
    batches = batches.map(lambda keys, features, labels, weights: (
        {**features, record_position.FEATURE: keys}, labels, weights))
  else:
    batches = batches.map(lambda keys, *example: example)
  return batches.prefetch(tf.data.AUTOTUNE)


def records_held_out(serialized: tf.Tensor, holdout) -> tf.Tensor:
  """Whether `holdout` keeps a record: its share of records, by a hash of each record."""
  held_out = held_out_mask(serialized, holdout.fraction)
  return held_out if holdout.held_out else tf.logical_not(held_out)

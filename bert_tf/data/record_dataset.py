"""`record_batches`: an input plan's original BERT pre-training TFRecords to the batches
`model.fit` takes, the same features, labels and weights as `pipeline.text_batches`
(docs/records.md); `records_dataset`, its keyword front for a notebook.

An input pipeline reads its files (or its share of every file's records, when the files are
fewer than the pipelines) in one of two orders:

- shuffled (`_Shuffled`, the default): each epoch the files in an order drawn from (seed,
  epoch), one after the other -> per file: records in blocks of `shuffle_block`, each block
  shuffled, parsed, converted (and with `remask` masked anew), all from a seed keyed on (seed,
  epoch, file, block);
- unshuffled (`_Interleaved`): the files interleaved round-robin, the order `bert_tf.prepare`
  deals its records to the files in -> blocks of whole turns (about `shuffle_block` records)
  parsed, converted (and re-masked from a seed keyed on (seed, epoch, block)).

After another number of pipelines (`piece_deal.py`), a pipeline first reads the parts of
files it carries on, one after the other, in its order's way (`_Carried`). Then examples ->
batches (`batching.py`). Either way an example depends only on its record position
(`record_position.py`), and the stream starts at any position by skipping the records (read,
not parsed) before the position's block.
"""

import tensorflow as tf

from bert_tf.data import batching, input_plan, masking, record_checks, record_position, records
from bert_tf.data.holdout import held_out_mask
from bert_tf.data.input_plan import ONE_PIPELINE, InputPipeline, InputPlan
from bert_tf.data.piece_deal import Unread
from bert_tf.data.pipeline import epoch_order, share_of
from bert_tf.data.remasking import Remasker
from bert_tf.errors import UserError


def plan_for(files: list[str], num_shards: int) -> list[tuple[int, int, int]]:
  """The parts of `files` read by `num_shards` input pipelines, as (file index, stride,
  offset): part i goes to pipeline i % num_shards (`pipeline.share_of`). Each file is a part,
  or, with fewer files than pipelines, each file's records j with j % num_shards == s are
  part file * num_shards + s: every pipeline reads its share of every file."""
  if len(files) >= num_shards:
    return [(i, 1, 0) for i in range(len(files))]
  return [(i // num_shards, num_shards, i % num_shards) for i in range(len(files) * num_shards)]


class _Files:
  """Parts of the record files (`plan_for`) as tensors: each one's path, its records' stride
  and offset, and the file's index in the whole list (what its randomness is keyed on)."""

  def __init__(self, files: list[str], parts: list[tuple[int, int, int]]):
    if len(parts) > record_position.MAX_FILES:
      raise UserError(f"{len(parts)} record files per input pipeline: at most "
                      f"{record_position.MAX_FILES} (use more workers or bigger files)")
    self.count = len(parts)
    self.ids = tf.constant([part[0] for part in parts], tf.int64)
    self.paths = tf.constant([files[part[0]] for part in parts])
    self.strides = tf.constant([part[1] for part in parts], tf.int64)
    self.offsets = tf.constant([part[2] for part in parts], tf.int64)

  @classmethod
  def share(cls, files: list[str], num_shards: int, shard_index: int) -> "_Files":
    """This input pipeline's parts (`plan_for`)."""
    plan = plan_for(files, num_shards)
    return cls(files, [plan[i] for i in share_of(len(plan), num_shards, shard_index)])

  @classmethod
  def carried(cls, files: list[str], carried: tuple[Unread, ...]) -> "_Files":
    """The parts a pipeline carries on from another number of pipelines (`piece_deal.py`),
    each from the plan it was dealt from."""
    return cls(files, [plan_for(files, u.plan_pipelines)[u.piece] for u in carried])


class _Reading:
  """What both orders do alike: read a file's share of records, hold out, parse, re-mask."""

  def __init__(self, files: _Files, shape: records.RecordShape, remasker, plan: InputPlan):
    self.files, self.shape, self.remasker = files, shape, remasker
    self.seed, self.holdout, self.compression = plan.seed, plan.holdout, plan.records.compression
    self.shuffle_block = plan.records.shuffle_block

  def file_records(self, files: _Files, local: tf.Tensor) -> tf.data.Dataset:
    """The serialized records of part `local` of `files`."""
    return tf.data.TFRecordDataset(files.paths[local], self.compression).shard(
        files.strides[local], files.offsets[local])

  def epoch_seed(self, epoch: tf.Tensor) -> tf.Tensor:
    return tf.stack([tf.cast(self.seed, tf.int64), epoch])

  def examples(self, serialized: tf.Tensor, mask_seed: tf.Tensor) -> tuple:
    """string [batch] records -> `(features, labels, weights)`, re-masked if asked."""
    example = records.parse(serialized, self.shape)
    if self.remasker:
      example = self.remasker(*example, mask_seed)
    return example


class _Carried:
  """The parts a pipeline carries on from another number of pipelines (`piece_deal.py`),
  read before its own epochs, one after the other, keyed (carried epoch, rank among them,
  record rank in the part), each with the randomness of its own epoch and file."""

  def __init__(self, files: _Files, unread: tuple[Unread, ...], carried_epoch: int):
    self.files, self.carried_epoch = files, carried_epoch
    self.epochs = tf.constant([u.epoch for u in unread], tf.int64)
    self.firsts = tf.constant([u.first_example for u in unread], tf.int64)

  def examples(self, part_examples, start_position: int) -> tf.data.Dataset:
    """(key, example) of the parts from `start_position` (among their keys) on, each read by
    the order's `part_examples(files, local, epoch, key_epoch, rank, first)`."""
    _, start_rank, start_record = record_position.decode(start_position)

    def examples(rank):
      first = tf.where(rank == start_rank, tf.constant(start_record, tf.int64),
                       self.firsts[rank])
      return part_examples(self.files, rank, self.epochs[rank],
                           tf.constant(self.carried_epoch, tf.int64), rank, first)

    return tf.data.Dataset.range(start_rank, self.files.count).flat_map(examples)


class _Shuffled:
  """The shuffled order: key (epoch, file rank, record rank in the file's share)."""

  def __init__(self, reading: _Reading, start_position: int):
    self.reading = reading
    self.first_epoch, self.first_rank, self.first_record = record_position.decode(
        start_position)

  def epoch(self, epoch: tf.Tensor) -> tf.data.Dataset:
    """(key, features, labels, weights) of one epoch from the start position on."""
    return self._files(epoch).flat_map(self._own_file_examples)

  def _files(self, epoch):
    """(epoch, rank, file) of one epoch's files from the start position on."""
    count = self.reading.files.count
    order = epoch_order(self.reading.seed, epoch, count)
    first = tf.where(epoch == self.first_epoch, tf.constant(self.first_rank, tf.int64), 0)
    return tf.data.Dataset.range(first, count).map(lambda rank: (epoch, rank, order[rank]))

  def _own_file_examples(self, epoch, rank, local):
    first = tf.where((epoch == self.first_epoch) & (rank == self.first_rank),
                     tf.constant(self.first_record, tf.int64), 0)
    return self.part_examples(self.reading.files, local, epoch, epoch, rank, first)

  def part_examples(self, files: _Files, local, epoch, key_epoch, rank, first):
    """(key, example) of part `local` of `files` in `epoch` from its record `first` on, each
    keyed on (seed, epoch, file, block), its key of the epoch `key_epoch`."""
    block_size, holdout = self.reading.shuffle_block, self.reading.holdout
    file_seed = tf.random.experimental.stateless_fold_in(
        self.reading.epoch_seed(epoch), files.ids[local])
    serialized = self.reading.file_records(files, local)
    if holdout:
      serialized = serialized.filter(lambda record: records_held_out(record, holdout))
    first_block = first // block_size
    blocks = serialized.skip(first_block * block_size).batch(block_size)
    blocks = blocks.enumerate(first_block)
    examples = blocks.map(
        lambda block, serialized: self._block_examples(key_epoch, rank, file_seed, block,
                                                       serialized),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch()
    return examples.skip(first - first_block * block_size)

  def _block_examples(self, epoch, rank, file_seed, block, serialized):
    """One block of a file's records, shuffled, parsed and (if asked) re-masked."""
    order_seed, mask_seed = tf.unstack(tf.random.experimental.stateless_split(
        tf.random.experimental.stateless_fold_in(file_seed, block), 2))
    serialized = tf.gather(serialized, tf.random.experimental.stateless_shuffle(
        tf.range(tf.shape(serialized)[0]), order_seed))
    keys = record_position.encode(epoch, rank, block * self.reading.shuffle_block + tf.range(
        tf.shape(serialized, out_type=tf.int64)[0]))
    return keys, self.reading.examples(serialized, mask_seed)


class _Interleaved:
  """The unshuffled order: this pipeline's n files interleaved round-robin, record j of file
  f (its rank among them) at position k = j * n + f of every epoch, key (epoch, 0, k). That is
  the order `bert_tf.prepare` dealt its records to the files in (record k to file k % n). The
  positions are parsed in blocks of whole turns (at least `shuffle_block` positions, each
  file's next records); a block keys the re-mask."""

  def __init__(self, reading: _Reading, start_position: int):
    self.reading = reading
    count = reading.files.count
    self.turns = -(-reading.shuffle_block // count)  # per block
    self.block_size = self.turns * count
    self.first_epoch, _, _ = record_position.decode(start_position)
    self.first_key = start_position - record_position.encode(self.first_epoch, 0, 0)

  def epoch(self, epoch: tf.Tensor) -> tf.data.Dataset:
    """(key, features, labels, weights) of one epoch from the start position on."""
    first = tf.where(epoch == self.first_epoch, tf.constant(self.first_key, tf.int64), 0)
    first_block = first // self.block_size
    blocks = self._blocks(first_block).enumerate(first_block)
    # A block with no record is past every file's end (it holds records of each file).
    blocks = blocks.take_while(lambda block, slots: tf.reduce_any(slots[1]))
    return blocks.map(
        lambda block, slots: self._block_examples(epoch, first, block, *slots),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch()

  def _blocks(self, first_block: tf.Tensor) -> tf.data.Dataset:
    """(records, present): each block's positions from `first_block` on, endless, ("",
    False) where a file has ended. Each file skips (reads, does not parse) the records of the
    blocks before; a block is its files' next `turns` records each, dealt out in turn."""
    count, turns = self.reading.files.count, self.turns
    absent = tf.data.Dataset.from_tensors(
        (tf.fill([turns], ""), tf.zeros([turns], tf.bool))).repeat()

    def padded(records):
      missing = turns - tf.shape(records)[0]
      return tf.pad(records, [[0, missing]]), tf.range(turns) < tf.shape(records)[0]

    def file_chunks(local):
      chunks = self.reading.file_records(self.reading.files, local).skip(
          first_block * turns).batch(turns)
      return chunks.map(padded).concatenate(absent)

    chunks = tf.data.Dataset.range(count).interleave(  # sequential: in this order
        file_chunks, cycle_length=count, block_length=1)
    return chunks.batch(count).map(  # [file, turn] -> turn by turn
        lambda records, present: (tf.reshape(tf.transpose(records), [-1]),
                                  tf.reshape(tf.transpose(present), [-1])))

  def part_examples(self, files: _Files, local, epoch, key_epoch, rank, first):
    """(key, example) of part `local` of `files` in `epoch`, its records as written from its
    record `first` on (counted before the holdout, as this order's keys count them), keyed
    (key_epoch, rank, record); re-masked per block of `shuffle_block` records, from a seed
    keyed on (seed, epoch, file, block). How a pipeline reads the parts it carries on."""
    block_size = self.reading.shuffle_block
    file_seed = tf.random.experimental.stateless_fold_in(
        self.reading.epoch_seed(epoch), files.ids[local])
    first_block = first // block_size
    blocks = self.reading.file_records(files, local).skip(first_block * block_size).batch(
        block_size).enumerate(first_block)

    def block_examples(block, serialized):
      records = block * block_size + tf.range(tf.shape(serialized, out_type=tf.int64)[0])
      present = tf.ones_like(records, tf.bool)
      if self.reading.holdout:
        present = records_held_out(serialized, self.reading.holdout)
      example = self.reading.examples(
          tf.boolean_mask(serialized, present),
          tf.random.experimental.stateless_fold_in(file_seed, block))
      keys = tf.boolean_mask(records, present)
      given = keys >= first  # the block's records before `first` are parsed, not given
      return tf.nest.map_structure(lambda values: tf.boolean_mask(values, given), (
          record_position.encode(key_epoch, rank, keys), example))

    return blocks.map(block_examples, num_parallel_calls=tf.data.AUTOTUNE,
                      deterministic=True).unbatch()

  def _block_examples(self, epoch, first, block, serialized, present):
    """One block's records, held out, parsed, (if asked) re-masked, from `first` on."""
    keys = block * self.block_size + tf.range(self.block_size, dtype=tf.int64)
    if self.reading.holdout:
      present &= records_held_out(serialized, self.reading.holdout)
    mask_seed = tf.random.experimental.stateless_fold_in(self.reading.epoch_seed(epoch), block)
    example = self.reading.examples(tf.boolean_mask(serialized, present), mask_seed)
    keys = tf.boolean_mask(keys, present)
    # The block's records before the start position are parsed (the masks of the others
    # depend on them) but not given.
    given = keys >= first
    return tf.nest.map_structure(lambda values: tf.boolean_mask(values, given), (
        record_position.encode(epoch, 0, keys), example))


def record_batches(plan: InputPlan, pipeline: InputPipeline = ONE_PIPELINE
                   ) -> tf.data.Dataset:
  """Batches of `(features, labels, sample_weights)` from the record files of `plan`
  (`plan.records` says how they read), as input pipeline `pipeline` reads them: the parts
  (`plan_for`) it carries on from another number of pipelines first, if any (unshuffled: each
  as written), then its own epochs. The records are checked against the vocabulary (a
  sample), and their shape against the one the settings ask for."""
  reading, files = plan.records, list(plan.files)
  shape = record_checks.check_records(files, plan.vocabulary, reading.compression)
  shape.check_settings(reading.seq_length, reading.max_predictions_per_seq)
  remasker = reading.remask and Remasker(
      plan.vocabulary, masking.Masking.of(plan.examples, shape.max_predictions_per_seq))
  read = _Reading(_Files.share(files, pipeline.num_shards, pipeline.shard_index), shape,
                  remasker, plan)
  start = pipeline.start.stream(0)
  carried = (_Carried(_Files.carried(files, start.carried), start.carried, start.carried_epoch)
             if start.carries(record_position) else None)
  order = (_Shuffled if reading.shuffle else _Interleaved)(
      read, record_position.encode(start.carried_epoch + 1, 0, 0) if carried else
      start.position)
  epochs = (tf.data.Dataset.counter(order.first_epoch) if plan.batching.repeat else
            tf.data.Dataset.range(order.first_epoch, 1))
  examples = epochs.flat_map(order.epoch)
  if carried:
    examples = carried.examples(order.part_examples, start.position).concatenate(examples)
  return batching.batched(examples, plan.batching, keyed=True, packed=plan.examples.packing)


def records_dataset(file_patterns, vocab_file, **options) -> tf.data.Dataset:
  """`record_batches` by keywords, for a notebook (docs/records.md).

  Args:
    file_patterns: globs or comma list (or a list of them), any `tf.io.gfile` path.
    vocab_file: the vocabulary the records were made with (or a `Vocabulary`).
    **options: any field of `input_plan.InputPlan` (seed, holdout: a share of the records by
      a hash of each), `input_plan.Batching` (batch_size, repeat, with_positions),
      `input_plan.InputPipeline` (num_shards, shard_index; start_position: a record position,
      `record_position.py`, or a `Start`), `input_plan.RecordReading` (compression, remask,
      shuffle, shuffle_block, seq_length and max_predictions_per_seq: None to take the
      records') or the masking fields of `PipelineConfig` (for `remask`).
  """
  return record_batches(*input_plan.from_keywords(file_patterns, vocab_file, options,
                                                  records=True))


def records_held_out(serialized: tf.Tensor, holdout) -> tf.Tensor:
  """Whether `holdout` keeps a record (or each of a batch): its share of records, by a hash
  of each record."""
  held_out = held_out_mask(serialized, holdout.fraction)
  return held_out if holdout.held_out else tf.logical_not(held_out)

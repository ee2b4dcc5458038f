"""`text_batches`: an input plan's corpus files to batches that `model.fit` takes
(docs/design.md#pieces); `pretraining_dataset`, its keyword front for a notebook.

Stages, all tf ops:
  files -> pieces of about 8 MiB (this pipeline's share, in an order drawn from the epoch)
  -> per piece: documents streamed -> WordPiece, in blocks (cached on disk if asked) ->
  (block shuffle) -> windows of documents -> NSP pairs -> [CLS] A [SEP] B [SEP] -> masking ->
  (block shuffle) -> examples -> batches (`batching.py`, every reader's last stage).

Reproducibility and seeking: every random choice is a stateless op keyed on `seed`, the
epoch, the piece and the window's index in it, so the same seed gives the same batches bit for
bit, each epoch pairs and masks afresh, and a piece gives the same examples whatever came
before it. That makes the stream seekable: an input pipeline's `Start` (`input_plan.py`, keys
of `stream_position.py`) starts it at any example by recomputing at most one piece. Groups of
files mixed by weight each have such a stream, and `mixture.py` draws the examples from them.
"""

import functools

import tensorflow as tf

from bert_tf.data import batching, corpus, input_plan, masking, mixture, pairing, stream_position
from bert_tf.data import pieces as pieces_lib
from bert_tf.data.data_settings import PipelineConfig
from bert_tf.data.input_plan import ONE_PIPELINE, InputPipeline, InputPlan, StreamStart
from bert_tf.data.piece_deal import Unread
from bert_tf.data.text_pairs import combined_segments
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError


class ExampleBuilder:
  """Turns a window of documents into padded, masked examples (the per-window work). Its two
  functions are traced once per builder, and `example_builder` keeps the builders of a
  process: a second pipeline of the same vocabulary and settings (the held-out one, the final
  figures', a resumed stream's, another seed's) calls them instead of tracing them again."""

  def __init__(self, vocabulary: Vocabulary, config: PipelineConfig):
    self.config = config
    self.vocabulary = vocabulary
    self.tokenizer = vocabulary.tokenizer(config.do_lower_case)
    self.mask_tokens = functools.partial(
        masking.mask_tokens, ids=masking.MaskingIds.of(vocabulary),
        masking=masking.Masking.of(config))
    # Wrapping the bound methods (rather than decorating them, which holds the builder by a
    # weak reference) keeps a builder alive while a call runs, as `TextEncoder.features` does.
    self.tokenize = tf.function(self._tokenize, autograph=False, reduce_retracing=True)
    self.examples = tf.function(self._examples, autograph=False, reduce_retracing=True)

  def _tokenize(self, documents: tf.RaggedTensor) -> tf.RaggedTensor:
    """string [documents, (sentences)] -> int32 token ids [documents, (sentences), (tokens)]:
    the part of the work that is the same every epoch."""
    tokens = self.tokenizer.tokenize(documents.flat_values)  # [sentences, (tokens)]
    return tf.RaggedTensor.from_row_splits(tokens, documents.row_splits)

  def _examples(self, sentence_tokens: tf.RaggedTensor, seed: tf.Tensor):
    """sentence_tokens: a window's documents, `tokenize`d: int32 [documents, (sentences),
    (tokens)]. Returns (features, labels, weights, facts), each with a leading instance
    dimension; `facts` tells how each pair was made (for audits)."""
    pair_seed, mask_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    pairs, segments = self._pairs(sentence_tokens, pair_seed)
    token_ids, segment_ids, lengths = self._sequences(segments)  # [instances, seq], [instances]
    masked = self.mask_tokens(token_ids, lengths, mask_seed)
    padding_mask = tf.range(self.config.seq_length)[None, :] < lengths[:, None]
    features = {
        "token_ids": masked.token_ids,
        "segment_ids": segment_ids,
        "padding_mask": tf.cast(padding_mask, tf.int32),
        "masked_positions": masked.masked_positions,
    }
    labels = {"mlm": masked.masked_ids, "nsp": pairs.is_next}
    # Without NSP (MLM only) the drawn label means nothing: weight 0, so that the NSP head,
    # the pooler and [CLS] get no gradient from it and the NSP loss is 0.
    weights = {"mlm": masked.masked_weights,
               "nsp": tf.fill(tf.shape(pairs.is_next), float(self.config.nsp))}
    pair_facts = {"is_next": pairs.is_next, "document_a": pairs.document_a,
                  "document_b": pairs.document_b, "is_short": pairs.is_short}
    return features, labels, weights, pair_facts

  def _pairs(self, sentence_tokens: tf.RaggedTensor, seed: tf.Tensor):
    """The window's pairs, and their segments' token ids: A, and B with NSP, each int32
    [instances, (tokens)]."""
    pairs = pairing.create_pairs(
        sentence_tokens, seed, seq_length=self.config.seq_length,
        short_seq_prob=self.config.short_seq_prob, nsp=self.config.nsp)
    # create_pairs drops empty sentences; the flat token list is unchanged by that.
    segment_a, segment_b = pairing.gather_segments(sentence_tokens.flat_values, pairs)
    return pairs, [segment_a, segment_b] if self.config.nsp else [segment_a]

  def _sequences(self, segments: list[tf.RaggedTensor]):
    """`[CLS] A [SEP] (B [SEP])` padded to seq_length: int32 token ids and segment ids
    [instances, seq], and the real tokens of each, int32 [instances]."""
    token_ids, segment_ids = combined_segments(
        *segments, cls_id=self.vocabulary.cls_id, sep_id=self.vocabulary.sep_id)
    lengths = tf.cast(token_ids.row_lengths(), tf.int32)
    shape = [None, self.config.seq_length]
    return (token_ids.to_tensor(shape=shape), tf.cast(segment_ids.to_tensor(shape=shape), tf.int32),
            lengths)


@functools.lru_cache(maxsize=8)
def example_builder(vocabulary: Vocabulary, config: PipelineConfig) -> ExampleBuilder:
  """The process's builder for this vocabulary and these settings (see `ExampleBuilder`)."""
  return ExampleBuilder(vocabulary, config)


def _shuffled_blocks(blocks: tf.data.Dataset, seed: tf.Tensor) -> tf.data.Dataset:
  """The elements of `blocks` (batches), each block in an order drawn from (seed, block
  index): a shuffle whose every choice is a stateless op, unlike `Dataset.shuffle`, whose
  order also depends on TensorFlow's global seed."""

  def shuffled(index, block):
    first = tf.nest.flatten(block)[0]
    size = (first.nrows(out_type=tf.int32) if isinstance(first, tf.RaggedTensor) else
            tf.shape(first)[0])
    order = tf.random.experimental.stateless_shuffle(
        tf.range(size), tf.random.experimental.stateless_fold_in(seed, index))
    return tf.nest.map_structure(lambda t: tf.gather(t, order), block)

  return blocks.enumerate().map(shuffled).unbatch()


def _cached(blocks: tf.data.Dataset, path: tf.Tensor) -> tf.data.Dataset:
  """`blocks` (ragged, [documents, (sentences), (tokens)]) cached to the files `path*` the
  first time they are read to their end, and read back from them afterwards (tf.data's file
  cache holds dense tensors: the blocks go as their values and row splits)."""
  parts = blocks.map(lambda block: (block.flat_values, *block.nested_row_splits))
  return parts.cache(path).map(
      lambda values, *splits: tf.RaggedTensor.from_nested_row_splits(values, splits,
                                                                     validate=False))


def plan_for(files: list[str], piece_bytes: int, num_shards: int) -> list:
  """The pieces' plan of a corpus read by `num_shards` input pipelines (`pieces.plan_pieces`:
  a small corpus is cut finer for more pipelines)."""
  plan = pieces_lib.plan_pieces(files, piece_bytes, min_pieces=num_shards)
  if len(plan) < num_shards:
    raise UserError(f"the corpus cannot be shared by {num_shards} input pipelines: it makes "
                    f"only {len(plan)} piece(s) (give more text or fewer workers)")
  return plan


def share_of(plan_size: int, num_shards: int, shard_index: int) -> list[int]:
  """The plan indices of input pipeline `shard_index`'s pieces: piece i goes to pipeline
  i % num_shards, so the shares differ by at most one piece."""
  return list(range(shard_index, plan_size, num_shards))


def epoch_order(seed, epoch, count: int) -> tf.Tensor:
  """The order an input pipeline reads its `count` pieces in `epoch`: a permutation of
  range(count) drawn from (seed, epoch), int64 [count]."""
  return tf.random.experimental.stateless_shuffle(
      tf.range(count, dtype=tf.int64),
      tf.stack([tf.cast(seed, tf.int64), tf.cast(epoch, tf.int64)]))


class _Pieces:
  """Pieces of the corpus as tensors, each with its index in its plan (`ids`, what its
  randomness is keyed on)."""

  def __init__(self, pieces: list[list[pieces_lib.FileRange]], ids: list[int],
               cached: bool = True):
    if len(pieces) > stream_position.MAX_PIECES:
      raise UserError(f"{len(pieces)} pieces per input pipeline: at most "
                      f"{stream_position.MAX_PIECES} (use more workers)")
    self.count = len(pieces)
    # Whether --token_cache may keep them: carried pieces, read once, may be of another plan,
    # whose indices name other bytes.
    self.cached = cached
    self.ids = tf.constant(ids, tf.int64)
    self.paths = tf.ragged.constant([[r.path for r in piece] for piece in pieces], tf.string)
    self.starts = tf.ragged.constant([[r.start for r in piece] for piece in pieces], tf.int64)
    self.ends = tf.ragged.constant([[r.end for r in piece] for piece in pieces], tf.int64)
    self.sizes = tf.ragged.constant([[r.file_size for r in piece] for piece in pieces],
                                    tf.int64)

  @classmethod
  def share(cls, files: list[str], piece_bytes: int, num_shards: int, shard_index: int):
    """This input pipeline's share of the corpus (`share_of`)."""
    plan = plan_for(files, piece_bytes, num_shards)
    ids = share_of(len(plan), num_shards, shard_index)
    return cls([plan[i] for i in ids], ids)

  @classmethod
  def carried(cls, files: list[str], piece_bytes: int, carried: tuple[Unread, ...]):
    """The pieces a pipeline carries on from another number of pipelines (`piece_deal.py`),
    each from the plan it was dealt from."""
    plans = {n: plan_for(files, piece_bytes, n) for n in {u.plan_pipelines for u in carried}}
    return cls([plans[u.plan_pipelines][u.piece] for u in carried], [u.piece for u in carried],
               cached=False)

  def documents(self, local: tf.Tensor, input_format: str) -> tf.data.Dataset:
    """The documents of piece number `local`, in file order."""
    ranges = tf.data.Dataset.from_tensor_slices(
        (self.paths[local], self.starts[local], self.ends[local], self.sizes[local]))
    return ranges.flat_map(lambda path, start, end, size: corpus.read_range(
        path, start, end, size, input_format))


class _Stream:
  """One input pipeline's stream of one group of files from its start on: the pieces it
  carries on from another number of pipelines, if any, then epochs of its own pieces; each
  piece's examples with all their randomness keyed on (seed, epoch, piece), so that they are
  the same whatever came before in the stream, and whichever pipeline reads them. `keyed`:
  each example comes as (stream position, example)."""

  def __init__(self, plan: InputPlan, files: tuple[str, ...], pipeline: InputPipeline,
               start: StreamStart, seed: int, keyed: bool):
    self.config, self.seed, self.with_positions = plan.examples, seed, keyed
    self.build_examples = example_builder(plan.vocabulary, plan.examples)
    self.pieces = _Pieces.share(files, self.config.piece_bytes, pipeline.num_shards,
                                pipeline.shard_index)
    self.holdout, self.token_cache = plan.holdout, plan.token_cache
    self.with_pairs, self.repeat = plan.batching.with_pairs, plan.batching.repeat
    self.first_epoch, self.first_rank, self.first_example = stream_position.decode(
        start.position)
    # Carried pieces are keyed (carried_epoch, rank among them, example rank in the piece).
    self.carried, self.carried_epoch = None, start.carried_epoch
    self.carried_rank = self.carried_example = 0
    if start.carries():
      self.carried = _Pieces.carried(files, self.config.piece_bytes, start.carried)
      self.carried_rank, self.carried_example = self.first_rank, self.first_example
      self.first_epoch, self.first_rank, self.first_example = start.carried_epoch + 1, 0, 0
    self.carried_epochs = tf.constant([u.epoch for u in start.carried] or [0], tf.int64)
    self.carried_firsts = tf.constant([u.first_example for u in start.carried] or [0],
                                      tf.int64)

  def carried_pieces(self) -> tf.data.Dataset | None:
    """The examples of the carried pieces from the start position on; None without any."""
    if self.carried is None:
      return None

    def examples(rank):
      skip = tf.where(rank == self.carried_rank, tf.constant(self.carried_example, tf.int64),
                      self.carried_firsts[rank])
      return self._examples(self.carried, rank, self.carried_epochs[rank],
                            tf.constant(self.carried_epoch, tf.int64), rank, skip)

    return tf.data.Dataset.range(self.carried_rank, self.carried.count).flat_map(
        tf.autograph.experimental.do_not_convert(examples))

  def examples(self) -> tf.data.Dataset:
    """The stream's examples from its start position on: the carried pieces', then endless
    epochs, or one."""
    epochs = (tf.data.Dataset.counter(self.first_epoch) if self.repeat else
              tf.data.Dataset.range(self.first_epoch, 1))
    # The stream's functions are tf ops throughout (loops and branches written as
    # tf.while_loop and tf.cond), so they are traced as they are, and so are the dataset
    # functions made inside them: AutoGraph's conversion would only add about a CPU-second of
    # start-up.
    as_written = tf.autograph.experimental.do_not_convert
    examples = epochs.flat_map(as_written(self.epoch_pieces)).flat_map(
        as_written(self.piece_examples))
    carried = self.carried_pieces()
    return examples if carried is None else carried.concatenate(examples)

  def epoch_pieces(self, epoch: tf.Tensor) -> tf.data.Dataset:
    """(epoch, rank, piece) of one epoch's pieces from the start position on, in an order
    drawn from (seed, epoch)."""
    order = epoch_order(self.seed, epoch, self.pieces.count)
    first = tf.where(epoch == self.first_epoch, tf.constant(self.first_rank, tf.int64), 0)
    return tf.data.Dataset.range(first, self.pieces.count).map(
        lambda rank: (epoch, rank, order[rank]))

  def piece_examples(self, epoch: tf.Tensor, rank: tf.Tensor,
                     local: tf.Tensor) -> tf.data.Dataset:
    """The examples of the piece at `rank` in `epoch` (this pipeline's piece `local`), from
    the start position on."""
    is_first_piece = (epoch == self.first_epoch) & (rank == self.first_rank)
    skip = tf.where(is_first_piece, tf.constant(self.first_example, tf.int64), 0)
    return self._examples(self.pieces, local, epoch, epoch, rank, skip)

  def _examples(self, pieces: _Pieces, local: tf.Tensor, epoch: tf.Tensor,
                key_epoch: tf.Tensor, rank: tf.Tensor, skip: tf.Tensor) -> tf.data.Dataset:
    """The examples of `pieces`' piece `local` in `epoch`, keyed (key_epoch, rank, example
    rank), the first `skip` left out."""
    piece_seed = tf.random.experimental.stateless_fold_in(
        tf.stack([tf.cast(self.seed, tf.int64), epoch]), pieces.ids[local])
    document_seed, example_seed, window_seed = tf.unstack(
        tf.random.experimental.stateless_split(piece_seed, 3))
    windows = self._windows(pieces, local, document_seed)
    examples = windows.map(self._window_examples(key_epoch, rank, window_seed),
                           num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch()
    # Examples of one window come from the same few documents: shuffling spreads them out.
    examples = _shuffled_blocks(examples.batch(self.config.example_shuffle_buffer),
                                example_seed)
    if self.with_positions:
      # Keys in the order examples leave the piece; a piece cannot make more examples than
      # a key counts (stream_position.py), and the bounded range makes sure of it.
      first_key = stream_position.encode(key_epoch, rank, tf.constant(0, tf.int64))
      examples = tf.data.Dataset.zip(tf.data.Dataset.range(
          first_key, first_key + stream_position.MAX_EXAMPLES), examples)
    return examples.skip(skip)

  def _windows(self, pieces: _Pieces, local: tf.Tensor,
               document_seed: tf.Tensor) -> tf.data.Dataset:
    """(index, window) of a piece: windows of `documents_per_window` tokenized documents,
    int32 [documents, (sentences), (tokens)]."""
    documents = pieces.documents(local, self.config.input_format)
    if self.holdout:
      documents = self.holdout(documents)
    blocks = documents.ragged_batch(self.config.document_shuffle_buffer).map(
        self.build_examples.tokenize, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if self.token_cache and pieces.cached:
      blocks = _cached(blocks, tf.strings.join(
          [self.token_cache, "/piece-", tf.strings.as_string(pieces.ids[local])]))
    # Shuffling documents mixes the files of a piece, so that a window pairs documents of
    # several of them.
    documents = _shuffled_blocks(blocks, document_seed)
    return documents.ragged_batch(self.config.documents_per_window).enumerate()

  def _window_examples(self, epoch: tf.Tensor, rank: tf.Tensor, window_seed: tf.Tensor):
    """The function from (index, window) to the window's examples, a batch of them."""
    def window_examples(index, window):
      features, labels, weights, pair_facts = self.build_examples.examples(
          window, tf.random.experimental.stateless_fold_in(window_seed, index))
      if not self.with_pairs:
        return features, labels, weights
      window_key = stream_position.encode(epoch, rank, index)
      pair_facts["window"] = tf.fill(tf.shape(pair_facts["is_next"]), window_key)
      return features, labels, weights, pair_facts

    return window_examples


def text_batches(plan: InputPlan, pipeline: InputPipeline = ONE_PIPELINE) -> tf.data.Dataset:
  """Batches of `(features, labels, sample_weights)` for BERT pre-training, from the text
  files of `plan`, as input pipeline `pipeline` reads them: one corpus's stream, or with
  `plan.weights` each group's drawn by weight (`mixture.py`)."""
  keyed = plan.batching.with_positions
  if plan.weights is None:
    examples = _Stream(plan, plan.files, pipeline, pipeline.start.stream(0), plan.seed,
                       keyed).examples()
  else:
    if plan.token_cache:
      raise ValueError("a mixture's pieces are not cached")
    starts = [pipeline.start.stream(group) for group in range(len(plan.groups))]
    examples = mixture.mixed(
        [_Stream(plan, files, pipeline, start, mixture.group_seed(plan.seed, group),
                 True).examples()
         for group, (files, start) in enumerate(zip(plan.groups, starts, strict=True))],
        plan.weights, seed=plan.seed, shard_index=pipeline.shard_index,
        start=[start.position for start in starts] + [pipeline.start.draws])
    keyed = True
  return batching.batched(examples, plan.batching, keyed, plan.examples.packing)


def pretraining_dataset(file_patterns, vocab_file, **options) -> tf.data.Dataset:
  """`text_batches` by keywords, for a notebook (docs/pipeline.md#from-a-notebook).

  Args:
    file_patterns: globs or comma list (or a list of them); `builtin` is the built-in corpus.
      With `weights`, each comma-separated item (or list item) is a group, its patterns
      separated by `|`.
    vocab_file: WordPiece vocabulary, one token a line (or a `Vocabulary`).
    **options: `data_dir` (where the built-in corpus is written), and any field of
      `input_plan.InputPlan` (seed, holdout, token_cache, weights), `input_plan.Batching`
      (batch_size, repeat, with_positions, with_pairs), `input_plan.InputPipeline`
      (num_shards, shard_index; start_position: a stream position, `stream_position.py`, or
      a mixture's vector, `mixture.py`, or a `Start`) or `PipelineConfig` (seq_length,
      max_predictions_per_seq, masked_lm_prob, whole_word_masking, nsp, ...).
  """
  return text_batches(*input_plan.from_keywords(file_patterns, vocab_file, options,
                                                records=False))

"""The input plan: what the readers read and how, made once from the settings
(docs/design.md#the-input-plan).

An `InputPlan` holds the files (listed once: one group, or the groups of a mixture), the input
format (text; original BERT's records, `RecordReading`; groups mixed by `weights`), the shapes
and the masking (`PipelineConfig`), the seed, the holdout and the batching. An
`InputPipeline` is one of the pipelines that read a plan: its share, and its `Start`. A
`Start` is where the pipeline's stream begins, one representation for a fresh run, a resume
and a resize: for each stream it reads (the corpus, each group of a mixture, the record files)
a `StreamStart` (the key of its first example and the pieces it carries on from another
number of pipelines), and a mixture's first draw.

`readers.batches(plan, pipeline)` reads a plan; `from_settings` makes one from a run's
settings, `from_keywords` from a notebook's keywords (`pretraining_dataset`,
`records_dataset`).
"""

import dataclasses

from bert_tf.data import corpus, stream_position
from bert_tf.data.data_settings import RECORDS, PipelineConfig
from bert_tf.data.holdout import Holdout
from bert_tf.data.piece_deal import Unread
from bert_tf.data.tokenization import Vocabulary

SHUFFLE_BLOCK = 1000  # records shuffled (or re-masked) together (they come shuffled already)


@dataclasses.dataclass(frozen=True)
class StreamStart:
  """Where one stream of an input pipeline starts: `position`, the key of its first example
  (`stream_position`, or `record_position` for records), and the pieces it carries on from
  another number of pipelines (`piece_deal.py`): read first, keyed of the epoch
  `carried_epoch`, its own epochs from `carried_epoch + 1` on."""

  position: int = stream_position.BEGINNING
  carried: tuple[Unread, ...] = ()
  carried_epoch: int = -1

  def carries(self, positions=stream_position) -> bool:
    """Whether the stream starts among its carried pieces (`positions` packs its keys)."""
    return bool(self.carried) and positions.decode(self.position)[0] <= self.carried_epoch


@dataclasses.dataclass(frozen=True)
class Start:
  """Where an input pipeline starts: a `StreamStart` per stream it reads (none: every one at
  its beginning) and the number of a mixture's first draw (`mixture.py`)."""

  streams: tuple[StreamStart, ...] = ()
  draws: int = 0

  def stream(self, index: int) -> StreamStart:
    return self.streams[index] if self.streams else StreamStart()

  @classmethod
  def at(cls, position, groups: int | None = None) -> "Start":
    """A start from a stream position: one key, or with `groups` a mixture's vector (each
    group's key, then the draws' number: `mixture.py`)."""
    if isinstance(position, Start):
      return position
    is_vector = isinstance(position, (list, tuple))
    if not is_vector and position == stream_position.BEGINNING:
      return cls()
    if groups is None:
      return cls((StreamStart(int(position)),))
    if not is_vector or len(position) != groups + 1:
      raise ValueError(f"{position} is not a position of a mixture of {groups}")
    return cls(tuple(StreamStart(int(key)) for key in position[:-1]), int(position[-1]))


@dataclasses.dataclass(frozen=True)
class InputPipeline:
  """One of the `num_shards` input pipelines that read a plan (`tf.distribute.InputContext`'s
  numbers), and where it starts."""

  num_shards: int = 1
  shard_index: int = 0
  start: Start = Start()


ONE_PIPELINE = InputPipeline()  # the only pipeline, from the beginning (a notebook's)


@dataclasses.dataclass(frozen=True)
class Batching:
  """How examples leave the reader: `batch_size` a batch (per input pipeline); `repeat`
  False for one pass (evaluation), True for endless fresh epochs; `with_positions` adds each
  example's stream position to the features (`stream_position.FEATURE`: the trainer records
  the last one trained on, to resume there); `with_pairs` (text) a fourth element telling how
  each pair was made (`is_next`, `is_short`, `window`, `document_a`, `document_b`, a mixture's
  `group`), for the audit."""

  batch_size: int = 32
  repeat: bool = True
  with_positions: bool = False
  with_pairs: bool = False


@dataclasses.dataclass(frozen=True)
class RecordReading:
  """How original BERT's records are read (docs/records.md): `compression` "", "GZIP" or
  "ZLIB"; `remask` masks them anew with the plan's masking; `shuffle` False interleaves the
  files round-robin as listed, each file's records as written (`bert_tf.prepare`'s stream);
  `shuffle_block` records shuffled (or re-masked) together; `seq_length` and
  `max_predictions_per_seq` the shape the settings ask for (None: the records')."""

  compression: str = ""
  remask: bool = False
  shuffle: bool = True
  shuffle_block: int = SHUFFLE_BLOCK
  seq_length: int | None = None
  max_predictions_per_seq: int | None = None


@dataclasses.dataclass(frozen=True)
class InputPlan:
  """What the readers read and how (module docstring). `groups`: the files, one tuple per
  group (one unless `weights`); `examples`: the shapes, masking and text layout; `records`:
  None for text; `weights`: one per group, the examples drawn from the groups in that
  proportion (None: one corpus); `holdout`: a `holdout.Holdout` of documents or records (of
  each group alike); `token_cache`: a local directory for each piece's tokens (text, one
  corpus): later epochs only pair and mask them."""

  groups: tuple[tuple[str, ...], ...]
  vocabulary: Vocabulary
  examples: PipelineConfig = PipelineConfig()
  records: RecordReading | None = None
  weights: tuple[float, ...] | None = None
  seed: int = 0
  holdout: Holdout | None = None
  token_cache: str = ""
  batching: Batching = Batching()

  @property
  def files(self) -> tuple[str, ...]:
    """The files of a plan of one group."""
    (files,) = self.groups
    return files

  def replace(self, **changes) -> "InputPlan":
    return dataclasses.replace(self, **changes)

  def batched(self, **changes) -> "InputPlan":
    """The plan with `Batching` fields changed."""
    return self.replace(batching=dataclasses.replace(self.batching, **changes))


def listed(file_patterns, records: bool, mixed: bool, data_dir: str) -> tuple:
  """The files of `file_patterns`, one tuple per group: records' as named (`builtin` is
  text), a mixture's each group's (`corpus.list_groups`), else one group."""
  if records:
    return (tuple(corpus.list_files(file_patterns)),)
  return tuple(tuple(group) for group in corpus.training_groups(file_patterns, mixed, data_dir))


def examples_of(settings) -> PipelineConfig:
  """The `PipelineConfig` fields of `settings` (a `TrainConfig`, say)."""
  return PipelineConfig(**{field.name: getattr(settings, field.name)
                           for field in dataclasses.fields(PipelineConfig)})


def record_reading_of(settings) -> RecordReading:
  """The `RecordsConfig` fields of `settings`, and the shape they ask for."""
  return RecordReading(settings.record_compression, settings.remask, settings.shuffle_records,
                       seq_length=settings.seq_length,
                       max_predictions_per_seq=settings.max_predictions_per_seq)


def from_settings(settings, vocabulary: Vocabulary, file_patterns: str | None = None,
                  **fields) -> InputPlan:
  """The plan of a run's settings (a `TrainConfig`, or any with its data fields): its files
  listed now, `file_patterns` (default --input_files; mixed by --input_weights only when
  they are --input_files); `fields`: other `InputPlan` fields (seed, holdout, batching)."""
  records = settings.input_format == RECORDS
  patterns = file_patterns or settings.input_files
  weights = (None if records or patterns != settings.input_files else settings.weights())
  return InputPlan(
      listed(patterns, records, weights is not None, settings.data_dir), vocabulary,
      examples_of(settings), record_reading_of(settings) if records else None, weights,
      **{"seed": settings.seed, **fields})


def from_keywords(file_patterns, vocab_file, options: dict,
                  records: bool) -> tuple[InputPlan, InputPipeline]:
  """The plan and input pipeline of a keyword front's call: `options` are fields of
  `InputPlan` (`seed`, `holdout`; text: `token_cache`, `weights`), `Batching`,
  `InputPipeline` (`start_position`: a key, a mixture's vector or a `Start`),
  `RecordReading` (records) and `PipelineConfig`, and `data_dir` (where the built-in corpus is
  written). An unknown name is a TypeError, as any function's."""
  options = dict(options)
  own = (Batching, RecordReading) if records else (Batching,)
  picked = {cls: {name: options.pop(name) for name in [f.name for f in dataclasses.fields(cls)]
                  if name in options} for cls in own}
  plan_fields = {name: options.pop(name) for name in (
      ("seed", "holdout") if records else ("seed", "holdout", "token_cache", "weights"))
      if name in options}
  weights = plan_fields.get("weights")
  pipeline = InputPipeline(options.pop("num_shards", 1), options.pop("shard_index", 0),
                           Start.at(options.pop("start_position", stream_position.BEGINNING),
                                    None if weights is None else len(weights)))
  data_dir = options.pop("data_dir", "data")
  examples = PipelineConfig(**({"input_format": RECORDS} if records else {}), **options)
  if not records:
    examples.check()
  files = listed(file_patterns, records, weights is not None, data_dir)
  vocabulary = vocab_file if isinstance(vocab_file, Vocabulary) else Vocabulary(vocab_file)
  return InputPlan(
      files, vocabulary, examples, RecordReading(**picked[RecordReading]) if records else None,
      batching=Batching(**picked[Batching]), **plan_fields), pipeline

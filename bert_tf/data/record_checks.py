"""Checks of a set of original BERT records before training, each failure one line: files
that are not TFRecords or are compressed otherwise than asked, records that lack a feature or
disagree in length, labels other than 0/1, empty files, a vocabulary that does not fit the
records, and an --eval_fraction that leaves one side without records (docs/records.md#checks)."""

import logging
import unicodedata

import numpy as np
import tensorflow as tf

from bert_tf.data import records
from bert_tf.data.data_settings import COMPRESSIONS
from bert_tf.data.holdout import held_out_mask
from bert_tf.data.records import RecordShape
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError

log = logging.getLogger("bert_tf")

SAMPLE_RECORDS = 1000  # records read from the first files for the detailed checks
# [MASK] stands at about mask_token_rate (80%) of the masked positions; below this share the
# records were not masked with this vocabulary's [MASK].
MIN_MASK_SHARE = 0.5
# With the vocabulary the records were made with, every word of several pieces is split again
# into the same pieces (WordPiece is greedy) and none starts with a punctuation mark (those are
# words of their own); only a segment cut inside a word breaks that, far below this share.
MAX_RESPLIT_SHARE = 0.01


def compression_of(head: bytes) -> str:
  """The compression a file's first bytes show ("" when neither gzip nor zlib)."""
  if head[:2] == b"\x1f\x8b":
    return "GZIP"
  if len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0:
    return "ZLIB"
  return ""


def _read_head(path: str) -> bytes:
  with tf.io.gfile.GFile(path, "rb") as f:
    return f.read(2)


def first_records(path: str, compression: str, count: int) -> list[bytes]:
  """Up to `count` records from the start of `path`, or a one-line error saying why not."""
  try:
    return list(tf.data.TFRecordDataset(path, compression).take(count).as_numpy_iterator())
  except tf.errors.NotFoundError:
    raise UserError(f"record file not found: {path}") from None
  except tf.errors.OpError as e:
    found = compression_of(_read_head(path))
    if found and found != compression:
      raise UserError(f"{path} is {found}-compressed: read it with "
                      f"--record_compression={found}") from None
    if compression and not found:
      raise UserError(f"{path} is not {compression}-compressed: leave out "
                      "--record_compression") from None
    reason = e.message.splitlines()[0] if e.message else type(e).__name__
    raise UserError(f"{path} is not a TFRecord file ({reason})") from None


def _values(feature: tf.train.Feature):
  return feature.float_list.value if feature.HasField("float_list") else feature.int64_list.value


def record_arrays(serialized: list[bytes], path: str) -> dict:
  """The sampled records as arrays by feature name, after checking each record's features."""
  columns = {name: [] for name in records.FEATURE_NAMES}
  for index, record in enumerate(serialized):
    where = f"record {index} of {path}"
    try:
      features = tf.train.Example.FromString(record).features.feature
    except Exception:  # noqa: BLE001 (protobuf's DecodeError has no stable import path)
      raise UserError(f"{where} is not a tf.train.Example") from None
    missing = [name for name in records.FEATURE_NAMES if name not in features]
    if missing:
      raise UserError(f"{where} lacks the feature(s) {', '.join(missing)} of original BERT's "
                      "records")
    for name in records.FEATURE_NAMES:
      columns[name].append(np.array(_values(features[name])))
    _check_lengths(columns, where)
  return {name: np.stack(values) for name, values in columns.items()}


def _check_lengths(columns: dict, where: str) -> None:
  """The last record's features against each other and against the first record's."""
  for group in (records.SEQUENCE_FEATURES,
                records.PREDICTION_FEATURES + (records.WEIGHT_FEATURE,), (records.LABEL_FEATURE,)):
    lead = group[0]
    length = len(columns[lead][-1])
    expected = len(columns[lead][0]) if lead != records.LABEL_FEATURE else 1
    if length != expected:
      raise UserError(f"{where}: {lead} has {length} values where the first record's has "
                      f"{expected}")
    for name in group[1:]:
      if len(columns[name][-1]) != length:
        raise UserError(f"{where}: {name} has {len(columns[name][-1])} values where {lead} "
                        f"has {length}")
  label = int(columns[records.LABEL_FEATURE][-1][0])
  if label not in (0, 1):
    raise UserError(f"{where}: next_sentence_labels is {label}, not 0 or 1")


def check_files(files: list[str], compression: str) -> tuple[RecordShape, dict]:
  """Reads the first record of every file and a sample from the first files: their shape
  and the sample's arrays. Empty files are a warning, unless all are."""
  if compression not in COMPRESSIONS:
    raise UserError(f"unknown record compression {compression!r}: use GZIP or ZLIB")
  sample, shapes, empty = {}, {}, []
  for path in files:
    wanted = SAMPLE_RECORDS - sum(len(a[records.LABEL_FEATURE]) for a in sample.values())
    serialized = first_records(path, compression, max(wanted, 1))
    if not serialized:
      empty.append(path)
      continue
    arrays = record_arrays(serialized, path)
    shapes[path] = RecordShape(arrays["input_ids"].shape[1], arrays["masked_lm_ids"].shape[1])
    if wanted > 0:
      sample[path] = arrays
  if not shapes:
    raise UserError(f"no records in {len(files)} file(s): {files[0]} ...")
  for path in empty:
    log.warning("%s has no records", path)
  first_path, first = next(iter(shapes.items()))
  for path, shape in shapes.items():
    if shape != first:
      raise UserError(f"{path} has {shape.seq_length} tokens and {shape.max_predictions_per_seq} "
                      f"predictions per record, {first_path} {first.seq_length} and "
                      f"{first.max_predictions_per_seq}")
  joined = {name: np.concatenate([arrays[name] for arrays in sample.values()])
            for name in records.FEATURE_NAMES}
  return first, joined


def wordpieces(word: str, tokens: set) -> list[str] | None:
  """The greedy longest-match-first WordPiece split of `word` (None: it has no split)."""
  pieces, start = [], 0
  while start < len(word):
    end = len(word)
    while end > start:
      piece = word[start:end] if start == 0 else "##" + word[start:end]
      if piece in tokens:
        break
      end -= 1
    if end == start:
      return None
    pieces.append(piece)
    start = end
  return pieces


def is_punctuation(piece: str) -> bool:
  """A punctuation mark as original BERT's tokenizer splits them off: every ASCII symbol,
  and Unicode's punctuation."""
  return len(piece) == 1 and (piece.isascii() and not piece.isalnum() and not piece.isspace()
                              or unicodedata.category(piece).startswith("P"))


def _resplit_share(token_ids: np.ndarray, lengths: np.ndarray, vocabulary: Vocabulary) -> float:
  """The share of sampled words of two pieces or more that the vocabulary splits otherwise
  (or would not have made: a punctuation mark followed by `##` pieces)."""
  tokens, known = vocabulary.tokens, set(vocabulary.tokens)
  words = resplit = 0
  for row, length in zip(token_ids, lengths):
    pieces = [tokens[i] for i in row[:length]]
    starts = [i for i, piece in enumerate(pieces) if not piece.startswith("##")] + [length]
    for start, end in zip(starts, starts[1:]):
      if end - start < 2 or pieces[start].startswith("["):
        continue
      words += 1
      word = pieces[start] + "".join(p[2:] for p in pieces[start + 1:end])
      resplit += is_punctuation(pieces[start]) or wordpieces(word, known) != pieces[start:end]
  return resplit / words if words else 0.0


def check_vocabulary(arrays: dict, vocabulary: Vocabulary) -> None:
  """Rejects a vocabulary the sampled records were not made with, naming what does not fit."""
  name = f"vocabulary {vocabulary.path}"
  ids, mask = arrays["input_ids"], arrays["input_mask"].astype(bool)
  largest = int(ids[mask].max())
  if largest >= len(vocabulary) or int(ids.min()) < 0:
    raise UserError(f"the records hold id {largest}, outside {name} ({len(vocabulary)} tokens)")
  if np.any(ids[:, 0] != vocabulary.cls_id):
    found = int(ids[ids[:, 0] != vocabulary.cls_id][0, 0])
    raise UserError(f"the records start with id {found} ({vocabulary.tokens[found]}), not "
                    f"{name}'s [CLS] (id {vocabulary.cls_id})")
  lengths = mask.sum(axis=1)
  segments = arrays["segment_ids"]
  ends = np.zeros_like(mask)
  ends[np.arange(len(ids)), lengths - 1] = True
  ends[:, :-1] |= mask[:, :-1] & (segments[:, 1:] != segments[:, :-1]) & mask[:, 1:]
  if np.any(ids[ends] != vocabulary.sep_id):
    raise UserError(f"the records' segments do not end with {name}'s [SEP] "
                    f"(id {vocabulary.sep_id})")
  true_ids = ids.copy()
  rows, slots = np.nonzero(arrays["masked_lm_weights"] > 0)
  positions = arrays["masked_lm_positions"][rows, slots]
  true_ids[rows, positions] = arrays["masked_lm_ids"][rows, slots]
  if len(rows) >= 50:
    mask_share = float(np.mean(ids[rows, positions] == vocabulary.mask_id))
    if mask_share < MIN_MASK_SHARE:
      raise UserError(f"{name}'s [MASK] (id {vocabulary.mask_id}) is at {mask_share:.0%} of "
                      "the records' masked positions, not about 80%")
  resplit = _resplit_share(true_ids, lengths, vocabulary)
  if resplit > MAX_RESPLIT_SHARE:
    raise UserError(f"{name} splits {resplit:.0%} of the records' words into other pieces: "
                    "the records were made with another vocabulary (or a cased one)")


def check_records(files: list[str], vocabulary: Vocabulary, compression: str = "") -> RecordShape:
  """Everything above, before training: the records' shape."""
  shape, sample = check_files(files, compression)
  check_vocabulary(sample, vocabulary)
  return shape


def check_split(files: list[str], compression: str, fraction: float) -> None:
  """Fails clearly unless `fraction` holds out at least one record and keeps at least one (by
  the hash `records_dataset` splits on): an endless stream filtered to nothing would wait for
  a record forever. Reads the records only until both sides have one."""
  held_out = kept = 0
  for path in files:
    for serialized in tf.data.TFRecordDataset(path, compression).batch(SAMPLE_RECORDS):
      mask = held_out_mask(serialized, fraction).numpy()
      held_out, kept = held_out + int(mask.sum()), kept + int((~mask).sum())
      if held_out and kept:
        return
  raise UserError(f"--eval_fraction={fraction} holds out {held_out} of the {held_out + kept} "
                  f"records and trains on {kept}: each side needs at least one (give another "
                  "fraction, or --eval_files)")

"""Original BERT's pre-training records in (`bert_tf.data.records`, `record_checks`,
`record_dataset`, `remasking`, `record_position`): records written here as
google-research/bert's `create_pretraining_data.py` writes them, over a tiny vocabulary."""

import gzip
import logging
import zlib

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import record_checks, record_position, records
from bert_tf.data.holdout import Holdout
from bert_tf.data.record_dataset import records_dataset
from bert_tf.data.records import RecordShape
from bert_tf.data.remasking import restore
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.training import preparation
from bert_tf.training.train_settings import TrainConfig
from helpers import original_spec

SEQ, PREDICTIONS = 32, 5
TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "sat", "on",
          "mat", "run", "a", "big", "##s", "##ning", "##gy", "."]
WORDS = [["the"], ["cat"], ["cat", "##s"], ["dog"], ["dog", "##gy"], ["sat"], ["on"], ["mat"],
         ["run"], ["run", "##s"], ["run", "##ning"], ["a"], ["big"], ["."]]
CLS, SEP, MASK = 2, 3, 4


def _int_feature(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def original_instance(rng, seq=SEQ, predictions=PREDICTIONS, mask_rate=0.8):
  """One instance as `create_pretraining_data.py` builds it: [CLS] A [SEP] B [SEP], the
  original's count of predictions, 80/10/10, features padded with zeros."""
  ids = {t: i for i, t in enumerate(TOKENS)}

  def segment(words):
    return [ids[p] for w in rng.integers(len(WORDS), size=words) for p in WORDS[w]]

  a, b = segment(rng.integers(2, 6)), segment(rng.integers(2, 6))
  tokens = [CLS] + a + [SEP] + b + [SEP]
  segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
  candidates = [i for i, t in enumerate(tokens) if t not in (CLS, SEP)]
  count = min(predictions, max(1, int(round(len(tokens) * 0.15))))
  positions = sorted(rng.choice(candidates, count, replace=False).tolist())
  labels = [tokens[p] for p in positions]
  for p in positions:
    draw = rng.random()
    tokens[p] = MASK if draw < mask_rate else (tokens[p] if draw < 0.9 else
                                               int(rng.integers(5, len(TOKENS))))
  return {"tokens": tokens, "segments": segments, "positions": positions, "labels": labels,
          "next_sentence_label": int(rng.integers(2))}


def original_record(instance, seq=SEQ, predictions=PREDICTIONS, drop=(), **override):
  """The original's `write_instance_to_example_files` for one instance, serialized."""
  pad = seq - len(instance["tokens"])
  pad_predictions = predictions - len(instance["positions"])
  features = {
      "input_ids": _int_feature(instance["tokens"] + [0] * pad),
      "input_mask": _int_feature([1] * len(instance["tokens"]) + [0] * pad),
      "segment_ids": _int_feature(instance["segments"] + [0] * pad),
      "masked_lm_positions": _int_feature(instance["positions"] + [0] * pad_predictions),
      "masked_lm_ids": _int_feature(instance["labels"] + [0] * pad_predictions),
      "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(
          value=[1.0] * len(instance["positions"]) + [0.0] * pad_predictions)),
      "next_sentence_labels": _int_feature([instance["next_sentence_label"]]),
  }
  features.update(override)
  for name in drop:
    del features[name]
  return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def write_records(path, serialized, compression=""):
  with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type=compression)) as w:
    for record in serialized:
      w.write(record)
  return path


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
  path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
  path.write_text("\n".join(TOKENS) + "\n")
  return str(path)


@pytest.fixture(scope="module")
def record_files(tmp_path_factory):
  """Three files of 40, 25 and 35 records."""
  directory = tmp_path_factory.mktemp("records")
  rng = np.random.default_rng(0)
  return [write_records(str(directory / f"part-{i}.tfrecord"),
                        [original_record(original_instance(rng)) for _ in range(count)])
          for i, count in enumerate([40, 25, 35])]


def _numpy(batch):
  return tf.nest.map_structure(lambda t: t.numpy(), batch)


def _concatenated(dataset):
  batches = [_numpy(batch) for batch in dataset]
  return tf.nest.map_structure(lambda *arrays: np.concatenate(arrays), *batches)


def _round_robin(per_file: list[list]) -> list:
  """The records of several files in the unshuffled order: one of each file in turn, a file
  that has ended left out."""
  return [records[j] for j in range(max(map(len, per_file))) for records in per_file
          if j < len(records)]


def _in_order(files, vocab_file, **options):
  return _concatenated(records_dataset(files, vocab_file, batch_size=16, repeat=False,
                                       shuffle=False, **options))


# The features: a batch read equals the records parsed by the original spec

def test_batch_equals_the_original_spec_with_the_label_converted(record_files, vocab_file):
  features, labels, weights = _in_order(record_files, vocab_file)
  spec = original_spec(SEQ, PREDICTIONS)
  parsed = [tf.io.parse_single_example(record, spec) for record in _round_robin(
      [list(tf.data.TFRecordDataset(path)) for path in record_files])]
  assert len(labels["nsp"]) == len(parsed) == 100

  def column(name):
    return np.stack([p[name].numpy() for p in parsed])

  assert np.array_equal(features["token_ids"], column("input_ids"))
  assert np.array_equal(features["padding_mask"], column("input_mask"))
  assert np.array_equal(features["segment_ids"], column("segment_ids"))
  assert np.array_equal(features["masked_positions"], column("masked_lm_positions"))
  assert np.array_equal(labels["mlm"], column("masked_lm_ids"))
  assert np.array_equal(weights["mlm"], column("masked_lm_weights"))
  original_labels = column("next_sentence_labels")[:, 0]
  assert set(original_labels.tolist()) == {0, 1}  # both labels are tested
  assert np.array_equal(labels["nsp"], 1 - original_labels)  # original 1 = NotNext = our 0
  assert weights["nsp"].tolist() == [1.0] * 100
  for array in (*features.values(), labels["mlm"], labels["nsp"]):
    assert array.dtype == np.int32
  assert weights["mlm"].dtype == weights["nsp"].dtype == np.float32


def test_serialize_writes_the_originals_records(record_files):
  """Our examples serialized (in the graph) are the original's records: the same messages,
  label converted back (the bytes may order the feature map otherwise)."""
  originals = [r.numpy() for r in tf.data.TFRecordDataset(record_files[0])]
  examples = records.parse(tf.constant(originals), RecordShape(SEQ, PREDICTIONS))
  serialized = tf.function(records.serialize)(*examples).numpy()
  assert [tf.train.Example.FromString(r) for r in serialized] == [
      tf.train.Example.FromString(r) for r in originals]


def test_element_spec_is_the_text_pipelines(record_files, vocab_file):
  features, labels, weights = records_dataset(record_files, vocab_file, batch_size=8,
                                              with_positions=True).element_spec
  assert {name: (spec.shape.as_list(), spec.dtype) for name, spec in features.items()} == {
      "token_ids": ([8, SEQ], tf.int32), "segment_ids": ([8, SEQ], tf.int32),
      "padding_mask": ([8, SEQ], tf.int32), "masked_positions": ([8, PREDICTIONS], tf.int32),
      "stream_position": ([8], tf.int64)}
  assert labels["mlm"].shape.as_list() == [8, PREDICTIONS] and labels["nsp"].dtype == tf.int32
  assert weights["mlm"].dtype == weights["nsp"].dtype == tf.float32


def test_shape_comes_from_the_records(record_files, vocab_file):
  assert record_checks.check_records(record_files, Vocabulary(vocab_file)) == RecordShape(
      SEQ, PREDICTIONS)
  records_dataset(record_files, vocab_file, seq_length=SEQ, max_predictions_per_seq=PREDICTIONS)
  with pytest.raises(UserError, match=r"^--seq_length=128 disagrees with the records, whose "
                     r"seq_length is 32"):
    records_dataset(record_files, vocab_file, seq_length=128)
  with pytest.raises(UserError, match="--max_predictions_per_seq=20 disagrees"):
    records_dataset(record_files, vocab_file, max_predictions_per_seq=20)


@pytest.mark.parametrize("compression", ["GZIP", "ZLIB"])
def test_compressed_records_read_with_the_flag(record_files, vocab_file, tmp_path,
                                               compression):
  serialized = [r.numpy() for r in tf.data.TFRecordDataset(record_files[0])]
  path = write_records(str(tmp_path / "c.tfrecord"), serialized, compression)
  expected = _in_order(record_files[:1], vocab_file)
  assert tf.nest.map_structure(np.array_equal, _in_order([path], vocab_file,
                                                          compression=compression), expected)


# Positions, order, sharding

def test_record_position_round_trip():
  key = record_position.encode(3, 7, 123_456)
  assert record_position.decode(key) == (3, 7, 123_456)
  assert record_position.encode(0, 0, 1) == record_position.BEGINNING + 1
  assert record_position.decode(record_position.encode(
      record_position.MAX_EPOCHS - 1, record_position.MAX_FILES - 1,
      record_position.MAX_RECORDS - 1)) == (record_position.MAX_EPOCHS - 1,
                                             record_position.MAX_FILES - 1,
                                             record_position.MAX_RECORDS - 1)
  with pytest.raises(ValueError):
    record_position.decode(-1)


def _stream(files, vocab_file, take, **options):
  """`take` batches of 8 of the endless, shuffled stream, with positions."""
  dataset = records_dataset(files, vocab_file, batch_size=8, seed=5, with_positions=True,
                            shuffle_block=7, **options)
  return _concatenated(dataset.take(take))


def test_resume_anywhere_gives_the_rest_of_the_stream(record_files, vocab_file):
  whole = _stream(record_files, vocab_file, 30)  # 240 examples: more than two epochs
  keys = whole[0]["stream_position"]
  epochs = [record_position.decode(k)[0] for k in keys]
  assert epochs[0] == 0 and epochs[-1] == 2
  assert len(set(keys.tolist())) == 240 and np.all(np.diff(keys) > 0)
  for start in (1, 45, 101, 163):  # within a block, at a file's start, in later epochs
    rest = _stream(record_files, vocab_file, 5, start_position=int(keys[start]))
    expected = tf.nest.map_structure(lambda a, start=start: a[start:start + 40], whole)
    assert tf.nest.map_structure(np.array_equal, rest, expected) == tf.nest.map_structure(
        lambda _: True, expected)


def test_epochs_reorder_the_records(record_files, vocab_file):
  whole = _stream(record_files, vocab_file, 25)
  first, second = whole[0]["token_ids"][:100], whole[0]["token_ids"][100:200]
  assert not np.array_equal(first, second)
  assert sorted(map(bytes, first)) == sorted(map(bytes, second))  # the same records


@pytest.fixture(scope="module")
def dealt(tmp_path_factory):
  """`dealt(count, files)`: `count` records dealt to `files` files in turn, as
  `bert_tf.prepare` deals its stream (record i to file i % files, so the files' counts differ
  by at most one, the shorter last); the files and each record's stream index by its tokens."""
  directory, made = tmp_path_factory.mktemp("dealt"), {}

  def make(count, files):
    if (count, files) not in made:
      rng = np.random.default_rng(count)
      instances = [original_instance(rng) for _ in range(count)]
      index_of = {bytes(_true_tokens(instance)): i for i, instance in enumerate(instances)}
      assert len(index_of) == count  # each record told apart by its true tokens
      paths = [write_records(str(directory / f"{count}-{files}-part-{f}.tfrecord"),
                             [original_record(instance) for instance in instances[f::files]])
               for f in range(files)]
      made[count, files] = paths, index_of
    return made[count, files]

  return make


def _true_tokens(instance) -> np.ndarray:
  """An instance's tokens before masking, padded: as `restore` gives them."""
  tokens = np.zeros(SEQ, np.int32)
  tokens[:len(instance["tokens"])] = instance["tokens"]
  tokens[instance["positions"]] = instance["labels"]
  return tokens


def _indices(batches, index_of):
  """The stream indices of a read's examples (masked anew or not), and their positions."""
  return ([index_of[bytes(row)] for row in _restored(batches)],
          batches[0][record_position.FEATURE].tolist())


def _unshuffled(files, vocab_file, **options):
  return _concatenated(records_dataset(files, vocab_file, batch_size=4, repeat=False,
                                       shuffle=False, with_positions=True, shuffle_block=4,
                                       **options))


@pytest.mark.parametrize("count", [7, 8, 9])
def test_unshuffled_reads_the_files_dealt_by_prepare_in_stream_order(dealt, vocab_file, count):
  files, index_of = dealt(count, 3)
  indices, keys = _indices(_unshuffled(files, vocab_file), index_of)
  assert indices == list(range(count))
  assert keys == [record_position.encode(0, 0, i) for i in range(count)]


def test_unshuffled_resumes_at_any_position(dealt, vocab_file):
  files, index_of = dealt(7, 3)  # 3, 2 and 2 records
  whole = _unshuffled(files, vocab_file, remask=True)  # the masks too depend on the position
  # Blocks of 2 turns: the second file's first record, the last file's first, the second
  # turn, the first block's last, the second block's first (the last record).
  for start in (1, 2, 3, 5, 6):
    rest = _unshuffled(files, vocab_file, remask=True,
                       start_position=record_position.encode(0, 0, start))
    assert _indices(rest, index_of) == (list(range(start, 7)), [
        record_position.encode(0, 0, i) for i in range(start, 7)])
    assert _equal(rest, tf.nest.map_structure(lambda a, start=start: a[start:], whole))
  # In a later epoch of the endless stream, on into the next.
  later = records_dataset(files, vocab_file, batch_size=1, shuffle=False, remask=True,
                          with_positions=True, shuffle_block=4,
                          start_position=record_position.encode(1, 0, 5))
  assert _indices(_concatenated(later.take(4)), index_of) == ([5, 6, 0, 1], [
      record_position.encode(1, 0, 5), record_position.encode(1, 0, 6),
      record_position.encode(2, 0, 0), record_position.encode(2, 0, 1)])


def test_unshuffled_holdout_leaves_the_positions_alone(record_files, vocab_file):
  # Files of 40, 25 and 35 records: the positions past a file's end are left out too.
  whole = _unshuffled(record_files, vocab_file)
  keys = whole[0][record_position.FEATURE]
  assert keys.tolist() == sorted(j * 3 + f for f, count in enumerate([40, 25, 35])
                                 for j in range(count))
  holdout = Holdout(0.3, held_out=True)
  part = _unshuffled(record_files, vocab_file, holdout=holdout)
  rows = np.isin(keys, part[0][record_position.FEATURE])
  assert 10 <= rows.sum() <= 50  # 30 of 100 expected
  assert _equal(part, tf.nest.map_structure(lambda a: a[rows], whole))
  # From a position the holdout keeps, and from one it leaves out.
  part_keys, left_out = part[0][record_position.FEATURE], keys[~rows]
  for start in (int(part_keys[len(part_keys) // 2]), int(left_out[len(left_out) // 2])):
    rest = _unshuffled(record_files, vocab_file, holdout=holdout, start_position=start)
    later = part_keys >= start
    assert _equal(rest, tf.nest.map_structure(lambda a, later=later: a[later], part))


@pytest.mark.parametrize("files, shards", [(4, 2), (3, 2), (2, 4)])
def test_unshuffled_shards_read_their_share_in_stream_order(dealt, vocab_file, files, shards):
  paths, index_of = dealt(11, files)
  parts = [_indices(_unshuffled(paths, vocab_file, num_shards=shards, shard_index=index),
                    index_of)[0] for index in range(shards)]
  assert sorted(i for part in parts for i in part) == list(range(11))
  assert all(part == sorted(part) for part in parts)
  if files % shards == 0:  # pipeline s reads examples s, s + W, s + 2W, ...
    assert parts == [list(range(index, 11, shards)) for index in range(shards)]


def _equal(a, b) -> bool:
  return all(tf.nest.flatten(tf.nest.map_structure(np.array_equal, a, b)))


def _rows(batch):
  features, labels, _ = batch
  return sorted(bytes(row) + bytes(mlm) for row, mlm in zip(features["token_ids"],
                                                             labels["mlm"]))


@pytest.mark.parametrize("files, shards", [(3, 2), (3, 3), (1, 2), (2, 4)])
def test_shards_split_the_records(record_files, vocab_file, files, shards):
  whole = _rows(_in_order(record_files[:files], vocab_file))
  parts = [_rows(_in_order(record_files[:files], vocab_file, num_shards=shards,
                           shard_index=index)) for index in range(shards)]
  assert sorted(row for part in parts for row in part) == whole
  assert all(parts)  # every pipeline gets records, by file or by record
  sizes = [len(part) for part in parts]
  if files < shards:
    assert max(sizes) - min(sizes) <= files  # a record in turn of every file


def test_holdout_splits_the_records(record_files, vocab_file):
  whole = _rows(_in_order(record_files, vocab_file))
  held = _rows(_in_order(record_files, vocab_file, holdout=Holdout(0.3, True)))
  kept = _rows(_in_order(record_files, vocab_file, holdout=Holdout(0.3, False)))
  assert sorted(held + kept) == whole
  assert 10 <= len(held) <= 50  # 30 of 100 expected; 50 is over 4 standard deviations


def test_an_eval_fraction_that_leaves_a_side_empty_is_one_line(record_files, vocab_file,
                                                                tmp_path):
  record_checks.check_split(record_files, "", 0.3)
  # Fractions no record's hash can miss: a serialized record's bytes (so its hash) may change
  # between processes, as protobuf writes a map's entries in no fixed order.
  for fraction, split in ((1e-9, "holds out 0 of the 100 records and trains on 100"),
                          (1 - 1e-9, "holds out 100 of the 100 records and trains on 0")):
    with pytest.raises(UserError, match=f"--eval_fraction={fraction} {split}: each side needs "
                                        "at least one") as error:
      record_checks.check_split(record_files, "", fraction)
    assert "\n" not in str(error.value)
  # Checked before training, where a held-out stream with no record would wait forever.
  config = TrainConfig(model_dir=str(tmp_path / "run"), vocab_file=vocab_file,
                       input_format="tfrecord", input_files=",".join(record_files),
                       eval_fraction=1e-9)
  with pytest.raises(UserError, match="--eval_fraction=1e-09 holds out 0 of the 100 records"):
    preparation.check_inputs(config)


# Re-masking

def _restored(batch):
  features, labels, weights = batch
  return restore(features["token_ids"], features["masked_positions"], labels["mlm"],
                 weights["mlm"]).numpy()


def test_remask_restores_the_true_tokens_and_masks_anew_each_epoch(record_files, vocab_file):
  original = _stream(record_files, vocab_file, 25)
  remasked = _stream(record_files, vocab_file, 25, remask=True)
  assert np.array_equal(original[0]["stream_position"], remasked[0]["stream_position"])
  assert np.array_equal(_restored(original), _restored(remasked))  # the same true tokens
  # The same number of predictions as the records' own (the same formula).
  assert np.array_equal(original[2]["mlm"].sum(axis=1), remasked[2]["mlm"].sum(axis=1))
  assert not np.array_equal(original[0]["masked_positions"], remasked[0]["masked_positions"])
  # Epoch 0 and epoch 1 of the same records: other masks.
  keys = remasked[0]["stream_position"]
  by_record = {}
  for row, key in enumerate(keys):
    epoch, rank, index = record_position.decode(key)
    token_ids = _restored(remasked)[row]
    by_record.setdefault(bytes(token_ids), {})[epoch] = remasked[0]["masked_positions"][row]
  twice = [masks for masks in by_record.values() if {0, 1} <= set(masks)]
  assert len(twice) > 50
  differ = sum(not np.array_equal(masks[0], masks[1]) for masks in twice)
  assert differ > 0.8 * len(twice)
  # Deterministic: the same stream again.
  again = _stream(record_files, vocab_file, 25, remask=True)
  assert np.array_equal(again[0]["token_ids"], remasked[0]["token_ids"])


def test_remask_shares_are_80_10_10(tmp_path, vocab_file):
  rng = np.random.default_rng(1)
  path = write_records(str(tmp_path / "r.tfrecord"), [
      original_record(original_instance(rng)) for _ in range(4000)])
  features, labels, weights = _in_order([path], vocab_file, remask=True)
  real = weights["mlm"] > 0
  shown = np.take_along_axis(features["token_ids"], features["masked_positions"], axis=1)[real]
  # About 7,500 predictions: a share's standard deviation is below 0.005; 0.03 is 6 of them.
  assert real.sum() > 7000
  assert np.mean(shown == MASK) == pytest.approx(0.8, abs=0.03)
  kept = np.mean(shown == labels["mlm"][real])
  # A random replacement can draw the true token (1 in 13 ordinary tokens).
  assert kept == pytest.approx(0.1 + 0.1 / 13, abs=0.03)


# Bad input: one line each

def _error(files, vocab_file, **options):
  with pytest.raises(UserError) as error:
    records_dataset(files, vocab_file, **options)
  message = str(error.value)
  assert "\n" not in message
  return message


def test_a_text_file_is_not_a_tfrecord(tmp_path, vocab_file):
  path = tmp_path / "corpus.txt"
  path.write_text("The cat sat on the mat.\nA big dog.\n")
  assert _error([str(path)], vocab_file).startswith(f"{path} is not a TFRecord file")


@pytest.mark.parametrize("compression, compress", [("GZIP", gzip.compress),
                                                   ("ZLIB", zlib.compress)])
def test_compressed_file_without_the_flag_names_the_compression(
    record_files, vocab_file, tmp_path, compression, compress):
  path = tmp_path / "c.tfrecord"
  path.write_bytes(compress(open(record_files[0], "rb").read()))
  assert record_checks.compression_of(path.read_bytes()[:2]) == compression
  assert _error([str(path)], vocab_file) == (
      f"{path} is {compression}-compressed: read it with --record_compression={compression}")


def test_plain_file_read_as_compressed(record_files, vocab_file):
  assert record_checks.compression_of(open(record_files[0], "rb").read(2)) == ""
  assert _error(record_files[:1], vocab_file, compression="GZIP") == (
      f"{record_files[0]} is not GZIP-compressed: leave out --record_compression")


def _bad_file(tmp_path, **record_options):
  rng = np.random.default_rng(2)
  records = [original_record(original_instance(rng)) for _ in range(3)]
  records.append(original_record(original_instance(rng), **record_options))
  return [write_records(str(tmp_path / "bad.tfrecord"), records)]


def test_record_without_a_feature(tmp_path, vocab_file):
  message = _error(_bad_file(tmp_path, drop=["masked_lm_weights"]), vocab_file)
  assert message == (f"record 3 of {tmp_path / 'bad.tfrecord'} lacks the feature(s) "
                     "masked_lm_weights of original BERT's records")


def test_record_with_another_length(tmp_path, vocab_file):
  message = _error(_bad_file(tmp_path, segment_ids=_int_feature([0] * (SEQ - 1))), vocab_file)
  assert message.endswith(f": segment_ids has {SEQ - 1} values where input_ids has {SEQ}")
  message = _error(_bad_file(tmp_path, seq=SEQ + 8), vocab_file)
  assert message.endswith(": input_ids has 40 values where the first record's has 32")


def test_files_of_other_lengths(record_files, tmp_path, vocab_file):
  rng = np.random.default_rng(3)
  other = write_records(str(tmp_path / "long.tfrecord"),
                        [original_record(original_instance(rng), seq=64)])
  message = _error([record_files[0], other], vocab_file)
  assert message == (f"{other} has 64 tokens and 5 predictions per record, {record_files[0]} "
                     "32 and 5")


def test_label_other_than_0_or_1(tmp_path, vocab_file):
  message = _error(_bad_file(tmp_path, next_sentence_labels=_int_feature([2])), vocab_file)
  assert message.endswith(": next_sentence_labels is 2, not 0 or 1")


def test_empty_files(record_files, tmp_path, vocab_file, caplog):
  empty = write_records(str(tmp_path / "empty.tfrecord"), [])
  assert _error([empty], vocab_file) == f"no records in 1 file(s): {empty} ..."
  with caplog.at_level(logging.WARNING, logger="bert_tf"):
    dataset = records_dataset([empty, record_files[1]], vocab_file, batch_size=5, repeat=False)
  assert f"{empty} has no records" in caplog.text
  assert sum(len(batch[1]["nsp"]) for batch in dataset) == 25


def test_unknown_compression(record_files, vocab_file):
  assert _error(record_files, vocab_file, compression="BZIP2") == (
      "unknown record compression 'BZIP2': use GZIP or ZLIB")


# The vocabulary must fit the records

def _vocabulary(tmp_path, tokens):
  path = tmp_path / "other_vocab.txt"
  path.write_text("\n".join(tokens) + "\n")
  return str(path)


def test_a_smaller_vocabulary(record_files, tmp_path):
  path = _vocabulary(tmp_path, TOKENS[:12])
  assert _error(record_files, path).startswith(
      f"the records hold id 17, outside vocabulary {path} (12 tokens)")


def test_another_cls(record_files, tmp_path):
  tokens = TOKENS.copy()
  tokens[2], tokens[5] = tokens[5], tokens[2]  # [CLS] at id 5
  path = _vocabulary(tmp_path, tokens)
  assert _error(record_files, path) == (
      f"the records start with id 2 (the), not vocabulary {path}'s [CLS] (id 5)")


def test_another_sep(record_files, tmp_path):
  tokens = TOKENS.copy()
  tokens[3], tokens[17] = tokens[17], tokens[3]
  path = _vocabulary(tmp_path, tokens)
  assert _error(record_files, path) == (
      f"the records' segments do not end with vocabulary {path}'s [SEP] (id 17)")


def test_another_mask(record_files, tmp_path):
  tokens = TOKENS.copy()
  tokens[4], tokens[12] = tokens[12], tokens[4]
  path = _vocabulary(tmp_path, tokens)
  assert _error(record_files, path).startswith(
      f"vocabulary {path}'s [MASK] (id 12) is at ")


def test_words_split_otherwise(record_files, tmp_path):
  # The same special tokens and size, the pieces in another order: words of two pieces
  # ("cat ##s") now read as other pieces that WordPiece would not have made.
  tokens = TOKENS[:5] + ["cats", "cat", "dog", "sat", "on", "mat", "run", "a", "big", "##s",
                         "runs", "doggy", "."]
  path = _vocabulary(tmp_path, tokens)
  message = _error(record_files, path)
  assert message.startswith(f"vocabulary {path} splits ") and message.endswith(
      "of the records' words into other pieces: the records were made with another "
      "vocabulary (or a cased one)")


def test_wordpieces():
  known = {"run", "##s", "##ning", "runs", "un"}
  assert record_checks.wordpieces("runs", known) == ["runs"]
  assert record_checks.wordpieces("running", known) == ["run", "##ning"]
  assert record_checks.wordpieces("xyz", known) is None

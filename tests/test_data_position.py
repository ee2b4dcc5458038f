"""Stream positions and the data position: a stream started at a recorded position is the
rest of the uninterrupted stream, whatever the position, at the cost of at most one piece."""

import json
import time

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.data import piece_deal, stream_position
from bert_tf.data.data_position import DataPosition, read_layout, strip_stream_positions
from helpers import run

BATCH, SEQ, PREDICTIONS = 8, 64, 10
# Pieces of 60 kB cut the 420 kB built-in corpus into 7 or 8: several pieces per epoch, with
# one shard and with two. Small shuffle buffers keep each piece's first example cheap.
SMALL = dict(seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, batch_size=BATCH,
             piece_bytes=60_000, document_shuffle_buffer=50, example_shuffle_buffer=100)


def test_key_round_trip():
  for epoch, rank, example in ((0, 0, 0), (1, 2, 3), (7, 0, stream_position.MAX_EXAMPLES - 1),
                               (stream_position.MAX_EPOCHS - 1,
                                stream_position.MAX_PIECES - 1, 12345)):
    key = stream_position.encode(epoch, rank, example)
    assert stream_position.decode(key) == (epoch, rank, example)
    # In-graph encoding (int64 tensors) gives the same key.
    assert int(stream_position.encode(tf.constant(epoch, tf.int64), tf.constant(rank, tf.int64),
                                      tf.constant(example, tf.int64))) == key
  assert stream_position.decode(stream_position.encode(3, 4, 5) + 1) == (3, 4, 6)
  # Keys grow along the stream: example, then piece, then epoch.
  assert (stream_position.encode(0, 0, stream_position.MAX_EXAMPLES - 1)
          < stream_position.encode(0, 1, 0)
          < stream_position.encode(1, 0, 0))
  for bad in (-1, stream_position.MAX_EPOCHS * stream_position.MAX_PIECES
              * stream_position.MAX_EXAMPLES):
    with pytest.raises(ValueError):
      stream_position.decode(bad)


def _rows(batch):
  """The examples of a batch, as rows of numpy arrays."""
  features, labels, weights = batch
  arrays = {**{f"x/{k}": v.numpy() for k, v in features.items()},
            **{f"y/{k}": v.numpy() for k, v in labels.items()},
            **{f"w/{k}": v.numpy() for k, v in weights.items()}}
  return [{k: v[i] for k, v in arrays.items()} for i in range(BATCH)]


def _examples(dataset, num_batches):
  """The examples of the first `num_batches` batches, as rows of numpy arrays."""
  return [row for batch in dataset.take(num_batches) for row in _rows(batch)]


def _same(rows, reference):
  return len(rows) == len(reference) and all(
      set(a) == set(b) and all(np.array_equal(a[k], b[k]) for k in a)
      for a, b in zip(rows, reference))


@pytest.fixture(scope="module", params=[(1, 0), (2, 1)], ids=["one_shard", "second_of_two"])
def reference(request, corpus_pattern, vocab_file, data_dir):
  """The uninterrupted stream of one shard into its second epoch, with positions: to the
  batch that starts the second epoch, and three batches more."""
  num_shards, shard_index = request.param
  options = dict(SMALL, num_shards=num_shards, shard_index=shard_index, data_dir=data_dir,
                 with_positions=True, seed=5)
  rows = []
  dataset = iter(bert_tf.pretraining_dataset(corpus_pattern, vocab_file, **options))
  while not rows or stream_position.decode(rows[-1]["x/stream_position"])[0] < 1:
    rows.extend(_rows(next(dataset)))
  for _ in range(3):
    rows.extend(_rows(next(dataset)))
  return options, rows


@pytest.mark.e2e
def test_stream_resumes_after_any_position(reference, corpus_pattern, vocab_file):
  options, rows = reference
  keys = [int(row["x/stream_position"]) for row in rows]
  places = [stream_position.decode(key) for key in keys]
  assert keys == sorted(keys) and len(set(keys)) == len(keys)
  assert len({(epoch, rank) for epoch, rank, _ in places}) >= 4  # several pieces
  assert places[0] == (0, 0, 0)
  piece_ends = [i for i in range(len(places) - 1) if places[i][:2] != places[i + 1][:2]]
  second_epoch = next(i for i, place in enumerate(places) if place[0] == 1)
  resumed_after = {
      "the last example of a piece": piece_ends[1],
      "a batch holding a piece boundary": (piece_ends[2] // BATCH + 1) * BATCH - 1,
      "the end of the first epoch": second_epoch - 1,
      "a batch in the second epoch": (second_epoch // BATCH + 1) * BATCH - 1,
  }
  for name, last in resumed_after.items():
    resumed = _examples(bert_tf.pretraining_dataset(
        corpus_pattern, vocab_file, start_position=keys[last] + 1, **options), 2)
    assert _same(resumed, rows[last + 1:last + 1 + 2 * BATCH]), name


def _first_batch_seconds(dataset):
  """(the first batch of `dataset`, the seconds its iterator took to give it)."""
  start = time.perf_counter()
  batch = next(iter(dataset))
  return batch, time.perf_counter() - start


@pytest.fixture(scope="module")
def plain(corpus_pattern, vocab_file, data_dir):
  """The stream without positions from its beginning: (the dataset, its first batch, the
  seconds that batch took); the first batch of both tests below."""
  dataset = bert_tf.pretraining_dataset(corpus_pattern, vocab_file, data_dir=data_dir,
                                        with_positions=False, **SMALL)
  return (dataset, *_first_batch_seconds(dataset))


@pytest.mark.e2e
def test_positions_only_when_asked(plain, corpus_pattern, vocab_file, data_dir):
  plain, (plain_features, *plain_rest), _ = plain
  keyed = bert_tf.pretraining_dataset(corpus_pattern, vocab_file, data_dir=data_dir,
                                      with_positions=True, **SMALL)
  assert stream_position.FEATURE not in plain.element_spec[0]
  assert keyed.element_spec[0][stream_position.FEATURE].dtype == tf.int64
  keyed_features, *keyed_rest = next(iter(keyed))
  stripped = strip_stream_positions(keyed_features, None)
  assert _same(*([{"x": v} for v in tf.nest.flatten(s)] for s in (
      (plain_features, plain_rest), (stripped, keyed_rest))))


@pytest.mark.e2e
def test_time_to_first_batch_does_not_grow_with_the_position(plain, corpus_pattern, vocab_file,
                                                              data_dir):
  def seconds(position):
    return _first_batch_seconds(bert_tf.pretraining_dataset(
        corpus_pattern, vocab_file, data_dir=data_dir, start_position=position, **SMALL))[1]
  # The best of two starts each: `plain`'s first batch is one from the beginning.
  beginning = min(plain[2], seconds(stream_position.BEGINNING))
  # Replaying 100,000 epochs would take hours; starting there costs one piece (noisy timing
  # on a shared machine: a generous bound).
  far = min(seconds(stream_position.encode(100_000, 3, 50)) for _ in range(2))
  assert far < 3 * beginning + 2, (beginning, far)


def test_default_strategy_records_the_last_example():
  position = DataPosition(1)
  assert position.start(1, 0) == stream_position.BEGINNING
  strip_stream_positions({stream_position.FEATURE: tf.constant([4, 9, 7], tf.int64)}, position)
  assert position.start(1, 0) == 10
  with position.kept_across_restore():
    position.last_consumed.assign([2])
  assert position.start(1, 0) == 10


MIRRORED = r"""
import json
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
import keras
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.data.data_position import DataPosition

CONFIG = BertConfig.from_preset("bert_tiny", vocab_size=60, max_position_embeddings=16,
                                num_hidden_layers=1)
REPLICA_BATCH, SEQ, SLOTS = 4, 16, 3
rng = np.random.default_rng(0)

def pipeline(context=None):
  # Batches of consecutive stream positions 0, 1, 2, ...: the last example a step trains on
  # is the last of its last replica's batch.
  def example(key):
    features = {"token_ids": tf.fill([SEQ], 7), "segment_ids": tf.zeros([SEQ], tf.int32),
                "padding_mask": tf.ones([SEQ], tf.int32),
                "masked_positions": tf.constant([1, 2, 3]), "stream_position": key}
    return (features, {"mlm": tf.constant([5, 6, 7]), "nsp": tf.constant(1)},
            {"mlm": tf.ones([SLOTS]), "nsp": tf.constant(1.0)})
  return tf.data.Dataset.range(10**6).map(example).batch(REPLICA_BATCH)

results = {}
for name, strategy, steps_per_execution in (
    ("mirrored", tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"]), 1),
    ("one_device_four_steps_per_execution", tf.distribute.get_strategy(), 4)):
  with strategy.scope():
    model = pretraining_model(CONFIG)
    compile_for_pretraining(model, keras.optimizers.SGD(0.01),
                            steps_per_execution=steps_per_execution)
    model.data_position = DataPosition(strategy.num_replicas_in_sync)
  data = (strategy.distribute_datasets_from_function(pipeline)
          if strategy.num_replicas_in_sync > 1 else pipeline())
  model.fit(data, epochs=1, steps_per_epoch=8, verbose=0)
  results[name] = {"recorded": model.data_position.last_consumed.numpy().tolist(),
                   "start": model.data_position.start(1, 0),
                   "steps": int(model.optimizer.iterations.numpy())}
print(json.dumps(results))
"""


@pytest.mark.e2e
def test_replicas_record_their_pipeline_position():
  result = run(["-c", MIRRORED])
  assert result.returncode == 0, result.stderr[-3000:]
  results = json.loads(result.stdout.strip().splitlines()[-1])
  # 8 steps of 2 replicas x 4 examples from one pipeline: replica 0 last took examples 56-59,
  # replica 1 examples 60-63; the pipeline resumes at 64.
  assert results["mirrored"] == {"recorded": [59, 63], "start": 64, "steps": 8}
  # 8 updates of 4 examples, run 4 per execution: counted per update.
  assert results["one_device_four_steps_per_execution"] == {
      "recorded": [31], "start": 32, "steps": 8}


def test_positions_and_their_layout_are_read_whatever_the_number_of_replicas(tmp_path):
  """A checkpoint's positions of two replicas restore into a run of one as `restored` (its
  variable left as it was), with their layout; one written before layouts (the variable saved
  itself) restores alike, without a layout."""
  two = DataPosition(2, num_pipelines=2)
  two.last_consumed.assign([7, 9])
  two.layout = piece_deal.Layout(2, 0, ((piece_deal.Unread(0, 3, 2, 5),), ()))
  saved = tf.train.Checkpoint(data_position=two.saved, data_layout=two.saved_layout).save(
      str(tmp_path / "new"))
  legacy = tf.train.Checkpoint(data_position=tf.Variable([4, 6], dtype=tf.int64)).save(
      str(tmp_path / "legacy"))
  for path, layout in ((saved, two.layout), (legacy, None)):
    one = DataPosition(1)
    tf.train.Checkpoint(data_position=one.saved).restore(path).expect_partial()
    assert one.restored.tolist() == ([7, 9] if layout else [4, 6])
    assert one.last_consumed.numpy().tolist() == [-1]
    assert read_layout(path) == layout
  same = DataPosition(2, num_pipelines=2)
  tf.train.Checkpoint(data_position=same.saved).restore(saved).expect_partial()
  assert same.last_consumed.numpy().tolist() == [7, 9]
  assert same.saved_by_other_pipelines(saved) is False
  assert DataPosition(1).saved_by_other_pipelines(saved) is True

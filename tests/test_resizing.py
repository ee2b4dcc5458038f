"""A run that goes on with another number of workers or replicas: two workers stopped mid-epoch
and re-run as one process of two devices (`mirrored`), that re-run on one device, and that on
two workers. Each reaches its final step, and no document of the epoch is read twice or
skipped: the documents the runs trained on, by epoch (found from the data positions their
checkpoints recorded), against the uninterrupted stream's epoch.

The same count, without training, for the two other kinds of stream: the corpus cut into two
groups mixed by weight, and the corpus's examples written as original BERT's records. Their
input pipelines are stopped mid-epoch, their positions saved in a checkpoint and dealt to
another number of pipelines by `resizing.carry_on`, and the new pipelines' streams read on.

The corpus is 96 documents of one sentence each, MLM only, so that each document makes one
example; pieces of 1,000 bytes make about nine pieces, four or five per worker.
"""

import collections
import glob
import itertools
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import input_plan, piece_deal, record_position, records, stream_position
from bert_tf.data.data_position import DataPosition, next_keys, read_layout
from bert_tf.data.input_plan import Start, StreamStart
from bert_tf.data.pipeline import pretraining_dataset
from bert_tf.data.record_dataset import records_dataset
from bert_tf.data.tokenization import Vocabulary
from bert_tf.training import resizing
from bert_tf.training.train_settings import TrainConfig
from helpers import finish, start, start_workers

BEGINNING = Start()  # every stream of a pipeline at its first example

DOCUMENTS, BATCH = 96, 8
# Every document whole in its example (no shorter targets, none truncated): the same tokens in
# every epoch.
STREAM = dict(seq_length=64, max_predictions_per_seq=10, nsp=False, short_seq_prob=0.0,
              piece_bytes=1000, seed=3)

# Trains the one-layer bert_tiny on the corpus to the steps given, on the strategies given in
# turn, one run after the other in this process (`mirrored`: over two logical CPUs).
TRAIN = r"""
import json, logging, sys
logging.basicConfig(level=logging.INFO)
import tensorflow as tf
data_dir, vocab_file, model_dir, corpus, runs, settings = sys.argv[1:7]
if "mirrored" in runs:
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(
      cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
from bert_tf.runtime import strategy as strategy_lib
from bert_tf.training.trainer import TrainConfig, train
from helpers import one_layer_config

def two_cpus(name, *where):
  return {"mirrored": lambda: tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"]),
          "multi_worker": tf.distribute.MultiWorkerMirroredStrategy,
          "default": tf.distribute.get_strategy}[name]()

strategy_lib.new_strategy = two_cpus
for run in runs.split(","):
  strategy, steps = run.split(":")
  train(TrainConfig(data_dir=data_dir, vocab_file=vocab_file, model_dir=model_dir,
                    input_files=corpus, strategy=strategy, config=one_layer_config(vocab_file),
                    train_steps=int(steps), checkpoint_every=100, keep_checkpoints=9,
                    warmup_steps=1, eval_steps=1, verbose=0, serving_export=False,
                    **json.loads(settings)))
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, data_dir):
  """96 documents of one sentence each, from the built-in corpus."""
  sentences = []
  for path in sorted(glob.glob(os.path.join(data_dir, "**", "*.txt"), recursive=True)):
    for line in open(path, encoding="utf-8"):
      line = line.strip()
      if 40 <= len(line) <= 100 and line.isascii() and line not in sentences:
        sentences.append(line)
  assert len(sentences) >= DOCUMENTS
  path = tmp_path_factory.mktemp("resizing") / "corpus.txt"
  path.write_text("".join(sentence + "\n\n" for sentence in sentences[:DOCUMENTS]))
  return str(path)


def train(model_dir, data_dir, vocab_file, corpus, runs, workers=1):
  """Runs TRAIN (`runs`: strategy:steps, ...), on `workers` workers; their stderr."""
  args = [data_dir, vocab_file, model_dir, corpus, runs,
          json.dumps({"global_batch_size": BATCH, **STREAM})]
  if workers == 1:
    return finish([start(["-c", TRAIN, *args])])
  return finish(start_workers(TRAIN, args, count=workers))


def documents(example, pad_id):
  """The document an example was made of: its tokens, with the masked ones put back."""
  features, labels, weights = example
  ids = features["token_ids"][0].copy()
  for position, label, weight in zip(features["masked_positions"][0], labels["mlm"][0],
                                     weights["mlm"][0]):
    if weight > 0:
      ids[position] = label
  return tuple(ids[ids != pad_id])


def trained(corpus, vocabulary, checkpoint):
  """(epoch, document) of each example the input pipelines gave up to the data position of
  `checkpoint`: from their beginning, or from the first of the pieces they carry on."""
  reader = tf.train.load_checkpoint(checkpoint)
  layout = read_layout(checkpoint)
  ends = next_keys(reader.get_tensor("data_position/.ATTRIBUTES/VARIABLE_VALUE"),
                   layout.pipelines)
  found = []
  for pipeline in range(layout.pipelines):
    carried = layout.carried_by(pipeline)
    start_key = (stream_position.BEGINNING if carried is None
                 else piece_deal.first_key(layout.carried_epoch, carried))
    stream = pretraining_dataset(
        corpus, vocabulary, batch_size=1, num_shards=layout.pipelines, shard_index=pipeline,
        start_position=Start((StreamStart(start_key, carried or (), layout.carried_epoch),)),
        with_positions=True, **STREAM)
    for features, labels, weights in stream.as_numpy_iterator():
      key = int(features.pop(stream_position.FEATURE)[0])
      if key >= ends[pipeline]:
        break
      epoch, rank, _ = stream_position.decode(key)
      if carried and epoch <= layout.carried_epoch:
        epoch = carried[rank].epoch
      found.append((epoch, documents((features, labels, weights), vocabulary.pad_id)))
  return found


def assert_each_document_once(found, corpus, vocabulary):
  """Epoch 0, which the runs complete, holds the uninterrupted stream's epoch 0 exactly; epoch
  1, which they begin, no document twice."""
  epoch = pretraining_dataset(corpus, vocabulary, batch_size=1, repeat=False, **STREAM)
  reference = collections.Counter(documents(e, vocabulary.pad_id)
                                  for e in epoch.as_numpy_iterator())
  assert sum(reference.values()) == DOCUMENTS and max(reference.values()) == 1
  by_epoch = collections.defaultdict(collections.Counter)
  for e, document in found:
    by_epoch[e][document] += 1
  assert sorted(by_epoch) == [0, 1]
  assert by_epoch[0] == reference
  assert max(by_epoch[1].values()) == 1 and set(by_epoch[1]) <= set(reference)


def checkpoint(model_dir, step):
  return os.path.join(model_dir, "checkpoints", f"ckpt-{step}")


@pytest.mark.e2e
def test_a_run_goes_on_with_other_numbers_of_workers_and_replicas(tmp_path, data_dir,
                                                                 vocab_file, corpus):
  """Two workers to step 3; one process of two devices (`mirrored`) to step 6, then of one to
  step 9; two workers to step 20: each run stops in the first epoch, and the last runs well
  into the second."""
  model_dir = str(tmp_path / "run")
  train(model_dir, data_dir, vocab_file, corpus, "multi_worker:3", workers=2)
  one = train(model_dir, data_dir, vocab_file, corpus, "mirrored:6,default:9")[0]
  assert "Resumed from the checkpoint at step 3" in one
  assert "2 replicas -> 2 (input pipelines 2 -> 1): the " in one
  assert "Resumed from the checkpoint at step 6" in one
  assert "2 replicas -> 1 (input pipelines 1 -> 1): the " in one
  two = train(model_dir, data_dir, vocab_file, corpus, "multi_worker:20", workers=2)
  for stderr in two:
    assert "Resumed from the checkpoint at step 9" in stderr
    assert "1 replica -> 2 (input pipelines 1 -> 2): the " in stderr
  # The other worker's own latest checkpoint is of step 3: it takes the chief's.
  assert "ckpt-9: the chief's was saved by another number of workers" in two[1]
  # One vocabulary for every stream: their per-window functions are traced once.
  vocabulary, found = Vocabulary(vocab_file), []
  for step, steps in ((3, 3), (6, 3), (9, 3), (20, 11)):
    run = trained(corpus, vocabulary, checkpoint(model_dir, step))
    assert len(run) == steps * BATCH
    found += run
  assert_each_document_once(found, corpus, vocabulary)
  # Both workers end on the same weights.
  worker = os.path.join(model_dir, "workers", "worker-1")
  for name, shape in tf.train.list_variables(checkpoint(model_dir, 20)):
    if name.startswith("model/") and shape:
      np.testing.assert_array_equal(tf.train.load_variable(checkpoint(model_dir, 20), name),
                                    tf.train.load_variable(checkpoint(worker, 20), name),
                                    err_msg=name)


# --- Mixtures and records, without training -------------------------------------------------

WEIGHTS = (3, 1)


def saved(tmp_path, name, last_keys, pipelines):
  """A checkpoint of the data position of len(last_keys) replicas in `pipelines` pipelines
  whose last examples' keys are `last_keys` (of a mixture: a vector each), laid out as
  `pipelines` fresh ones: its path."""
  width = None if np.ndim(last_keys) == 1 else len(last_keys[0])
  position = DataPosition(len(last_keys), pipelines, width)
  position.last_consumed.assign(np.array(last_keys, np.int64))
  return tf.train.Checkpoint(data_position=position.saved,
                             data_layout=position.saved_layout).write(str(tmp_path / name))


def resumed(path, plan, pipelines, width=None):
  """The position of `path` restored by a run of `pipelines` replicas in as many pipelines,
  carried on (`resizing.carry_on`), and the line that says what changed."""
  position = DataPosition(pipelines, pipelines, width)
  tf.train.Checkpoint(data_position=position.saved).read(path).expect_partial()
  return position, resizing.carry_on(position, path, plan)


def mixed_examples(groups, vocabulary, pipeline, pipelines, start=BEGINNING):
  """(group, epoch, document, positions) of a mixed pipeline's examples; `epoch` is the one
  of the group's stream the example's piece was read in (a carried piece's own)."""
  carried = [start.stream(group).carried for group in range(len(WEIGHTS))]
  epochs = [start.stream(group).carried_epoch for group in range(len(WEIGHTS))]
  stream = pretraining_dataset(groups, vocabulary, batch_size=1, weights=WEIGHTS,
                               num_shards=pipelines, shard_index=pipeline, with_positions=True,
                               with_pairs=True, start_position=start, **STREAM)
  for features, labels, weights, facts in stream.as_numpy_iterator():
    positions = features.pop(stream_position.FEATURE)[0]
    group = int(facts["group"][0])
    epoch, rank, _ = stream_position.decode(positions[group])
    if carried[group] and epoch <= epochs[group]:
      epoch = carried[group][rank].epoch
    yield group, epoch, documents((features, labels, weights), vocabulary.pad_id), positions


@pytest.fixture(scope="module")
def groups(corpus, tmp_path_factory):
  """The corpus's documents in two groups: its first 48 and its last 48, --input_files."""
  text = open(corpus, encoding="utf-8").read().split("\n\n")[:DOCUMENTS]
  directory = tmp_path_factory.mktemp("groups")
  paths = []
  for name, part in (("first", text[:DOCUMENTS // 2]), ("last", text[DOCUMENTS // 2:])):
    paths.append(directory / f"{name}.txt")
    paths[-1].write_text("".join(sentence + "\n\n" for sentence in part))
  return ",".join(map(str, paths))


def test_a_mixture_goes_on_in_fewer_pipelines_group_by_group(tmp_path, groups, data_dir,
                                                             vocab_file):
  """Two pipelines of a mixture stopped in each group's epoch 0, dealt to one: each group's
  epoch 0 is read whole, no document twice, and its next epoch no document twice; the new
  pipeline draws with the weights, from numbers no old pipeline had drawn; stopped and resumed
  on one again, its stream goes on exactly."""
  vocabulary = Vocabulary(vocab_file)
  plan = input_plan.from_settings(TrainConfig(
      input_files=groups, input_weights="3,1", data_dir=data_dir,
      piece_bytes=STREAM["piece_bytes"], seed=STREAM["seed"]), vocabulary)
  found, last = [], []
  for pipeline, stop in ((0, 14), (1, 9)):
    examples = list(itertools.islice(mixed_examples(groups, vocabulary, pipeline, 2), stop))
    found += [(group, epoch, document) for group, epoch, document, _ in examples]
    last.append(examples[-1][3])
  path = saved(tmp_path, "two", last, 2)
  one, line = resumed(path, plan, 1, width=len(WEIGHTS) + 1)
  assert line.startswith("2 replicas -> 1 (input pipelines 2 -> 1): the ") and (
      "of the groups' epochs 0, 0" in line), line
  assert len(one.layout.groups) == len(WEIGHTS)
  draws = max(keys[-1] for keys in last) + 1
  mine = []
  for group, epoch, document, positions in mixed_examples(groups, vocabulary, 0, 1,
                                                          start=one.reading(1, 0)):
    mine.append((group, epoch, document, positions))
    if all(key >= 0 and stream_position.decode(key)[0] >= 2 for key in positions[:-1]):
      break  # every group is read past the pieces carried and its next epoch
  assert mine[0][3][-1] == draws  # the first draw's number
  chosen = collections.Counter(group for group, *_ in mine)
  assert abs(chosen[0] / len(mine) - WEIGHTS[0] / sum(WEIGHTS)) < 0.1
  found += [example[:3] for example in mine]
  for group, files in enumerate(groups.split(",")):
    reference = collections.Counter(tokenized(files, vocabulary))
    by_epoch = collections.defaultdict(collections.Counter)
    for g, e, document in found:
      if g == group:
        by_epoch[e][document] += 1
    assert by_epoch[0] == reference, group
    assert max(by_epoch[1].values()) == 1 and set(by_epoch[1]) <= set(reference)
  # Stopped after 5 examples of the new pipeline, resumed on one: as if uninterrupted.
  again = saved_after_deal(tmp_path, one, [mine[4][3]])
  same, line = resumed(again, plan, 1, width=len(WEIGHTS) + 1)
  assert line == "" and same.layout == one.layout
  resumed_examples = list(itertools.islice(
      mixed_examples(groups, vocabulary, 0, 1, start=same.reading(1, 0)), 4))
  for (group, epoch, document, positions), expected in zip(resumed_examples, mine[5:9],
                                                           strict=True):
    assert (group, epoch, document) == expected[:3]
    np.testing.assert_array_equal(positions, expected[3])


def tokenized(path, vocabulary):
  """The token ids of each document of `path` (one sentence each) as its example holds them:
  [CLS] sentence [SEP]."""
  sentences = [s for s in open(path, encoding="utf-8").read().split("\n\n") if s.strip()]
  tokens = vocabulary.tokenizer(True).tokenize(tf.constant(sentences)).merge_dims(1, -1)
  return [(vocabulary.cls_id, *ids, vocabulary.sep_id) for ids in tokens.to_list()]


def saved_after_deal(tmp_path, position, last_keys):
  """`position` (after a deal) at the last keys given, saved with its layout: its path."""
  position.last_consumed.assign(np.array(last_keys, np.int64))
  return tf.train.Checkpoint(data_position=position.saved,
                             data_layout=position.saved_layout).write(str(tmp_path / "again"))


@pytest.fixture(scope="module")
def record_files(corpus, vocab_file, tmp_path_factory):
  """The corpus's epoch as original BERT's records, one a document, in three files of 32; and
  the documents written, counted."""
  epoch = pretraining_dataset(corpus, vocab_file, batch_size=32, repeat=False, **STREAM)
  directory, written = tmp_path_factory.mktemp("records"), collections.Counter()
  pad_id = Vocabulary(vocab_file).pad_id
  for number, batch in enumerate(epoch.as_numpy_iterator()):
    with tf.io.TFRecordWriter(str(directory / f"part-{number}.tfrecord")) as writer:
      for record in records.serialize(*batch).numpy():
        writer.write(record)
    written.update(documents(tf.nest.map_structure(lambda values, i=i: values[i:i + 1], batch),
                             pad_id) for i in range(len(batch[1]["mlm"])))
  assert sum(written.values()) == DOCUMENTS and max(written.values()) == 1
  return str(directory / "*.tfrecord"), written


def record_examples(pattern, vocabulary, pipeline, pipelines, shuffle=True,
                    start=BEGINNING):
  """(epoch, document, key) of a pipeline's records; `epoch` as `mixed_examples`'."""
  carried, carried_epoch = start.stream(0).carried, start.stream(0).carried_epoch
  stream = records_dataset(pattern, vocabulary, batch_size=1, seed=STREAM["seed"],
                           num_shards=pipelines, shard_index=pipeline, with_positions=True,
                           shuffle=shuffle, start_position=start)
  for features, labels, weights in stream.as_numpy_iterator():
    key = int(features.pop(record_position.FEATURE)[0])
    epoch, rank, _ = record_position.decode(key)
    if carried and epoch <= carried_epoch:
      epoch = carried[rank].epoch
    yield epoch, documents((features, labels, weights), vocabulary.pad_id), key


def test_records_go_on_in_more_then_fewer_pipelines(tmp_path, record_files, data_dir,
                                                    vocab_file):
  """Records read by two pipelines (a file or two each) stopped in epoch 0, dealt to four
  (fewer files than pipelines: each reads its share of every file in its own epochs), stopped
  in epoch 1, dealt to one: epochs 0 and 1 each hold every record once."""
  record_files, written = record_files
  vocabulary = Vocabulary(vocab_file)
  plan = input_plan.from_settings(TrainConfig(
      input_files=record_files, input_format="tfrecord", data_dir=data_dir,
      seed=STREAM["seed"]), vocabulary)
  found, last = [], []
  for pipeline, stop in ((0, 40), (1, 10)):
    examples = list(itertools.islice(record_examples(record_files, vocabulary, pipeline, 2),
                                     stop))
    found += [example[:2] for example in examples]
    last.append(examples[-1][2])
  path = saved(tmp_path, "two", last, 2)
  four, line = resumed(path, plan, 4)
  assert line.startswith("2 replicas -> 4 (input pipelines 2 -> 4): the 2 parts of record "
                         "files left unread of epoch 0 (2 begun)"), line
  last = []
  for pipeline in range(4):
    examples = []
    for example in record_examples(record_files, vocabulary, pipeline, 4,
                                   start=four.reading(4, pipeline)):
      examples.append(example)
      if example[0] == 1 and len(examples) > 3 + pipeline * 2:
        break
    found += [example[:2] for example in examples]
    last.append(examples[-1][2])
  one, line = resumed(saved_after_deal(tmp_path, four, last), plan, 1)
  assert line.startswith("4 replicas -> 1 (input pipelines 4 -> 1): "), line
  for example in record_examples(record_files, vocabulary, 0, 1, start=one.reading(1, 0)):
    if example[0] == 2:
      break
    found.append(example[:2])
  assert by_epoch_of(found) == {0: written, 1: written}


def by_epoch_of(found):
  by_epoch = collections.defaultdict(collections.Counter)
  for epoch, document in found:
    by_epoch[epoch][document] += 1
  return by_epoch


def test_unshuffled_records_go_on_in_fewer_pipelines(tmp_path, record_files, data_dir,
                                                     vocab_file):
  """Unshuffled records (each pipeline interleaves its files) read by two pipelines, stopped
  in epoch 0, dealt to one: each file's records not yet read are carried on, as written;
  epoch 0 holds every record once. Stopped among them and resumed on one: as uninterrupted."""
  record_files, written = record_files
  vocabulary = Vocabulary(vocab_file)
  plan = input_plan.from_settings(TrainConfig(
      input_files=record_files, input_format="tfrecord", data_dir=data_dir,
      seed=STREAM["seed"], shuffle_records=False), vocabulary)
  found, last = [], []
  for pipeline, stop in ((0, 21), (1, 10)):
    examples = list(itertools.islice(
        record_examples(record_files, vocabulary, pipeline, 2, shuffle=False), stop))
    found += [example[:2] for example in examples]
    last.append(examples[-1][2])
  one, line = resumed(saved(tmp_path, "two", last, 2), plan, 1)
  # Pipeline 0 leaves 21 of its two files' 64, 11 of one and 10 of the other; pipeline 1 10.
  assert line.startswith("2 replicas -> 1 (input pipelines 2 -> 1): the 3 parts of record "
                         "files left unread of epoch 0 (3 begun)"), line
  mine = []
  for example in record_examples(record_files, vocabulary, 0, 1, shuffle=False,
                                 start=one.reading(1, 0)):
    if example[0] == 1:
      break
    mine.append(example)
  assert by_epoch_of(found + [example[:2] for example in mine]) == {0: written}
  again = saved_after_deal(tmp_path, one, [mine[29][2]])  # in the second part carried
  same, line = resumed(again, plan, 1)
  assert line == "" and same.layout == one.layout
  resumed_examples = itertools.islice(record_examples(
      record_files, vocabulary, 0, 1, shuffle=False, start=same.reading(1, 0)), 3)
  assert list(resumed_examples) == mine[30:33]

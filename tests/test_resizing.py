"""A run that goes on with another number of workers or replicas: two workers stopped mid-epoch
and re-run as one process of two devices (`mirrored`), that re-run on one device, and that on
two workers. Each reaches its final step, and no document of the epoch is read twice or
skipped: the documents the runs trained on, by epoch (found from the data positions their
checkpoints recorded), against the uninterrupted stream's epoch.

The corpus is 96 documents of one sentence each, MLM only, so that each document makes one
example; pieces of 1,000 bytes make about nine pieces, four or five per worker.
"""

import collections
import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import piece_deal, stream_position
from bert_tf.data.data_position import next_keys, read_layout
from bert_tf.data.pipeline import pretraining_dataset
from bert_tf.data.tokenization import Vocabulary
from helpers import finish, start, start_workers

pytestmark = pytest.mark.e2e

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
        start_position=start_key, with_positions=True,
        **({"carried": carried, "carried_epoch": layout.carried_epoch} if carried else {}),
        **STREAM)
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

"""`--strategy=multi_worker`: two worker processes on 127.0.0.1 (TF_CONFIG) train together;
launched as Slurm tasks (`--cluster=slurm`, Slurm's variables) or as the pods of the shipped
Kubernetes manifest (`--cluster=kubernetes`, on a stand-in node: tests/pods.py), they train to
the same weights.

Both must finish with identical weights, each reading its own input shard (none of the
examples of one shard is in the other), the chief writing `model_dir` and the other worker
its own subdirectory of it; the chief's serving SavedModel verifies against its weights
(checked here once the workers are done, forked from the warm Python, rather than by the chief
in a fresh TensorFlow beside the other worker). And their updates
are the ones a single process makes on the global batches (shard 0's batch and shard 1's
together), from the chief's first checkpoint: to 1e-4 of the largest change (AdamW, as in
test_global_batch.py; dropout off).
"""

import json
import os
import pickle
import time

import numpy as np
import pytest
import tensorflow as tf

import pods
from bert_tf.export.formats import verify
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.runtime.optimization import create_optimizer
from bert_tf.serving.trained import load_trained
from helpers import (
  TRAIN_AS_WORKER,
  finish,
  one_layer_config,
  start_slurm_workers,
  start_workers,
  weights,
)

pytestmark = pytest.mark.e2e

SETTINGS = dict(dropout=0.0, seq_length=64, max_predictions_per_seq=10, global_batch_size=8,
                train_steps=4, checkpoint_every=2, eval_steps=2, skip_verify=True)
WORKER = TRAIN_AS_WORKER + f"train_as_worker(**{SETTINGS!r})" + r"""
import json, os
import numpy as np
# The examples of this worker's shard, as the trainer's input pipeline makes them.
from bert_tf.data.pipeline import pretraining_dataset
task = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
shard = pretraining_dataset("builtin", vocab_file, seq_length=64, max_predictions_per_seq=10,
                            batch_size=4, seed=0, num_shards=2, shard_index=task,
                            data_dir=data_dir)
batches = list(shard.take(20).as_numpy_iterator())
np.save(os.path.join(model_dir, f"shard-{task}.npy"),
        np.concatenate([features["token_ids"] for features, _, _ in batches]))
import pickle
with open(os.path.join(model_dir, f"batches-{task}.pickle"), "wb") as f:
  pickle.dump(batches[:4], f)  # the 4 steps' batches
"""


def single_process_update(chief_dir, model_dir):
  """(weights before, weights after) the run's 4 steps in this process, on global batches made
  of each worker's shard's batches, from the chief's step-0 checkpoint."""
  shards = [pickle.load(open(os.path.join(model_dir, f"batches-{i}.pickle"), "rb"))
            for i in range(2)]
  steps = [tf.nest.map_structure(lambda *parts: np.concatenate(parts), *batches)
           for batches in zip(*shards)]  # [steps] of (features, labels, weights), 8 examples
  data = tf.data.Dataset.from_tensor_slices(
      tf.nest.map_structure(lambda *batches: np.stack(batches), *steps))
  run = json.load(open(os.path.join(chief_dir, "train_config.json")))
  model = pretraining_model(BertConfig.from_json_file(os.path.join(chief_dir,
                                                                   "bert_config.json")))
  tf.train.Checkpoint(model=model).read(
      os.path.join(chief_dir, "checkpoints", "ckpt-0")).expect_partial()
  before = model.get_weights()
  compile_for_pretraining(model, create_optimizer(
      run["optimizer"], learning_rate=run["learning_rate"], warmup_steps=run["warmup_steps"],
      train_steps=run["train_steps"], weight_decay=run["weight_decay"],
      clip_norm=run["clip_norm"]))
  model.fit(data, epochs=1, steps_per_epoch=len(steps), verbose=0)
  return before, model.get_weights()


# The same run launched by Slurm: each task's cluster from Slurm's variables (the port is the
# script's last argument), no serving export (the TF_CONFIG run's is checked).
SLURM_WORKER = TRAIN_AS_WORKER + f"""
train_as_worker(cluster="slurm", cluster_port=int(sys.argv[4]), serving_export=False,
                **{SETTINGS!r})
"""


@pytest.fixture(scope="module")
def tf_config_run(tmp_path_factory, data_dir, vocab_file):
  """The two workers' run launched with TF_CONFIG: (model_dir, each worker's stderr)."""
  model_dir = str(tmp_path_factory.mktemp("tf_config") / "run")
  return model_dir, finish(start_workers(WORKER, [data_dir, vocab_file, model_dir]))


@pytest.mark.usefixtures("warm_verification")
def test_two_workers_train_together(tf_config_run):
  model_dir, outputs = tf_config_run
  for index, stderr in enumerate(outputs):
    assert f"Input pipeline {index} of 2" in stderr
    assert "eagerly has significant overhead" not in stderr  # no strategy run eagerly

  chief_dir, other_dir = model_dir, os.path.join(model_dir, "workers", "worker-1")
  chief, other = (weights(d) for d in (chief_dir, other_dir))
  assert chief.keys() == other.keys() and len(chief) > 10
  for name in chief:
    np.testing.assert_array_equal(chief[name], other[name], err_msg=name)
  assert json.load(open(os.path.join(chief_dir, "metrics.json")))["steps"] == 4
  assert "verified: savedmodel" in verify(load_trained(chief_dir), "savedmodel",
                                         os.path.join(chief_dir, "export"))

  shards = [{row.tobytes() for row in np.load(os.path.join(model_dir, f"shard-{i}.npy"))}
            for i in range(2)]
  assert min(len(s) for s in shards) > 50
  assert not shards[0] & shards[1]

  before, expected = single_process_update(chief_dir, model_dir)
  found = pretraining_model(BertConfig.from_json_file(os.path.join(chief_dir,
                                                                   "bert_config.json")))
  found.load_weights(os.path.join(chief_dir, "model.weights.h5"))
  scale = max(np.abs(e - b).max() for e, b in zip(expected, before))
  assert scale > 1e-4  # the run changed the weights
  for e, f in zip(expected, found.get_weights()):
    assert np.abs(e - f).max() < 1e-4 * scale


def trained_as_the_tf_config_launch(model_dir, tf_config_run):
  """Checks that the chief of a launch in `model_dir` has the weights of the TF_CONFIG launch's
  chief and of its own other worker (to float32 rounding)."""
  launched = weights(model_dir)
  for directory in (tf_config_run[0], os.path.join(model_dir, "workers", "worker-1")):
    expected = weights(directory)
    assert sorted(expected) == sorted(launched)
    for name in expected:
      np.testing.assert_allclose(launched[name], expected[name], atol=1e-6, err_msg=name)


def test_a_slurm_launch_trains_as_the_tf_config_launch(tf_config_run, tmp_path, data_dir,
                                                       vocab_file):
  model_dir = str(tmp_path / "slurm")
  outputs = finish(start_slurm_workers(SLURM_WORKER, [data_dir, vocab_file, model_dir]))
  for index, stderr in enumerate(outputs):
    assert f"Input pipeline {index} of 2" in stderr
    assert "eagerly has significant overhead" not in stderr  # no strategy run eagerly
  trained_as_the_tf_config_launch(model_dir, tf_config_run)


def test_the_pods_of_the_kubernetes_manifest_train_as_the_tf_config_launch(
    tf_config_run, tmp_path, data_dir, vocab_file):
  """The manifest's containers, each in a pod of a node made of this machine's namespaces
  (tests/pods.py), every pod on the manifest's port; only the flagfile (the model and data of
  the TF_CONFIG launch) and the model_dir change. Pod 0 starts first and waits for pod 1, whose
  name does not resolve yet. On CPU, as the other launches. The node leaves no interface and no
  mount behind."""
  service, job = pods.indexed_job()
  (container,) = job["spec"]["template"]["spec"]["containers"]
  flagfile, model_dir = tmp_path / "tiny.flags", str(tmp_path / "runs" / "kubernetes")
  flagfile.write_text("\n".join(
      [f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
       f"--config={one_layer_config(vocab_file)}", "--warmup_steps=1", "--verbose=false",
       "--noserving_export", *(f"--{name}={value}" for name, value in SETTINGS.items())]))
  args = [f"--flagfile={flagfile}" if arg.startswith("--flagfile=") else
          f"--model_dir={model_dir}" if arg.startswith("--model_dir=") else arg
          for arg in container["args"]]
  assert args.count(f"--model_dir={model_dir}") == args.count(f"--flagfile={flagfile}") == 1
  port = container["ports"][0]["containerPort"]
  before = pods.traces()

  with pods.Node(tmp_path, service, job) as node:
    first = node.start(0, container["command"], args, CUDA_VISIBLE_DEVICES="")
    deadline = time.monotonic() + 300
    while not node.listens(0, port):  # waiting in `form` for worker 1, past `check`
      assert first.poll() is None, first.communicate()[1][-3000:]
      assert time.monotonic() < deadline, "pod 0 never listened on its port"
      time.sleep(0.1)
    second = node.start(1, container["command"], args, CUDA_VISIBLE_DEVICES="")
    outputs = finish([first, second], timeout=300)
  assert pods.traces() == before

  for index, stderr in enumerate(outputs):
    assert f"Input pipeline {index} of 2" in stderr
    assert "eagerly has significant overhead" not in stderr  # no strategy run eagerly
  trained_as_the_tf_config_launch(model_dir, tf_config_run)

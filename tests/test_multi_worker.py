"""`--strategy=multi_worker`: two worker processes on 127.0.0.1 (TF_CONFIG) train together.

Both must finish with identical weights, each reading its own input shard (none of the
examples of one shard is in the other), the chief writing `model_dir` and the other worker
its own subdirectory of it.
"""

import json
import os
import socket
import subprocess
import sys

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = r"""
import json, logging, os, sys
logging.basicConfig(level=logging.INFO)
import numpy as np
from bert_tf.training.trainer import TrainConfig, train
data_dir, vocab_file, model_dir = sys.argv[1:4]
train(TrainConfig(
    data_dir=data_dir, vocab_file=vocab_file, model_dir=model_dir, strategy="multi_worker",
    config="bert_tiny", seq_length=64, max_predictions_per_seq=10, global_batch_size=8,
    train_steps=4, checkpoint_every=2, warmup_steps=1, eval_steps=2, verbose=0))
# The examples of this worker's shard, as the trainer's input pipeline makes them.
from bert_tf.data.pipeline import pretraining_dataset
task = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
shard = pretraining_dataset("builtin", vocab_file, seq_length=64, max_predictions_per_seq=10,
                            batch_size=4, seed=0, num_shards=2, shard_index=task,
                            data_dir=data_dir)
rows = np.concatenate([f["token_ids"].numpy() for f, _, _ in shard.take(20)])
np.save(os.path.join(model_dir, f"shard-{task}.npy"), rows)
"""


def free_ports(count):
  sockets = [socket.socket() for _ in range(count)]
  for s in sockets:
    s.bind(("127.0.0.1", 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def weights(path):
  with h5py.File(path, "r") as f:
    arrays = []
    f.visititems(lambda name, item: arrays.append((name, item[()]))
                 if isinstance(item, h5py.Dataset) else None)
  return dict(arrays)


def test_two_workers_train_together(tmp_path, data_dir, vocab_file):
  model_dir = str(tmp_path / "run")
  cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
  workers = [
      subprocess.Popen(
          [sys.executable, "-c", WORKER, data_dir, vocab_file, model_dir], cwd=ROOT,
          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
                   TF_CONFIG=json.dumps({"cluster": cluster,
                                         "task": {"type": "worker", "index": index}})))
      for index in range(2)]
  outputs = [worker.communicate(timeout=600) for worker in workers]
  for worker, (_, stderr) in zip(workers, outputs):
    assert worker.returncode == 0, stderr[-3000:]
  for index, (_, stderr) in enumerate(outputs):
    assert f"Input pipeline {index} of 2" in stderr

  chief_dir, other_dir = model_dir, os.path.join(model_dir, "workers", "worker-1")
  chief, other = (weights(os.path.join(d, "model.weights.h5")) for d in (chief_dir, other_dir))
  assert chief.keys() == other.keys() and len(chief) > 10
  for name in chief:
    np.testing.assert_array_equal(chief[name], other[name], err_msg=name)
  assert json.load(open(os.path.join(chief_dir, "metrics.json")))["steps"] == 4
  assert os.path.exists(os.path.join(chief_dir, "export", "saved_model.pb"))

  shards = [{row.tobytes() for row in np.load(os.path.join(model_dir, f"shard-{i}.npy"))}
            for i in range(2)]
  assert min(len(s) for s in shards) > 50
  assert not shards[0] & shards[1]

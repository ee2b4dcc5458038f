"""Every write goes through `tf.io.gfile`: a whole run (train, resume, every export) with
`model_dir` on `ram://`, TensorFlow's in-memory file system, as it would on `gs://`.

In one subprocess, since `ram://` lives in one process; a subprocess also keeps this test's
files from leaking into the others'.
"""

import json

import pytest

from helpers import run

pytestmark = pytest.mark.e2e

SCRIPT = r"""
import json, os, sys
import numpy as np
import safetensors.numpy
import tensorflow as tf
from bert_tf.export.formats import export
from bert_tf.serving.trained import load_trained
from bert_tf.runtime import run_lock
from bert_tf.training.trainer import TrainConfig, train
from helpers import one_layer_config

data_dir, vocab_file = sys.argv[1:3]
model_dir = "ram://bert_tf_run"
config = TrainConfig(data_dir=data_dir, vocab_file=vocab_file, model_dir=model_dir,
                     config=one_layer_config(vocab_file), seq_length=32, max_predictions_per_seq=5,
                     global_batch_size=4, train_steps=4, checkpoint_every=2, warmup_steps=1,
                     eval_steps=1, log_every=1, verbose=0)
# The serving SavedModel (written and verified from ram://) once, at the end of the resumed run.
first = train(TrainConfig(**{**config.__dict__, "serving_export": False}))
history = tf.io.gfile.GFile(f"{model_dir}/history.jsonl").read()
resumed = train(TrainConfig(**{**config.__dict__, "train_steps": 6}))  # resumes at step 4
history_after = tf.io.gfile.GFile(f"{model_dir}/history.jsonl").read()

# The SavedModel format is the run's own export (the same writer as the export command's).
trained = load_trained(model_dir)
for export_format in ("hf", "keras_hub"):
  export(trained, export_format, f"ram://exports/{export_format}")
weights = safetensors.numpy.load(
    tf.io.gfile.GFile("ram://exports/hf/model.safetensors", "rb").read())
serving = tf.saved_model.load(f"{model_dir}/export")
assert not os.path.exists("ram:")  # nothing written to a local directory named ram:
print(json.dumps({
    "steps": [first["steps"], resumed["steps"]],
    "model_dir": sorted(tf.io.gfile.listdir(model_dir)),
    "checkpoints": sorted(tf.io.gfile.listdir(f"{model_dir}/checkpoints")),
    "history_steps": [json.loads(line)["step"] for line in history_after.splitlines()],
    "history_kept": history_after.startswith(history),
    "exports": sorted(tf.io.gfile.listdir("ram://exports")),
    "hf": sorted(tf.io.gfile.listdir("ram://exports/hf")),
    "keras_hub": json.loads(tf.io.gfile.GFile("ram://exports/keras_hub/config.json").read()),
    "hf_tensors": len(weights),
    "signatures": sorted(serving.signatures),
}))
"""


def test_a_whole_run_on_ram_file_system(data_dir, vocab_file):
  result = run(["-c", SCRIPT, data_dir, vocab_file], timeout=900)
  assert result.returncode == 0, result.stderr[-3000:]
  found = json.loads(result.stdout.strip().splitlines()[-1])
  assert found["steps"] == [4, 6]
  assert {"checkpoints", "export", "history.jsonl", "metrics.json", "model.weights.h5",
          "vocab.txt", "curves.png"} <= {name.rstrip("/") for name in found["model_dir"]}
  assert not [name for name in found["model_dir"] if name.startswith(".")]  # no temporaries
  assert "ckpt-6.index" in found["checkpoints"]
  assert found["history_steps"] == [1, 2, 3, 4, 5, 6]  # whole across the resume
  assert found["history_kept"]
  assert found["exports"] == ["hf", "keras_hub"]
  assert {"model.safetensors", "config.json", "vocab.txt"} <= set(found["hf"])
  assert found["hf_tensors"] > 20
  assert found["keras_hub"]["class_name"] == "BertBackbone"
  assert found["signatures"] == ["encode", "fill_mask", "is_next", "tokenize"]

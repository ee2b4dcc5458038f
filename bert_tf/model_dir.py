"""What a run keeps in its model_dir, named once for every layer that writes or reads one (the
trainer resumes from it; `--init_checkpoint`, fine-tuning and export read it through
`bert_tf.interop.source`)."""

import os
import re

import tensorflow as tf

CHECKPOINTS = "checkpoints"  # the training checkpoints: weights, optimizer, data position
# The files that make a model_dir stand alone, written at the run's start (`run_files`), and
# its final weights and figures, written when it finishes.
CONFIG_FILE, VOCAB_FILE, TRAIN_CONFIG_FILE = "bert_config.json", "vocab.txt", "train_config.json"
WEIGHTS_FILE, METRICS_FILE = "model.weights.h5", "metrics.json"


def latest_step(path: str) -> int:
  """The step of the model_dir's latest checkpoint; 0 without one."""
  state = tf.train.get_checkpoint_state(os.path.join(path, CHECKPOINTS))
  found = state and re.search(r"ckpt-(\d+)$", state.model_checkpoint_path)
  return int(found.group(1)) if found else 0


def has_checkpoint(path: str) -> bool:
  """Whether the model_dir has at least one training checkpoint (a run can go on from it)."""
  return tf.io.gfile.exists(os.path.join(path, CHECKPOINTS, "checkpoint"))

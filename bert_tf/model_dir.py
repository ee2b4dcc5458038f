"""Where a run keeps its checkpoints in its model_dir, for every layer that reads a model_dir
(the trainer resumes from it, `--init_checkpoint` and fine-tuning start from it)."""

import os
import re

import tensorflow as tf

CHECKPOINTS = "checkpoints"  # under model_dir


def latest_step(path: str) -> int:
  """The step of the model_dir's latest checkpoint; 0 without one."""
  state = tf.train.get_checkpoint_state(os.path.join(path, CHECKPOINTS))
  found = state and re.search(r"ckpt-(\d+)$", state.model_checkpoint_path)
  return int(found.group(1)) if found else 0


def is_training_directory(path: str) -> bool:
  """A bert_tf model_dir with at least one checkpoint."""
  return tf.io.gfile.exists(os.path.join(path, CHECKPOINTS, "checkpoint"))

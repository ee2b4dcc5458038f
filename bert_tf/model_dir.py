"""Where a run keeps its checkpoints in its model_dir, for every layer that reads a model_dir
(the trainer resumes from it, `--init_checkpoint` and fine-tuning start from it)."""

import os

import tensorflow as tf

CHECKPOINTS = "checkpoints"  # under model_dir


def is_training_directory(path: str) -> bool:
  """A bert_tf model_dir with at least one checkpoint."""
  return tf.io.gfile.exists(os.path.join(path, CHECKPOINTS, "checkpoint"))

"""Every input pipeline of the project ends in `prefetching.prefetched`: its elements as they
were, tf.data's autotuning off (whose thread can stall an iterator's destruction for up to a
minute)."""

import ast
import os

import numpy as np
import tensorflow as tf

from bert_tf import pretraining_dataset
from bert_tf.data.prefetching import prefetched
from bert_tf.finetune.batches import batches
from helpers import ROOT


def test_the_elements_are_unchanged_and_autotuning_is_off():
  dataset = tf.data.Dataset.range(40).batch(3).map(lambda x: x * 2,
                                                    num_parallel_calls=tf.data.AUTOTUNE)
  ended = prefetched(dataset)
  assert ended.options().autotune.enabled is False
  assert dataset.options().autotune.enabled is not False  # the input's options untouched
  assert [b.tolist() for b in ended.as_numpy_iterator()] == [
      b.tolist() for b in dataset.as_numpy_iterator()]
  assert np.concatenate(list(ended.as_numpy_iterator())).tolist() == list(range(0, 80, 2))


def test_the_pipelines_end_there(corpus_pattern, vocab_file, data_dir):
  dataset = pretraining_dataset(corpus_pattern, vocab_file, seq_length=32,
                                max_predictions_per_seq=5, batch_size=2, data_dir=data_dir)
  assert dataset.options().autotune.enabled is False
  assert batches({"x": np.arange(6)}, np.arange(6), batch_size=4).options().autotune.enabled \
      is False


def test_no_other_module_prefetches():
  """A `.prefetch(` anywhere else in the package would end a dataset another way."""
  package = os.path.join(ROOT, "bert_tf")
  found = []
  for directory, _, names in os.walk(package):
    for name in names:
      path = os.path.join(directory, name)
      if not name.endswith(".py") or name == "prefetching.py":
        continue
      for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Attribute) and node.attr == "prefetch":
          found.append(f"{os.path.relpath(path, ROOT)}:{node.lineno}")
  assert found == []

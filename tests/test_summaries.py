"""TensorBoard scalars by step: a run resumed from an earlier step drops the points written
after it, so that the files hold one continuous curve with one point per step."""

import os

import tensorflow as tf

from bert_tf.training.watching.summaries import ScalarWriter


def points(directory: str) -> list:
  """(step, value) of every `loss` point in the directory's event files, file by file."""
  found = []
  for name in sorted(os.listdir(directory)):
    for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
      for value in event.summary.value:
        if value.tag == "loss":
          found.append((event.step, float(tf.make_ndarray(value.tensor))))
  return found


def test_a_resumed_run_replaces_the_points_after_its_step(tmp_path):
  directory = str(tmp_path / "train")
  first = ScalarWriter(directory)
  first.start(0)
  for step in range(2, 12, 2):  # killed after step 10, its last checkpoint at step 6
    first.write(step, {"loss": float(step)})
  first.close()
  resumed = ScalarWriter(directory)
  resumed.start(6)
  for step in range(8, 14, 2):
    resumed.write(step, {"loss": step + 0.5})
  resumed.close()
  assert points(directory) == [(2, 2.0), (4, 4.0), (6, 6.0), (8, 8.5), (10, 10.5),
                               (12, 12.5)]
  assert len(os.listdir(directory)) == 2  # nothing else left behind


def test_a_file_without_later_points_is_left_as_it_is(tmp_path):
  directory = str(tmp_path / "eval")
  writer = ScalarWriter(directory)
  writer.start(0)
  writer.write(3, {"loss": 1.0})
  writer.close()
  (name,) = os.listdir(directory)
  before = os.stat(os.path.join(directory, name))
  ScalarWriter(directory).start(3)
  after = os.stat(os.path.join(directory, name))
  assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)
  assert points(directory) == [(3, 1.0)]

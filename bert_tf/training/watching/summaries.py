"""TensorBoard scalars by global step, in one run directory (`logs/train`, `logs/eval`).

A resumed run goes on from its checkpoint's step, but the run it resumes may have written
points after that checkpoint before it was killed: `start` drops them from the event files
(rewriting only the files that hold some), so that the resumed run draws one continuous curve
with one point per step, in TensorBoard and in any reader of the files.
"""

import glob
import os

import tensorflow as tf

EVENT_FILES = "events.out.tfevents.*"


def drop_events_after(directory: str, step: int) -> None:
  """Rewrites each event file in `directory` holding a summary after `step` without them."""
  for path in tf.io.gfile.glob(os.path.join(glob.escape(directory), EVENT_FILES)):
    events = [tf.compat.v1.Event.FromString(record.numpy())
              for record in tf.data.TFRecordDataset(path)]
    kept = [e for e in events if not (e.HasField("summary") and e.step > step)]
    if len(kept) == len(events):
      continue
    temporary = path + ".tmp"
    with tf.io.TFRecordWriter(temporary) as writer:
      for event in kept:
        writer.write(event.SerializeToString())
    tf.io.gfile.rename(temporary, path, overwrite=True)


class ScalarWriter:
  """Writes scalars at given steps to one TensorBoard run directory."""

  def __init__(self, directory: str):
    self.directory = directory
    self._writer = None

  def start(self, step: int) -> None:
    """Where training (re)starts: later points of an earlier run are dropped."""
    self.close()
    if tf.io.gfile.isdir(self.directory):
      drop_events_after(self.directory, step)

  def write(self, step: int, values: dict) -> None:
    if self._writer is None:
      self._writer = tf.summary.create_file_writer(self.directory)
    with self._writer.as_default():
      for name, value in values.items():
        tf.summary.scalar(name, value, step=step)

  def flush(self) -> None:
    if self._writer is not None:
      self._writer.flush()

  def close(self) -> None:
    if self._writer is not None:
      self._writer.close()
      self._writer = None

"""Checkpoints: a bad latest checkpoint is passed over, a failed save stops training cleanly,
steps are counted on the host, and `steps_per_execution` must divide the intervals.

A small dense model stands in for BERT: what is tested is the bookkeeping around the weights.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.data_position import DataPosition
from bert_tf.errors import UserError
from bert_tf.runtime import checkpointing, stopping
from bert_tf.training import fitting
from helpers import make_checkpointer, run, train_and_save


def test_an_unreadable_latest_checkpoint_is_passed_over(tmp_path, caplog):
  directory = str(tmp_path / "checkpoints")
  saver = make_checkpointer(directory)
  train_and_save(saver, 3)  # ckpt-1, 2, 3
  weights_at_2 = make_checkpointer(directory, seed=1)
  weights_at_2.checkpoint.restore(os.path.join(directory, "ckpt-2"))
  data = os.path.join(directory, "ckpt-3.data-00000-of-00001")
  with open(data, "r+b") as f:
    f.truncate(os.path.getsize(data) // 2)  # a crash during a copy

  resumed = make_checkpointer(directory, seed=2)
  assert resumed.restore() == 2
  assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
      f"the checkpoint {directory}/ckpt-3 cannot be read (Read less bytes than requested): "
      f"using the previous one, {directory}/ckpt-2"]
  assert os.path.getsize(data)  # passed over, kept
  for found, expected in zip(resumed.model.get_weights(), weights_at_2.model.get_weights()):
    np.testing.assert_array_equal(found, expected)


def test_a_bit_flipped_latest_checkpoint_is_passed_over(tmp_path, caplog):
  # One byte changed inside a tensor's bytes, the file's size unchanged: the checksum that
  # TensorFlow keeps of each tensor in the index tells.
  directory = str(tmp_path / "checkpoints")
  train_and_save(make_checkpointer(directory), 3)
  weights_at_2 = make_checkpointer(directory, seed=1)
  weights_at_2.checkpoint.restore(os.path.join(directory, "ckpt-2"))
  data = os.path.join(directory, "ckpt-3.data-00000-of-00001")
  size = os.path.getsize(data)
  with open(data, "r+b") as f:
    f.seek(size // 2)  # the data file is the tensors' bytes end to end
    byte = f.read(1)[0]
    f.seek(size // 2)
    f.write(bytes([byte ^ 0x01]))
  assert os.path.getsize(data) == size

  resumed = make_checkpointer(directory, seed=2)
  assert resumed.restore() == 2
  (warning,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
  assert warning.startswith(f"the checkpoint {directory}/ckpt-3 cannot be read (")
  assert "Checksum does not match" in warning
  assert warning.endswith(f"): using the previous one, {directory}/ckpt-2")
  assert "\n" not in warning
  for found, expected in zip(resumed.model.get_weights(), weights_at_2.model.get_weights()):
    np.testing.assert_array_equal(found, expected)


@pytest.mark.parametrize("index", [None, "garbage ::: }{"])
def test_a_lost_checkpoint_index_is_rebuilt_from_the_checkpoints(tmp_path, caplog, index):
  directory = str(tmp_path / "checkpoints")
  train_and_save(make_checkpointer(directory), 3)  # ckpt-1, 2, 3
  os.remove(os.path.join(directory, "checkpoint"))
  if index is not None:
    with open(os.path.join(directory, "checkpoint"), "w") as f:
      f.write(index)

  resumed = make_checkpointer(directory, seed=2)
  assert resumed.restore() == 3
  assert [r.getMessage() for r in caplog.records
          if r.levelname == "WARNING" and r.name == "bert_tf"] == [
      f"{directory}/checkpoint names no checkpoint (missing or unreadable), but 3 are there: "
      "reading the newest whole one (the older ones are kept, not rotated)"]
  assert tf.train.latest_checkpoint(directory) == f"{directory}/ckpt-3"
  train_and_save(resumed, 1)
  assert resumed.manager.checkpoints == [f"{directory}/ckpt-3", f"{directory}/ckpt-4"]
  assert os.path.exists(f"{directory}/ckpt-1.index")


def test_no_readable_checkpoint_is_one_user_error(tmp_path):
  directory = str(tmp_path / "checkpoints")
  train_and_save(make_checkpointer(directory), 2)
  for step in (1, 2):
    os.remove(os.path.join(directory, f"ckpt-{step}.data-00000-of-00001"))
  with pytest.raises(UserError, match=f"no checkpoint in {directory} can be read .the "
                     f"latest, {directory}/ckpt-2: .*.: use a new --model_dir"):
    make_checkpointer(directory).restore()


def test_a_checkpoint_of_another_model_does_not_fit(tmp_path):
  directory = str(tmp_path / "checkpoints")
  train_and_save(make_checkpointer(directory), 1)
  other = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
  other.compile(optimizer="adam", loss="mse")
  other.optimizer.build(other.trainable_variables)
  with pytest.raises(UserError, match="ckpt-1 does not fit this model"):
    checkpointing.Checkpointer(directory, other, other.optimizer, keep=3,
                               data_position=DataPosition(1).last_consumed).restore()


def test_a_failed_save_stops_training_and_keeps_the_previous_checkpoint(tmp_path,
                                                                        monkeypatch):
  directory = str(tmp_path / "checkpoints")
  checkpointer = make_checkpointer(directory)
  train_and_save(checkpointer, 1)

  def disk_full(*args, **kwargs):  # what TensorFlow raises when the disk fills during a save
    raise tf.errors.ResourceExhaustedError(None, None, (
        "{{function_node __wrapped__SaveV2_dtypes_149_device_/job:localhost/replica:0/task:0/"
        f"device:CPU:0}}}} {directory}/ckpt-2_temp/part-00000-of-00001.data-00000-of-00001"
        ".tempstate123; No space left on device [Op:SaveV2]"))

  monkeypatch.setattr(checkpointer.checkpoint, "write", disk_full)
  monkeypatch.setattr(checkpointer.checkpoint, "_write", disk_full, raising=False)
  with pytest.raises(checkpointing.TrainingStopped) as stopped:
    train_and_save(checkpointer, 1)
  assert str(stopped.value) == (
      f"could not write the checkpoint {directory}/ckpt-2: no space left on the device; the "
      f"latest checkpoint is still {directory}/ckpt-1: run the same command to resume")
  assert tf.train.latest_checkpoint(directory) == f"{directory}/ckpt-1"
  assert make_checkpointer(directory, seed=1).restore() == 1  # a re-run resumes


class Recorder(keras.callbacks.Callback):
  """Each callback's step as CheckpointEvery counted it, and the true optimizer step."""

  def __init__(self, guard):
    super().__init__()
    self.guard = guard
    self.seen = []

  def on_train_batch_end(self, batch, logs=None):
    self.seen.append((self.guard.step, int(self.model.optimizer.iterations.numpy())))


def fit(model, guard, steps, steps_per_execution, x_value=1.0):
  model.compile(optimizer=model.optimizer, loss="mse", steps_per_execution=steps_per_execution)
  data = tf.data.Dataset.from_tensors(
      (np.full((2, 4), x_value, "float32"), np.ones((2, 1), "float32"))).repeat()
  recorder = Recorder(guard)
  epochs, steps_per_epoch = fitting.intervals(int(model.optimizer.iterations.numpy()),
                                              steps, guard.every)
  model.fit(data, epochs=epochs, steps_per_epoch=steps_per_epoch, verbose=0,
            callbacks=[guard, recorder])
  return recorder.seen


def test_steps_are_counted_on_the_host_across_epochs_and_executions(tmp_path):
  checkpointer = make_checkpointer(str(tmp_path / "checkpoints"))
  guard = stopping.CheckpointEvery(checkpointer, every=4, train_steps=12)
  seen = fit(checkpointer.model, guard, 12, steps_per_execution=2)
  assert seen == [(step, step) for step in range(2, 13, 2)]
  assert [int(p.rsplit("-", 1)[1]) for p in checkpointer.manager.checkpoints] == [4, 8, 12]


def test_a_non_finite_loss_stops_before_the_next_save(tmp_path):
  checkpointer = make_checkpointer(str(tmp_path / "checkpoints"))
  checkpointer.save()  # step 0
  guard = stopping.CheckpointEvery(checkpointer, every=4, train_steps=12)
  fit(checkpointer.model, guard, 12, steps_per_execution=2, x_value=np.inf)
  assert guard.non_finite and checkpointer.model.stop_training
  assert "the loss is not finite at step 4" in guard.stop_reason
  assert checkpointer.manager.checkpoints == [checkpointer.manager.latest_checkpoint]
  assert checkpointer.latest_step == 0  # nothing written after the loss went bad


COMMON_STEP = r"""
import sys
import tensorflow as tf
strategy = tf.distribute.MultiWorkerMirroredStrategy()  # one worker: no TF_CONFIG
from helpers import make_checkpointer, train_and_save
train_and_save(make_checkpointer(sys.argv[1]), 2)
print(make_checkpointer(sys.argv[1]).restore(strategy))
"""


def test_the_workers_common_step_is_gathered_in_a_function_without_the_eager_warning(tmp_path):
  """Restoring under a multi-worker strategy gathers every worker's step (one worker here):
  in a tf.function, not the strategy run eagerly, which TensorFlow warns about on each."""
  result = run(["-c", COMMON_STEP, str(tmp_path)])
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.split() == ["2"]
  assert "eagerly" not in result.stderr

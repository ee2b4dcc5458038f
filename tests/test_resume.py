"""A killed run resumes exactly with `--steps_per_execution`; a second Ctrl-C aborts at once; a
non-finite loss never overwrites good weights. (A run hit by a SIGTERM, a Ctrl-C, a kill -9 and
a file renamed away, each answered as documented and resumed exactly: test_chaos.py.)

Reference: an uninterrupted run of 12 steps (`helpers.RESUMABLE`, dropout on). The interrupted
runs must end with the same weights: the data stream, the optimizer, the step count and the
dropout RNG are all restored, so on this CPU they agree to float32 rounding (tolerance 1e-5).
"""

import os
import re
import signal
import time

import numpy as np
import pytest

from bert_tf.training.trainer import TrainConfig, train
from helpers import (
  RESUMABLE_CONFIG,
  RESUMABLE_STEPS,
  one_layer_config,
  resumable_run,
  run,
  start,
  wait_for_checkpoint,
  weights,
)

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, data_dir, vocab_file):
  """The reference's weights, trained in this process: the same as train.py's (one step per
  execution), which every resumed run in a fresh process is compared with."""
  model_dir = str(tmp_path_factory.mktemp("uninterrupted"))
  train(TrainConfig(data_dir=data_dir, vocab_file=vocab_file, model_dir=model_dir,
                    config=one_layer_config(vocab_file), **RESUMABLE_CONFIG))
  return weights(model_dir)


def start_and_wait_for_checkpoint(model_dir, data_dir, vocab_file, step):
  """The run's command started; returned once `ckpt-{step}` (or a later one) is the latest."""
  process = start(resumable_run(model_dir, data_dir, vocab_file))
  wait_for_checkpoint([model_dir], step, [process])
  return process


def compare(uninterrupted, model_dir):
  resumed = weights(model_dir)
  assert sorted(uninterrupted) == sorted(resumed)
  for name in uninterrupted:
    np.testing.assert_allclose(resumed[name], uninterrupted[name], atol=1e-5, err_msg=name)


def test_sigkill_then_rerun_with_four_steps_per_execution(uninterrupted, tmp_path, data_dir,
                                                         vocab_file):
  """Kill -9 and resume with `--steps_per_execution=4` ends with the weights of the
  uninterrupted run of one step per execution: the data position, the checkpoints and the
  step count are all counted in optimizer updates."""
  model_dir = str(tmp_path / "run")
  args = resumable_run(model_dir, data_dir, vocab_file, "--steps_per_execution=4",
                       "--checkpoint_every=4")
  process = start(args)
  wait_for_checkpoint([model_dir], 4, [process])
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert not os.path.exists(os.path.join(model_dir, "model.weights.h5"))  # killed mid-run

  result = run(args)
  assert result.returncode == 0, result.stderr[-3000:]
  assert re.search(rf"Resumed from the checkpoint at step [48] of {RESUMABLE_STEPS}",
                   result.stderr)
  assert "Taking over" in result.stderr  # the killed run's lock
  compare(uninterrupted, model_dir)


def test_a_second_ctrl_c_aborts_at_once(tmp_path, data_dir, vocab_file):
  model_dir = str(tmp_path / "run")
  process = start_and_wait_for_checkpoint(model_dir, data_dir, vocab_file, step=2)
  process.send_signal(signal.SIGINT)
  for line in process.stderr:  # the first Ctrl-C is being handled: the save is under way
    if line.startswith("Interrupted: saving a checkpoint"):
      break
  process.send_signal(signal.SIGINT)
  start = time.time()
  _, stderr = process.communicate(timeout=60)
  assert time.time() - start < 5
  assert process.returncode == -signal.SIGINT, stderr[-3000:]
  assert "Traceback" not in stderr


def test_non_finite_loss_rolls_back_then_stops_without_saving(tmp_path, data_dir, vocab_file):
  # A learning rate of 1e12 makes the weights, then the loss, overflow within a few steps,
  # every time: each rollback restores the last good checkpoint and skips the batches in
  # between, the loss overflows again, and after 3 rollbacks training stops.
  model_dir = str(tmp_path / "run")
  result = run(resumable_run(model_dir, data_dir, vocab_file, "--learning_rate=1e12",
                             "--warmup_steps=0", "--train_steps=40", "--checkpoint_every=1",
                             "--on_nan=rollback"))
  assert result.returncode == 1, result.stderr[-3000:]
  assert result.stderr.count("rolled back to step") == 3
  assert "the loss is not finite at step" in result.stderr
  assert "Traceback" not in result.stderr
  assert not os.path.exists(os.path.join(model_dir, "model.weights.h5"))
  import tensorflow as tf
  latest = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
  assert latest, "no checkpoint to roll back to"
  reader = tf.train.load_checkpoint(latest)
  floats = [name for name in reader.get_variable_to_shape_map()
            if np.issubdtype(np.asarray(reader.get_tensor(name)).dtype, np.floating)]
  assert len(floats) > 20  # the model's weights and the optimizer's slots
  for name in floats:  # the latest checkpoint holds finite weights
    assert np.isfinite(reader.get_tensor(name)).all(), name

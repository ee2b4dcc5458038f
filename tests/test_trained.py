"""What export and fine-tuning check of a model_dir before they read its final weights."""

import json
import logging
import os

import pytest

from bert_tf import model_dir as names
from bert_tf.errors import UserError
from bert_tf.interop.source import RunDirectory


def finished_run(directory, final_step: int, latest_checkpoint: int) -> str:
  """The files a finished run leaves (their contents are not read here), its final figures of
  `final_step` and a checkpoint index naming `latest_checkpoint`."""
  os.makedirs(os.path.join(directory, "checkpoints"))
  for name in (names.CONFIG_FILE, names.VOCAB_FILE, names.WEIGHTS_FILE,
               names.TRAIN_CONFIG_FILE):
    open(os.path.join(directory, name), "w").close()
  with open(os.path.join(directory, names.METRICS_FILE), "w") as f:
    json.dump({"steps": final_step}, f)
  with open(os.path.join(directory, "checkpoints", "checkpoint"), "w") as f:
    f.write(f'model_checkpoint_path: "ckpt-{latest_checkpoint}"\n'
            f'all_model_checkpoint_paths: "ckpt-{latest_checkpoint}"\n')
  return str(directory)


def test_final_weights_older_than_the_latest_checkpoint_are_said(tmp_path, caplog):
  model_dir = finished_run(tmp_path / "run", final_step=20, latest_checkpoint=31)
  with caplog.at_level(logging.WARNING, logger="bert_tf"):
    RunDirectory(model_dir).check_finished()
  assert caplog.messages == [
      f"{model_dir}: its final weights are of step 20, but training went on to the checkpoint "
      "at step 31 and has not finished: these are step 20's (re-run train.py to finish)"]


def test_final_weights_of_the_latest_checkpoint_say_nothing(tmp_path, caplog):
  model_dir = finished_run(tmp_path / "run", final_step=20, latest_checkpoint=20)
  with caplog.at_level(logging.WARNING, logger="bert_tf"):
    RunDirectory(model_dir).check_finished()
  assert not caplog.messages


def test_not_a_finished_run(tmp_path):
  with pytest.raises(UserError, match="is not found"):
    RunDirectory(str(tmp_path / "nowhere")).check_finished()
  model_dir = finished_run(tmp_path / "run", final_step=20, latest_checkpoint=20)
  os.remove(os.path.join(model_dir, names.WEIGHTS_FILE))
  with pytest.raises(UserError, match="has no model.weights.h5: is it a finished"):
    RunDirectory(model_dir).check_finished()

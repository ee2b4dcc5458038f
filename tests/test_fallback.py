"""A model_dir whose latest checkpoint is damaged (a disk that filled, a copy cut off, a byte
changed): every reader of it reads the newest whole checkpoint (`model_dir.newest_whole`), says
in one line which one it passed over and which one it read, and removes nothing.

Each file of the latest checkpoint of `finished_run` (ckpt-4, ckpt-8, ckpt-12) is cut short or
has a byte changed: its index, its data file, the run's record inside the data file, and the
`checkpoint` file that names the checkpoints. In this process, each reader of the damaged copy
(the record, the re-run's comparison, audit --checkpoint, the weights export and fine-tuning
take); in fresh processes, the commands themselves on the damage the issue met (the data
file cut short, the run's final weights not written).
"""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import audit, model_dir, run_record
from bert_tf.interop.source import open_source
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from bert_tf.training import run_changes
from helpers import TINY_RUN_STEPS, run, tiny_run

LATEST, PREVIOUS = TINY_RUN_STEPS, TINY_RUN_STEPS - 4  # the run checkpoints every 4 steps
DATA = "data-00000-of-00001"


def damage(directory: str, part: str, how: str) -> str:
  """Cuts short (`how` "truncate") or changes a byte of (`how` "flip") `part` of the latest
  checkpoint in `directory` (a model_dir's checkpoints/); returns the file changed."""
  if part == "state":
    path = os.path.join(directory, "checkpoint")
  else:
    path = os.path.join(directory, f"ckpt-{LATEST}." + ("index" if part == "index" else DATA))
  with open(path, "rb") as f:
    content = f.read()
  start, end = 0, len(content)
  if part == "record":  # the record's JSON inside the data file
    start = content.index(b'{"bert_config": ')
    end = content.index(b'"vocabulary": ', start)
  middle = (start + end) // 2
  with open(path, "r+b") as f:
    if how == "truncate":
      f.truncate(middle)
    else:
      f.seek(middle)
      f.write(bytes([content[middle] ^ 0x01]))
  return path


def checkpoint_files(directory: str) -> dict:
  return {name: os.path.getsize(os.path.join(directory, name))
          for name in sorted(os.listdir(directory))}


def passed_over(caplog) -> list[str]:
  return [r.getMessage() for r in caplog.records
          if r.levelname == "WARNING" and r.name == "bert_tf"]


def weights_of(checkpoint: str, model: keras.Model) -> None:
  """Asserts that `model`'s weights are those the checkpoint `checkpoint` holds."""
  expected = pretraining_model(BertConfig(**run_record.read(checkpoint)["bert_config"]))
  tf.train.Checkpoint(model=expected).restore(checkpoint).expect_partial()
  for found, wanted in zip(model.weights, expected.weights):
    np.testing.assert_array_equal(found.numpy(), wanted.numpy(), err_msg=found.path)


@pytest.mark.e2e
@pytest.mark.parametrize("part", ["index", "data", "record", "state"])
@pytest.mark.parametrize("how", ["truncate", "flip"])
def test_every_reader_reads_the_newest_whole_checkpoint(finished_run, copy_of, caplog, part,
                                                        how):
  run_dir = copy_of(finished_run[0])
  os.remove(os.path.join(run_dir, model_dir.WEIGHTS_FILE))  # the weights come from a checkpoint
  directory = os.path.join(run_dir, "checkpoints")
  damage(directory, part, how)
  files = checkpoint_files(directory)
  # The `checkpoint` file names the checkpoints; damaged, they are found on disk, and the
  # latest, whole, is read.
  expected = os.path.join(directory, f"ckpt-{LATEST if part == 'state' else PREVIOUS}")

  assert model_dir.newest_whole(run_dir) == expected
  assert run_record.latest(run_dir)[0] == expected
  recorded = run_changes.last_run(run_dir)
  assert recorded["train_config"] == run_record.read(expected)["train_config"]
  assert f"checkpoint  {expected}" in audit.describe_checkpoint(run_dir)
  source = open_source(run_dir, "--model_dir")
  model = pretraining_model(source.config)
  source.load_weights(model, source.config)
  weights_of(expected, model)

  lines = passed_over(caplog)
  if part == "state":  # cut or changed in its timestamps: it no longer parses
    assert lines == [f"{directory}/checkpoint names no checkpoint (missing or unreadable), but "
                     "3 are there: reading the newest whole one (the older ones are kept, not "
                     "rotated)"]
  else:
    (line,) = lines  # said once, however many readers
    assert line.startswith(f"the checkpoint {directory}/ckpt-{LATEST} cannot be read (")
    assert line.endswith(f"): using the previous one, {expected}")
  assert checkpoint_files(directory) == files  # nothing removed, nothing rewritten


FINETUNE_ROWS = [("the for statement loops over a sequence", "loop"),
                 ("a while statement repeats while true", "loop"),
                 ("the if statement chooses a branch", "branch"),
                 ("an else clause runs otherwise", "branch")] * 4


@pytest.mark.e2e
def test_each_command_goes_on_from_the_previous_checkpoint(finished_run, copy_of, data_dir,
                                                           tmp_path):
  # A run whose disk filled while it wrote its last checkpoint: its data file cut short, no
  # final weights. Each command reads ckpt-8, says so in a line, and nothing is lost.
  run_dir = copy_of(finished_run[0])
  os.remove(os.path.join(run_dir, model_dir.WEIGHTS_FILE))
  directory = os.path.join(run_dir, "checkpoints")
  damage(directory, "data", "truncate")
  files = checkpoint_files(directory)
  latest, previous = (os.path.join(directory, f"ckpt-{step}") for step in (LATEST, PREVIOUS))
  line = f"the checkpoint {latest} cannot be read (Read less bytes than requested): " \
         f"using the previous one, {previous}"

  def said_once(result):
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert result.stderr.count(line) == 1, result.stderr[-3000:]

  described = run(["-m", "bert_tf.audit", f"--checkpoint={run_dir}"])
  said_once(described)
  assert f"step        {PREVIOUS}" in described.stdout
  exported = run(["-m", "bert_tf.export", f"--model_dir={run_dir}", "--format=hf",
                  f"--output={tmp_path / 'hf'}", "--skip_verify"])
  said_once(exported)
  assert f"taking the weights of its checkpoint {previous}" in exported.stderr
  train_file = tmp_path / "train.tsv"
  train_file.write_text("text\tlabel\n" + "".join(f"{t}\t{label}\n" for t, label in FINETUNE_ROWS))
  finetuned = run(["-m", "bert_tf.finetune", f"--model_dir={run_dir}",
                   f"--train_file={train_file}", f"--dev_file={train_file}",
                   f"--output_dir={tmp_path / 'finetuned'}", "--epochs=1", "--batch_size=8",
                   "--seq_length=32", "--noserving_export"], timeout=300)
  said_once(finetuned)
  assert f"taking the weights of its checkpoint {previous}" in finetuned.stderr
  assert checkpoint_files(directory) == files  # the readers removed nothing

  resumed = run([*tiny_run(run_dir, data_dir), "--noserving_export"], timeout=600)
  said_once(resumed)
  assert f"Resumed from the checkpoint at step {PREVIOUS} of {LATEST}" in resumed.stderr
  with open(os.path.join(run_dir, model_dir.METRICS_FILE)) as f:
    assert json.load(f)["steps"] == LATEST
  assert model_dir.why_not_whole(latest) == ""  # trained again, whole
  assert os.path.exists(os.path.join(run_dir, model_dir.WEIGHTS_FILE))

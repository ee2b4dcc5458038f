"""Input that fails mid-run: a corpus file, then (in the re-run) the held-out file, removed
while a real training process reads it. Each time the run stops with one line naming the file
and the step, a checkpoint of that step, exit status 1; put back, the same command resumes
from that step, and the last re-run ends with the weights of a run never interrupted.

The corpus is small (two files of 2 documents, an epoch in fewer than 10 steps), so that the
training stream reads its files again within the run: a file removed after a
checkpoint is missed at the next epoch, or, for the held-out file, at the next evaluation
(every 4 steps).
"""

import glob
import os
import re
import signal
import subprocess

import numpy as np
import pytest

from bert_tf.training.trainer import TrainConfig, train
from helpers import (
  latest_checkpoint_step,
  one_layer_config,
  run,
  start,
  wait_for_checkpoint,
  weights,
)

pytestmark = pytest.mark.e2e

TRAIN_STEPS = 24


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, corpus_pattern):
  """Two training files and a held-out one, of 2 documents each (some 10 kB), from the
  built-in corpus."""
  first = sorted(glob.glob(corpus_pattern))[0]
  documents = open(first).read().split("\n\n")
  directory = tmp_path_factory.mktemp("small_corpus")
  for i, name in enumerate(("a.txt", "b.txt", "held_out.txt")):
    (directory / name).write_text("\n\n".join(documents[2 * i:2 * (i + 1)]) + "\n")
  return directory


# The run: on the small corpus, held-out figures every 4 steps; as `TrainConfig` fields (the
# model: `helpers.one_layer_config`).
SETTINGS = dict(seq_length=32, max_predictions_per_seq=5, global_batch_size=8,
                train_steps=TRAIN_STEPS, checkpoint_every=2, eval_every=4, warmup_steps=2,
                eval_steps=1, verbose=False, seed=7, serving_export=False)


def settings(corpus, model_dir, data_dir, vocab_file) -> dict:
  return dict(SETTINGS, data_dir=data_dir, vocab_file=vocab_file, model_dir=model_dir,
              config=one_layer_config(vocab_file),
              input_files=f"{corpus / 'a.txt'},{corpus / 'b.txt'}",
              eval_files=str(corpus / "held_out.txt"))


def command(corpus, model_dir, data_dir, vocab_file):
  """train.py's arguments for the run."""
  return ["train.py", *(f"--{name}={value}" for name, value in
                        settings(corpus, model_dir, data_dir, vocab_file).items())]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, corpus, data_dir, vocab_file):
  """The weights of the run never interrupted, trained in this process (as train.py does)."""
  model_dir = str(tmp_path_factory.mktemp("uninterrupted") / "run")
  train(TrainConfig(**settings(corpus, model_dir, data_dir, vocab_file)))
  return weights(model_dir)


def stopped_by_removal(process, model_dir, corpus, tmp_path, removed) -> tuple[int, str]:
  """Removes `removed` while `process` trains in `model_dir` (it has saved a checkpoint since
  it started), puts it back once the process ended, and checks that it stopped as documented,
  with a checkpoint of the step it stopped at: (that step, its stderr)."""
  path = corpus / removed
  os.rename(path, tmp_path / removed)  # the file is gone while the run reads on
  try:
    _, stderr = process.communicate(timeout=600)
  except subprocess.TimeoutExpired:
    process.send_signal(signal.SIGKILL)
    raise
  finally:
    os.rename(tmp_path / removed, path)  # back, with its size and modification time
  assert process.returncode == 1, stderr[-3000:]
  assert "Traceback" not in stderr, stderr[-3000:]
  named = re.escape(str(path))  # a read that fails, or (held out) a listing
  stopped = re.search(rf"stopped: could not read the input at step (\d+): ({named}: No such "
                      rf"file or directory|no file matches '{named}'); saved at step (\d+): "
                      r"once the file is back, re-run the command to go on", stderr)
  assert stopped, stderr[-3000:]
  step = int(stopped.group(1))
  assert 2 <= step < TRAIN_STEPS and int(stopped.group(3)) == step
  assert latest_checkpoint_step(model_dir) == step
  return step, stderr


def resumed_from(stderr, step):
  """Checks that the run whose stderr this is resumed from `step`, on the same stream."""
  assert f"Resumed from the checkpoint at step {step}" in stderr, stderr[-3000:]
  assert "Changed since" not in stderr  # the same files: no new stream


def test_a_file_removed_mid_run_stops_with_a_checkpoint_then_resumes(
    uninterrupted, corpus, tmp_path, data_dir, vocab_file):
  """One run, a training file removed after its first checkpoint, then (re-run, put back) the
  held-out file removed after the re-run's first checkpoint; each stops it, and each re-run
  resumes where it stopped; the last one ends with the uninterrupted run's weights."""
  model_dir = str(tmp_path / "run")
  args = command(corpus, model_dir, data_dir, vocab_file)
  process = start(args)
  wait_for_checkpoint([model_dir], 2, [process], timeout=600)
  step, _ = stopped_by_removal(process, model_dir, corpus, tmp_path, "b.txt")

  process = start(args)
  wait_for_checkpoint([model_dir], step + 1, [process], timeout=600)
  held_out_step, stderr = stopped_by_removal(process, model_dir, corpus, tmp_path,
                                             "held_out.txt")
  resumed_from(stderr, step)
  assert held_out_step > step

  result = run(args, timeout=900)
  assert result.returncode == 0, result.stderr[-3000:]
  resumed_from(result.stderr, held_out_step)
  resumed = weights(model_dir)
  assert sorted(resumed) == sorted(uninterrupted)
  for name in uninterrupted:
    np.testing.assert_allclose(resumed[name], uninterrupted[name], atol=1e-5, err_msg=name)

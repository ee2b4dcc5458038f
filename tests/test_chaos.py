"""benchmarks/chaos.py, short: one tiny run hit by one fault of each kind (kill -9, SIGTERM,
Ctrl-C, a training file renamed away and back) at random moments ends with the weights, the
history.jsonl steps and the TensorBoard curves of the same run uninterrupted.

Every attempt, and the uninterrupted run, is train.py forked from the warm Python
(`helpers.start`), not the benchmark's fresh interpreter: the faults act on the same command."""

import importlib.util
import os
import subprocess

import numpy as np
import pytest

from helpers import ROOT, one_layer_config, run, start

_spec = importlib.util.spec_from_file_location(
    "chaos", os.path.join(ROOT, "benchmarks", "chaos.py"))
chaos = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chaos)

pytestmark = pytest.mark.e2e

TRAIN_STEPS = 40  # a renamed file stops the run within an epoch (about 10 steps)
EVERY = 2


def warm_start(args):
  """`chaos.command`'s train.py (args[0] is the interpreter) forked from the warm Python."""
  return start(args[1:], stdout=subprocess.DEVNULL)


def test_a_run_hit_by_one_fault_of_each_kind_ends_as_an_uninterrupted_one(tmp_path, vocab_file):
  data_dir, vocab_file, corpus_files = chaos.prepare(str(tmp_path), vocab_file)
  settings = dict(chaos.run_settings(TRAIN_STEPS, EVERY, seed=3),
                  config=one_layer_config(vocab_file))  # the model: one layer
  model_dir, reference_dir = str(tmp_path / "chaos"), str(tmp_path / "reference")
  chaotic = chaos.Chaos(chaos.command(model_dir, data_dir, vocab_file, corpus_files, settings),
                        model_dir, corpus_files, EVERY, TRAIN_STEPS,
                        np.random.default_rng(3), log=lambda line: None, start=warm_start)
  faults = chaotic.schedule(4)
  assert sorted(faults) == sorted(chaos.KINDS)
  chaotic.run(faults)
  assert chaotic.problems == []
  assert dict(chaotic.survived) == {kind: 1 for kind in chaos.KINDS}
  reference = run(chaos.command(reference_dir, data_dir, vocab_file, corpus_files,
                                settings)[1:], timeout=900)
  assert reference.returncode == 0, reference.stderr[-3000:]

  checks = chaos.compare(model_dir, reference_dir)
  assert all(passed for passed, _ in checks.values()), checks
  assert chaos.history_steps(model_dir) == list(range(1, TRAIN_STEPS + 1))
  assert chaos.largest_weight_difference(model_dir, reference_dir) <= 1e-5

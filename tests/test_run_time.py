"""The split of a run's wall time, and the durations it is written in."""

import time

from bert_tf.training.watching import run_time


def test_duration():
  assert [run_time.duration(s) for s in (0, 42.4, 380, 3600 * 3 + 300)] == [
      "0s", "42s", "6m 20s", "3h 05m"]


def test_timing_adds_each_call_under_its_kind():
  clock = run_time.Clock()
  nap = clock.timing(run_time.CHECKPOINTS, time.sleep)
  nap(0.05)
  nap(0.05)
  assert 0.1 <= clock.seconds[run_time.CHECKPOINTS] < 0.5
  assert nap.__name__ == "sleep"


def test_split_names_every_kind_and_the_rest():
  clock = run_time.Clock()
  clock.started -= 100  # a run of 100 seconds so far
  clock.add(run_time.TRAINING, 80)
  clock.add(run_time.CHECKPOINTS, 12)
  clock.add(run_time.EVALUATIONS, 3)
  assert clock.split() == ("Wall time 1m 40s: training 80% (1m 20s), checkpoints 12% (12s), "
                           "held-out evaluations 3% (3s), other 5% (5s)")


def test_a_call_timed_inside_another_counts_under_its_own_kind_only():
  clock = run_time.Clock()
  probe = clock.timing(run_time.PROBES, time.sleep)
  evaluation = clock.timing(run_time.EVALUATIONS, lambda: (time.sleep(0.05), probe(0.2)))
  evaluation()
  assert 0.2 <= clock.seconds[run_time.PROBES] < 0.3
  assert 0.05 <= clock.seconds[run_time.EVALUATIONS] < 0.15

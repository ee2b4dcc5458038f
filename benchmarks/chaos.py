"""A run hit by many faults at random moments ends where an uninterrupted one does.

    python benchmarks/chaos.py --faults=20 --train_steps=300 --seed=0

One train.py run of bert_tiny on 8 documents of the built-in corpus in 4 files (a vocabulary
learned from the whole built-in corpus once) is started, hit by a fault at a random moment
inside training, and started again with the same command, until it finishes. The faults, in
an order drawn from `--seed`, cycle through:
- `kill -9`: the process ends at once; the re-run resumes from the latest checkpoint;
- SIGTERM (preemption) and SIGINT (Ctrl-C): it saves at the current step and stops (status 1);
- a training corpus file renamed away: the run stops with one line naming it and a checkpoint
  of its step (status 1); the file is renamed back before the next attempt.
Each answer is checked: a stopped run's line names the step of its latest checkpoint, a signal
stops it within 30 s, no attempt leaves the finished run's weights, and each attempt says it
resumed from the checkpoint the last one left.
A fault's moment: a checkpoint 1 to 3 intervals after the one the attempt started from (so
training is under way), then a random share of one interval's time (timed in this run). A
renamed file stops the run when the stream next opens it: the corpus is small, so
that is within an epoch, a few dozen steps.

Then the same command runs uninterrupted in another model_dir, and the two are compared:
- the final weights (`model.weights.h5`), to 1e-5 as the single-fault tests compare them;
- `history.jsonl`: the same steps, in order, no gap and no repeat;
- TensorBoard: every event file under `logs/`, read in order, gives each tag of each run
  (`train`, `eval`) strictly increasing steps, and the uninterrupted run's steps (but the
  rates over training time, which each attempt's first step, tracing, has none of).
It prints the faults survived by kind, the largest weight difference and the wall times;
exit status 1 when a check fails.
"""

import argparse
import collections
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KILL, TERM, INT, RENAME = "kill -9", "SIGTERM", "SIGINT (Ctrl-C)", "file renamed away"
KINDS = (KILL, TERM, INT, RENAME)
SIGNALS = {KILL: signal.SIGKILL, TERM: signal.SIGTERM, INT: signal.SIGINT}
CORPUS_FILES = 4
# Scalars of training time, which a run's first step (tracing, compiling) has none of: missing
# at each attempt's first record, so compared only for order.
TIMED = ("examples_per_second", "tokens_per_second", "padding_share",
         "model_flops_utilisation")
TOLERANCE = 1e-5  # as tests/test_resume.py's single faults
STOP_SECONDS = 30  # the longest a SIGTERM or Ctrl-C may take to save and stop

# Each fault's stopping line (status 1); a kill -9 prints nothing.
STOPPED = {TERM: r"stopped by SIGTERM at step (\d+)",
           INT: r"stopped: interrupted at step (\d+), saved; re-run the command to go on",
           RENAME: r"stopped: could not read the input at step (\d+): {path}: No such file or "
                   r"directory; saved at step \d+: once the file is back"}


def run_settings(train_steps: int, checkpoint_every: int, seed: int) -> dict:
  """The run's train.py flags: bert_tiny on sequences of 64, dropout on, a training record at
  every step (so that a lost one shows as a gap); no serving SavedModel, which nothing here
  compares (it is written after the last step, where no fault falls, and its verification
  in a fresh process would add some 15 s to both the last attempt and the uninterrupted run)."""
  return dict(config="bert_tiny", seq_length=64, max_predictions_per_seq=10,
              global_batch_size=8, train_steps=train_steps, checkpoint_every=checkpoint_every,
              warmup_steps=2, log_every=1, eval_steps=1, verbose=False,
              seed=seed, serving_export=False)


def prepare(work_dir: str, vocab_file: str = "") -> tuple[str, str, list]:
  """Under `work_dir`: the built-in corpus, a vocabulary learned from it (unless `vocab_file`,
  one learned already, is given), and the run's training files, `CORPUS_FILES` of 2 of its
  documents each (so that an epoch is a few dozen steps and the stream opens every file again
  soon): (data_dir, vocab_file, training files)."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  sys.path.insert(0, ROOT)
  from bert_tf.data import builtin_corpus
  from bert_tf.data.vocabulary_learner import build_vocabulary
  data_dir = os.path.join(work_dir, "data")
  vocab_file = vocab_file or os.path.join(data_dir, "vocab.txt")
  pattern = builtin_corpus.corpus_pattern(data_dir)
  if not os.path.exists(vocab_file):
    build_vocabulary(pattern, vocab_file, vocab_size=8000)
  documents = open(sorted(glob.glob(pattern))[0]).read().split("\n\n")
  os.makedirs(os.path.join(work_dir, "corpus"), exist_ok=True)
  paths = []
  for i in range(CORPUS_FILES):
    paths.append(os.path.join(work_dir, "corpus", f"part-{i}.txt"))
    with open(paths[-1], "w") as f:
      f.write("\n\n".join(documents[2 * i:2 * (i + 1)]) + "\n")
  return data_dir, vocab_file, paths


def command(model_dir: str, data_dir: str, vocab_file: str, corpus_files: list,
            settings: dict) -> list:
  return [sys.executable, os.path.join(ROOT, "train.py"), f"--data_dir={data_dir}",
          f"--vocab_file={vocab_file}", f"--model_dir={model_dir}",
          f"--input_files={','.join(corpus_files)}",
          *(f"--{name}={value}" for name, value in settings.items())]


def start_env() -> dict:
  """This environment with this checkout's bert_tf importable and TensorFlow's C++ log quiet."""
  return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
              PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))


def start(args: list) -> subprocess.Popen:
  return subprocess.Popen(args, cwd=ROOT, env=start_env(), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)


def latest_checkpoint_step(model_dir: str) -> int:
  """The step of the checkpoint the `checkpoint` state file names as the latest (-1: none)."""
  state = os.path.join(model_dir, "checkpoints", "checkpoint")
  try:
    text = open(state).read()
  except FileNotFoundError:
    return -1
  found = re.search(r'^model_checkpoint_path: "ckpt-(\d+)"', text, re.MULTILINE)
  return int(found.group(1)) if found else -1


def wait_for_step(model_dir: str, step: int, process: subprocess.Popen) -> bool:
  """Waits until the latest checkpoint is at `step` or later; False if the process ended."""
  while latest_checkpoint_step(model_dir) < step:
    if process.poll() is not None:
      return False
    time.sleep(0.02)
  return True


class Chaos:
  """Drives one run through faults until it finishes; `survived` counts them by kind,
  `problems` lists what went wrong (a fault not answered as documented). Each attempt is
  `start(args)`: a process with `subprocess.Popen`'s `poll`, `send_signal` and `communicate`,
  its stderr piped as text (a caller may start it otherwise than a fresh interpreter)."""

  def __init__(self, args: list, model_dir: str, corpus_files: list, every: int,
               train_steps: int, rng: np.random.Generator, log=print, start=start):
    self.args, self.model_dir, self.corpus_files = args, model_dir, corpus_files
    self.every, self.train_steps, self.rng, self.log = every, train_steps, rng, log
    self.start = start
    self.survived = collections.Counter()
    self.problems = []
    self.attempts = 0
    # One checkpoint interval's time, measured as the run goes (until then the fault falls
    # right after a checkpoint: a guess could outlast the run's remaining steps).
    self.interval_seconds = 0.0

  def schedule(self, count: int) -> list:
    """`count` faults, each kind in turn (so all appear from 4 on), in a random order."""
    return list(self.rng.permutation([KINDS[i % len(KINDS)] for i in range(count)]))

  def run(self, faults: list) -> None:
    """Starts the command, hits it with each fault in turn, then lets it finish."""
    for index, kind in enumerate(faults):
      if self._attempt(kind, len(faults) - index):
        return
    self._finish()

  def _finish(self) -> None:
    self.attempts += 1
    resumed = latest_checkpoint_step(self.model_dir)
    process = self.start(self.args)
    _, stderr = process.communicate()
    if process.returncode:
      self.problems.append(f"the last attempt failed ({process.returncode}): "
                           f"{stderr[-2000:]}")
    self._check_resumed(resumed, stderr)

  def _attempt(self, kind: str, faults_left: int) -> bool:
    """One attempt hit by a fault of `kind`; True if the run finished first."""
    self.attempts += 1
    resumed = latest_checkpoint_step(self.model_dir)
    process = self.start(self.args)
    first = (max(resumed, 0) // self.every + 1) * self.every  # training is under way
    target = self._target(first, faults_left)
    if not wait_for_step(self.model_dir, first, process):
      return self._ended(process, kind)
    began = time.time()
    if not wait_for_step(self.model_dir, target, process):
      return self._ended(process, kind)
    if target > first:
      self.interval_seconds = (time.time() - began) / ((target - first) // self.every)
    time.sleep(self.rng.uniform(0, self.interval_seconds))
    moved = None
    if kind == RENAME:
      moved = self.corpus_files[self.rng.integers(len(self.corpus_files))]
      os.rename(moved, moved + ".away")
    else:
      process.send_signal(SIGNALS[kind])
    faulted = time.time()
    try:
      _, stderr = process.communicate(timeout=900)
    finally:
      if moved:
        os.rename(moved + ".away", moved)
    self._check_resumed(resumed, stderr)
    if process.returncode == 0:  # finished before the fault told
      self.log(f"  attempt {self.attempts}: {kind} after ckpt-{target}: finished first")
      return True
    if kind in (TERM, INT) and time.time() - faulted > STOP_SECONDS:
      self.problems.append(f"attempt {self.attempts}: {kind} took "
                           f"{time.time() - faulted:.0f} s to stop")
    self._check_stop(kind, process.returncode, stderr, moved)
    return False

  def _target(self, first: int, faults_left: int) -> int:
    """A checkpoint step 0 to 2 intervals after `first`, fewer when the steps left must be
    shared by many faults; at least two intervals before the last step, so that the fault,
    which waits up to an interval's time, falls before the run can finish."""
    last = max(first, (self.train_steps - 1) // self.every * self.every - 2 * self.every)
    room = max(0, (last - first) // self.every // faults_left)
    return min(last, first + self.every * int(self.rng.integers(0, min(2, room) + 1)))

  def _ended(self, process, kind) -> bool:
    _, stderr = process.communicate()
    if process.returncode:
      self.problems.append(f"attempt {self.attempts} failed before its {kind} "
                           f"({process.returncode}): {stderr[-2000:]}")
    return True

  def _check_resumed(self, resumed: int, stderr: str) -> None:
    """An attempt started on a checkpoint must say it resumed from that one."""
    if resumed >= 0 and f"Resumed from the checkpoint at step {resumed} " not in stderr:
      self.problems.append(f"attempt {self.attempts} did not say it resumed from ckpt-"
                           f"{resumed}: {stderr[-2000:]}")

  def _check_stop(self, kind: str, status: int, stderr: str, moved: str | None) -> None:
    """The fault answered as documented: a kill -9 ends the process; the others stop it
    with status 1, their line and a checkpoint of the step the line names. None leaves the
    finished run's weights."""
    at = latest_checkpoint_step(self.model_dir)
    if kind == KILL:
      ok = status == -signal.SIGKILL
    else:
      stopped = re.search(STOPPED[kind].format(path=re.escape(moved or "")), stderr)
      ok = (status == 1 and stopped and int(stopped.group(1)) == at
            and "Traceback" not in stderr)
    ok = ok and not os.path.exists(os.path.join(self.model_dir, "model.weights.h5"))
    if ok:
      self.survived[kind] += 1
      self.log(f"  attempt {self.attempts}: {kind}, latest checkpoint {at}")
    else:
      self.problems.append(f"attempt {self.attempts}: {kind} answered with status {status}: "
                           f"{stderr[-2000:]}")


# === Checks ===

def weights(model_dir: str) -> dict:
  """The arrays of `model_dir/model.weights.h5` by name."""
  values = {}
  with h5py.File(os.path.join(model_dir, "model.weights.h5"), "r") as f:
    f.visititems(lambda name, item: values.__setitem__(name, np.array(item))
                 if isinstance(item, h5py.Dataset) else None)
  return values


def largest_weight_difference(model_dir: str, reference_dir: str) -> float:
  ours, theirs = weights(model_dir), weights(reference_dir)
  if sorted(ours) != sorted(theirs):
    return float("inf")
  return max(float(np.max(np.abs(ours[name] - theirs[name]))) for name in ours)


def history_steps(model_dir: str) -> list:
  """The steps of history.jsonl's training records, in the file's order."""
  with open(os.path.join(model_dir, "history.jsonl")) as f:
    records = [json.loads(line) for line in f if line.strip()]
  return [r["step"] for r in records if "loss" in r]


def tensorboard_steps(model_dir: str) -> dict:
  """{(run, tag): steps} from every event file under `model_dir/logs`, each run's files in
  the order they were written."""
  import tensorflow as tf
  steps = collections.defaultdict(list)
  for run in sorted(os.listdir(os.path.join(model_dir, "logs"))):
    paths = glob.glob(os.path.join(model_dir, "logs", run, "events.out.tfevents.*"))
    # events.out.tfevents.<seconds>.<host>...: by the time each writer started
    for path in sorted(paths, key=lambda p: (int(os.path.basename(p).split(".")[3]), p)):
      for event in tf.compat.v1.train.summary_iterator(path):
        for value in event.summary.value:
          steps[run, value.tag].append(event.step)
  return dict(steps)


def compare(model_dir: str, reference_dir: str) -> dict:
  """The checks' figures and verdicts: {name: (passed, what was found)}."""
  difference = largest_weight_difference(model_dir, reference_dir)
  ours, theirs = history_steps(model_dir), history_steps(reference_dir)
  repeats = sorted(step for step, n in collections.Counter(ours).items() if n > 1)
  gaps = sorted(set(theirs) - set(ours))
  boards, reference_boards = tensorboard_steps(model_dir), tensorboard_steps(reference_dir)
  unordered = sorted(f"{run}/{tag}" for (run, tag), steps in boards.items()
                     if any(b <= a for a, b in zip(steps, steps[1:])))
  differing = sorted(f"{run}/{tag}" for key in set(boards) | set(reference_boards)
                     for run, tag in [key] if tag not in TIMED
                     and sorted(set(boards.get(key, []))) != reference_boards.get(key))
  return {
      "weights": (difference <= TOLERANCE, f"largest difference {difference:.2e} "
                  f"(tolerance {TOLERANCE:g})"),
      "history.jsonl": (ours == theirs, f"{len(ours)} training records, steps {ours[:1]}.."
                        f"{ours[-1:]}; repeated {repeats[:10]}, missing {gaps[:10]}, "
                        f"in order {ours == sorted(ours)}"),
      "TensorBoard": (not unordered and not differing,
                      f"{len(boards)} curves; not strictly increasing: {unordered[:5]}; "
                      f"other steps than uninterrupted (rates aside): {differing[:5]}"),
  }


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--faults", type=int, default=20)
  parser.add_argument("--train_steps", type=int, default=300)
  parser.add_argument("--checkpoint_every", type=int, default=5)
  parser.add_argument("--seed", type=int, default=0, help="draws the faults and moments")
  parser.add_argument("--work_dir", default="", help="default: a temporary directory")
  args = parser.parse_args(argv)
  work_dir = args.work_dir or tempfile.mkdtemp(prefix="chaos-")
  data_dir, vocab_file, corpus_files = prepare(work_dir)
  settings = run_settings(args.train_steps, args.checkpoint_every, args.seed)
  model_dir, reference_dir = (os.path.join(work_dir, name) for name in ("chaos", "reference"))
  for directory in (model_dir, reference_dir):
    shutil.rmtree(directory, ignore_errors=True)

  began = time.time()
  chaos = Chaos(command(model_dir, data_dir, vocab_file, corpus_files, settings), model_dir,
                corpus_files, args.checkpoint_every, args.train_steps,
                np.random.default_rng(args.seed))
  chaos.run(chaos.schedule(args.faults))
  chaos_seconds = time.time() - began
  began = time.time()
  reference = subprocess.run(
      command(reference_dir, data_dir, vocab_file, corpus_files, settings), cwd=ROOT,
      capture_output=True, text=True, env=start_env())
  reference_seconds = time.time() - began
  if reference.returncode:
    raise SystemExit(f"the uninterrupted run failed: {reference.stderr[-3000:]}")
  return report(chaos, compare(model_dir, reference_dir), args.faults, chaos_seconds,
                reference_seconds)


def report(chaos: Chaos, checks: dict, asked: int, chaos_seconds: float,
           reference_seconds: float) -> int:
  """Prints the table; the exit status (1 when a check failed)."""
  survived = sum(chaos.survived.values())
  checks["faults"] = (survived >= asked and not chaos.problems,
                      f"{survived} of {asked} survived in {chaos.attempts} attempts")
  print("\n| check | result | found |\n|---|---|---|")
  for name, (passed, found) in checks.items():
    print(f"| {name} | {'pass' if passed else 'FAIL'} | {found} |")
  print("\n| fault | survived |\n|---|---|")
  for kind in KINDS:
    print(f"| {kind} | {chaos.survived[kind]} |")
  print(f"\nwall time: {chaos_seconds:.0f} s with the faults, {reference_seconds:.0f} s "
        "uninterrupted")
  for problem in chaos.problems:
    print("problem:", problem)
  return 0 if all(passed for passed, _ in checks.values()) else 1


if __name__ == "__main__":
  sys.exit(main())

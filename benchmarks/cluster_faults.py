"""How a two-worker train.py run (`--strategy=multi_worker`, TF_CONFIG, 127.0.0.1) ends under
each cluster fault, and where a re-run goes on from.

    python benchmarks/cluster_faults.py --cluster_timeout=30 [--faults=descriptions|lost]

The faults: a peer that never starts; one that answers on its port but never joins (it went
away or hung before TensorFlow's servers met); descriptions that cannot form a cluster
(TF_CONFIG not JSON, a task index out of range, an address that does not resolve, two workers
with one index);
a worker killed with -9 mid-run and one stopped with SIGSTOP (later SIGCONT), each for worker 1
and for worker 0 (the chief, which also leads TensorFlow's coordination service). For each it
prints the seconds from the fault until every worker had stopped, the exit statuses, the last
line each worker printed, and, after a lost worker, the step a re-run of both workers resumed
from (the re-run trains 4 steps more, and its seconds to finish are printed too). Exit status
1 when a worker does not end within its bound (60 s for a lost peer, --cluster_timeout plus
30 s for the rest) or says something other than what the fault is.
"""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOST_WITHIN = 60
CHECKPOINT_EVERY = 4


def prepare(work_dir: str, vocab_file: str) -> tuple[str, str]:
  """The built-in corpus under `work_dir` and a vocabulary learned from it (unless given)."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  sys.path.insert(0, ROOT)
  from bert_tf.data import builtin_corpus
  from bert_tf.data.vocabulary_learner import build_vocabulary
  data_dir = os.path.join(work_dir, "data")
  pattern = builtin_corpus.corpus_pattern(data_dir)
  if not vocab_file:
    vocab_file = os.path.join(data_dir, "vocab.txt")
    build_vocabulary(pattern, vocab_file, vocab_size=8000)
  return data_dir, vocab_file


def free_ports(count: int) -> list:
  sockets = [socket.socket() for _ in range(count)]
  for s in sockets:
    s.bind(("127.0.0.1", 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


def answers(address: str) -> bool:
  host, port = address.rsplit(":", 1)
  try:
    socket.create_connection((host, int(port)), timeout=2).close()
    return True
  except OSError:
    return False


def tf_config(addresses: list, index: int) -> str:
  return json.dumps({"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}})


class Runs:
  """Starts train.py workers of one model_dir's run."""

  def __init__(self, data_dir: str, vocab_file: str, timeout: float):
    self.data_dir, self.vocab_file, self.timeout = data_dir, vocab_file, timeout

  def command(self, model_dir: str, train_steps: int = 100000) -> list:
    return [sys.executable, os.path.join(ROOT, "train.py"), f"--data_dir={self.data_dir}",
            f"--vocab_file={self.vocab_file}", f"--model_dir={model_dir}", "--config=bert_tiny",
            "--seq_length=64", "--max_predictions_per_seq=10", "--global_batch_size=8",
            f"--train_steps={train_steps}", f"--checkpoint_every={CHECKPOINT_EVERY}",
            "--warmup_steps=2", "--eval_steps=1", "--verbose=false", "--serving_export=false",
            "--strategy=multi_worker", f"--cluster_timeout={self.timeout:g}"]

  def start(self, model_dir: str, config: str, train_steps: int = 100000) -> subprocess.Popen:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", TF_CONFIG=config,
               PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    return subprocess.Popen(self.command(model_dir, train_steps), cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def last_line(stderr: str) -> str:
  lines = [line for line in stderr.splitlines() if line.strip()]
  return lines[-1] if lines else ""


def last_lines(waited: tuple) -> tuple:
  seconds, statuses, outputs = waited
  return seconds, statuses, [last_line(output) for output in outputs]


def latest_checkpoint_step(model_dir: str) -> int:
  try:
    text = open(os.path.join(model_dir, "checkpoints", "checkpoint")).read()
  except FileNotFoundError:
    return -1
  found = re.search(r'^model_checkpoint_path: "ckpt-(\d+)"', text, re.MULTILINE)
  return int(found.group(1)) if found else -1


def wait_all(processes: list, since: float, within: float) -> tuple[float, list, list]:
  """Waits for `processes` (killed past `within` seconds from `since`): (seconds from `since`
  until the last ended, statuses, each one's stderr)."""
  outputs = []
  for process in processes:
    try:
      _, stderr = process.communicate(timeout=max(1.0, since + within - time.monotonic()))
    except subprocess.TimeoutExpired:
      process.kill()
      _, stderr = process.communicate()
      stderr += "\n(killed: still running past the bound)"
    outputs.append(stderr)
  seconds = time.monotonic() - since
  return seconds, [p.returncode for p in processes], outputs


def description_faults(runs: Runs, work_dir: str) -> list:
  """Rows of the faults before anything starts: a peer that never starts, wrong descriptions."""
  rows = []
  addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
  model_dir = os.path.join(work_dir, "never")
  started = time.monotonic()
  seconds, statuses, lines = last_lines(wait_all(
      [runs.start(model_dir, tf_config(addresses, 0))], started, runs.timeout + 60))
  rows.append(dict(fault="peer never starts", seconds=seconds, statuses=statuses, lines=lines,
                   ok=statuses == [1] and "never joined" in lines[0]
                   and not os.path.exists(model_dir)))
  started = time.monotonic()
  with socket.create_server(("127.0.0.1", int(addresses[1].rsplit(":", 1)[1]))):
    seconds, statuses, lines = last_lines(wait_all(
        [runs.start(model_dir, tf_config(addresses, 0))], started, 2 * runs.timeout + 60))
  rows.append(dict(fault="peer answers, never joins", seconds=seconds, statuses=statuses,
                   lines=lines, ok=statuses == [1] and "never joined" in lines[0]
                   and not os.path.exists(model_dir)))
  for fault, config, expected in (
      ("TF_CONFIG not JSON", "{not json", "is not JSON"),
      ("task index out of range", tf_config(addresses, 2), "out of range"),
      ("address does not resolve", tf_config(["nowhere.invalid:1", addresses[1]], 1),
       "does not resolve")):
    started = time.monotonic()
    seconds, statuses, lines = last_lines(wait_all([runs.start(model_dir, config)], started, 120))
    rows.append(dict(fault=fault, seconds=seconds, statuses=statuses, lines=lines,
                     ok=statuses == [2] and expected in lines[0]))
  # Two workers with index 0: the second finds the port taken while the first waits for worker 1.
  first = runs.start(model_dir, tf_config(addresses, 0))
  while first.poll() is None and not answers(addresses[0]):  # the first is listening
    time.sleep(0.1)
  started = time.monotonic()
  seconds, statuses, lines = last_lines(wait_all(
      [runs.start(model_dir + "-2", tf_config(addresses, 0))], started, 120))
  first.kill()
  first.communicate()
  rows.append(dict(fault="two workers with one index", seconds=seconds, statuses=statuses,
                   lines=lines, ok=statuses == [2] and "is taken" in lines[0]))
  return rows


def lost_worker(runs: Runs, work_dir: str, fault: str, victim: int) -> dict:
  """A two-worker run that loses worker `victim` (kill -9, or SIGSTOP then SIGCONT once the
  other stopped) after its third checkpoint; then both re-run for 4 steps more."""
  model_dir = os.path.join(work_dir, f"{fault}-{victim}".replace(" ", ""))
  addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
  configs = [tf_config(addresses, index) for index in range(2)]
  workers = [runs.start(model_dir, config) for config in configs]
  dirs = [model_dir, os.path.join(model_dir, "workers", "worker-1")]
  while min(latest_checkpoint_step(d) for d in dirs) < 3 * CHECKPOINT_EVERY:
    if any(w.poll() is not None for w in workers):  # the row says how they ended
      seconds, statuses, lines = last_lines(wait_all(workers, time.monotonic(), 120))
      return dict(fault=f"{fault} worker {victim}: a worker ended before the fault",
                  seconds=seconds, statuses=statuses, lines=lines, ok=False)
    time.sleep(0.05)
  victim_process, others = workers[victim], [w for i, w in enumerate(workers) if i != victim]
  started = time.monotonic()
  if fault == "kill -9":
    victim_process.send_signal(signal.SIGKILL)
    seconds, statuses, lines = last_lines(wait_all(others, started, LOST_WITHIN))
    victim_process.communicate()
    statuses.insert(victim, victim_process.returncode)
    lines.insert(victim, "(killed)")
    victim_seconds = None
  else:
    victim_process.send_signal(signal.SIGSTOP)
    seconds, statuses, lines = last_lines(wait_all(others, started, LOST_WITHIN))
    victim_process.send_signal(signal.SIGCONT)
    continued = time.monotonic()
    victim_seconds, victim_status, victim_line = last_lines(wait_all(
        [victim_process], continued, runs.timeout + 30))
    statuses.insert(victim, victim_status[0])
    lines.insert(victim, victim_line[0])
  common = min(latest_checkpoint_step(d) for d in dirs)
  rerun_started = time.monotonic()
  rerun = [runs.start(model_dir, config, train_steps=common + CHECKPOINT_EVERY)
           for config in configs]
  rerun_seconds, rerun_statuses, outputs = wait_all(rerun, rerun_started, 900)
  resumed = [re.search(r"Resumed from the checkpoint at step (\d+)", output) for output in outputs]
  resumed = resumed[0].group(1) if all(resumed) else None
  ok = (seconds < LOST_WITHIN and all(s == 1 for i, s in enumerate(statuses) if i != victim)
        and all("a worker was lost" in line for i, line in enumerate(lines)
                if i != victim or fault != "kill -9")
        and (victim_seconds is None or victim_seconds < runs.timeout + 30)
        and rerun_statuses == [0, 0])
  return dict(fault=f"{fault} worker {victim}", seconds=seconds, statuses=statuses,
              lines=lines, victim_seconds=victim_seconds, resumed=resumed,
              common=common, rerun_seconds=rerun_seconds, ok=ok)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--cluster_timeout", type=float, default=30)
  parser.add_argument("--vocab_file", default="", help="a vocabulary learned already")
  parser.add_argument("--work_dir", default="")
  parser.add_argument("--faults", default="all", choices=("all", "descriptions", "lost"),
                      help="all, those before anything starts, or the lost workers")
  args = parser.parse_args(argv)
  work_dir = args.work_dir or tempfile.mkdtemp(prefix="cluster_faults-")
  data_dir, vocab_file = prepare(work_dir, args.vocab_file)
  runs = Runs(data_dir, vocab_file, args.cluster_timeout)
  print(HEADER, flush=True)
  rows = []
  for row in description_faults(runs, work_dir) if args.faults != "lost" else []:
    rows.append(row)
    print(line_of(row), flush=True)
  for fault in ("kill -9", "SIGSTOP") if args.faults != "descriptions" else ():
    for victim in (1, 0):
      rows.append(lost_worker(runs, work_dir, fault, victim))
      print(line_of(rows[-1]), flush=True)
  return 0 if all(row["ok"] for row in rows) else 1


HEADER = ("| fault | s until every worker stopped | exit statuses | message (worker 0; worker 1) "
          "| re-run resumed from (its s to finish 4 steps) |\n|---|---|---|---|---|")


def line_of(row: dict) -> str:
  """The table's row of one fault."""
  seconds = f"{row['seconds']:.1f}"
  if row.get("victim_seconds") is not None:
    seconds += f" (the stopped one: {row['victim_seconds']:.1f} after SIGCONT)"
  resumed = (f"step {row['resumed']} ({row['rerun_seconds']:.0f} s)" if row.get("resumed")
             is not None else ("failed" if "resumed" in row else "-"))
  return (f"| {row['fault']}{'' if row['ok'] else ' (FAILED)'} | {seconds} | "
          f"{', '.join(map(str, row['statuses']))} | {'; '.join(row['lines'])} | {resumed} |")


if __name__ == "__main__":
  sys.exit(main())

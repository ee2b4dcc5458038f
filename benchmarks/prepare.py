"""Writing pre-training records: bert_tf.prepare side by side with google-research/bert's
create_pretraining_data.py, on the same corpus, vocabulary and settings, in one run.

    python benchmarks/prepare.py --original_dir=/path/to/bert --corpus_mb=2 --dupe_factor=2

`--original_dir` is a checkout of google-research/bert (its create_pretraining_data.py and
tokenization.py; nothing of it is copied here). Its TF1 code runs under tf.compat.v1: this
benchmark starts it with `tensorflow` standing for `tensorflow.compat.v1`. The corpus is the
built-in one repeated to `--corpus_mb` megabytes in 4 files; the vocabulary is learned from it.
Each command runs in its own process, with --dupe_factor=1 and with `--dupe_factor`; the
figures are records per second of wall time and per CPU-second (the process's user + system
time: records per core), start-up included, then per CPU-second beyond start-up (the
difference between the two runs).
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs the original script with `import tensorflow` giving tensorflow.compat.v1.
ORIGINAL_UNDER_COMPAT_V1 = """
import runpy, sys
import tensorflow
sys.modules["tensorflow"] = tensorflow.compat.v1
sys.path.insert(0, sys.argv[1])
script = sys.argv[1] + "/create_pretraining_data.py"
sys.argv = [script] + sys.argv[2:]
runpy.run_path(script, run_name="__main__")
"""


def build_corpus(directory: str, megabytes: float, files: int = 4) -> list[str]:
  import glob

  from bert_tf.data import builtin_corpus
  text = ""
  for path in sorted(glob.glob(builtin_corpus.corpus_pattern(directory))):
    with open(path, encoding="utf-8") as f:
      text += f.read().strip() + "\n\n"
  copies = max(1, round(megabytes * 1e6 / len(text.encode())))
  paths = [os.path.join(directory, f"corpus-{i}.txt") for i in range(files)]
  for i, path in enumerate(paths):
    with open(path, "w", encoding="utf-8") as f:
      f.write(text * len(range(i, copies, files)))
  return paths


def timed(command: list[str]) -> tuple[float, float]:
  """(wall seconds, CPU seconds) of a command run to its end."""
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  start = time.perf_counter()
  subprocess.run(command, check=True, cwd=ROOT, capture_output=True,
                 env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3"))
  wall = time.perf_counter() - start
  after = resource.getrusage(resource.RUSAGE_CHILDREN)
  return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def count_records(paths: list[str]) -> int:
  import tensorflow as tf
  return sum(1 for path in paths for _ in tf.data.TFRecordDataset(path))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--original_dir", required=True,
                      help="A checkout of google-research/bert.")
  parser.add_argument("--corpus_mb", type=float, default=2)
  parser.add_argument("--dupe_factor", type=int, default=2)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--max_predictions_per_seq", type=int, default=20)
  args = parser.parse_args()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  from bert_tf.data.vocabulary_learner import build_vocabulary

  with tempfile.TemporaryDirectory() as directory:
    corpus = build_corpus(directory, args.corpus_mb)
    vocab_file = os.path.join(directory, "vocab.txt")
    build_vocabulary(corpus, vocab_file, vocab_size=8000)
    rows = {}
    for dupe_factor in sorted({1, args.dupe_factor}):
      shared = [f"--vocab_file={vocab_file}", f"--max_predictions_per_seq="
                f"{args.max_predictions_per_seq}", f"--dupe_factor={dupe_factor}"]
      original_output = os.path.join(directory, f"original-{dupe_factor}.tfrecord")
      original = timed([sys.executable, "-c", ORIGINAL_UNDER_COMPAT_V1, args.original_dir,
                        f"--input_file={','.join(corpus)}", f"--output_file={original_output}",
                        f"--max_seq_length={args.seq_length}", *shared])
      rows["original create_pretraining_data.py", dupe_factor] = (
          count_records([original_output]), *original)
      ours_output = os.path.join(directory, f"ours-{dupe_factor}")
      ours = timed([sys.executable, "-m", "bert_tf.prepare", f"--input_files={','.join(corpus)}",
                    f"--output={ours_output}", f"--model_dir={directory}/run",
                    f"--seq_length={args.seq_length}", "--num_output_files=4", *shared])
      rows["bert_tf.prepare", dupe_factor] = (count_records(
          [os.path.join(ours_output, name) for name in os.listdir(ours_output)
           if name.endswith(".tfrecord")]), *ours)
    size = sum(os.path.getsize(path) for path in corpus) / 1e6
    print(f"corpus {size:.1f} MB, seq {args.seq_length}, "
          f"{len(os.sched_getaffinity(0))} core(s)")
    print(f"{'writer':<38}{'dupe':>5}{'records':>9}{'wall s':>8}{'CPU s':>8}{'records/s':>11}"
          f"{'records/CPU-s':>15}")
    for (name, dupe_factor), (records, wall, cpu) in rows.items():
      print(f"{name:<38}{dupe_factor:>5}{records:>9}{wall:>8.1f}{cpu:>8.1f}"
            f"{records / wall:>11.0f}{records / cpu:>15.0f}")
    if args.dupe_factor > 1:
      # Start-up (imports, checks, the graph) cancels out between the two dupe factors.
      print("records per CPU-second beyond start-up (the difference between the two runs):")
      for name in ("original create_pretraining_data.py", "bert_tf.prepare"):
        (few, _, few_cpu), (many, _, many_cpu) = rows[name, 1], rows[name, args.dupe_factor]
        print(f"  {name:<36}{(many - few) / (many_cpu - few_cpu):>10.0f}")

if __name__ == "__main__":
  main()

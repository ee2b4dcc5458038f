"""Writing pre-training records: bert_tf.prepare side by side with google-research/bert's
create_pretraining_data.py, on the same corpus, vocabulary and settings, in one run.

    python benchmarks/prepare.py --original_dir=/path/to/bert --corpus_mb=2 --dupe_factor=2

`--original_dir` is a checkout of google-research/bert (its create_pretraining_data.py and
tokenization.py; nothing of it is copied here). Its TF1 code runs under tf.compat.v1: this
benchmark starts it with `tensorflow` standing for `tensorflow.compat.v1`. The corpus is the
built-in one repeated to `--corpus_mb` megabytes in 4 files; the vocabulary is learned from it.
Each command runs in its own process; the figures are records per second of wall time and per
CPU-second (the process's user + system time: records per core), start-up included.
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
    shared = [f"--vocab_file={vocab_file}", f"--max_seq_length={args.seq_length}",
              f"--max_predictions_per_seq={args.max_predictions_per_seq}",
              f"--dupe_factor={args.dupe_factor}"]
    original_output = os.path.join(directory, "original.tfrecord")
    original = timed([sys.executable, "-c", ORIGINAL_UNDER_COMPAT_V1, args.original_dir,
                      f"--input_file={','.join(corpus)}", f"--output_file={original_output}",
                      *shared])
    ours_output = os.path.join(directory, "ours")
    ours = timed([sys.executable, "-m", "bert_tf.prepare", f"--input_files={','.join(corpus)}",
                  f"--output={ours_output}", f"--model_dir={directory}/run",
                  *(flag.replace("max_seq_length", "seq_length") for flag in shared),
                  "--num_output_files=4"])
    counts = {"original create_pretraining_data.py": (count_records([original_output]),
                                                      original),
              "bert_tf.prepare": (count_records(
                  [os.path.join(ours_output, name) for name in os.listdir(ours_output)
                   if name.endswith(".tfrecord")]), ours)}
    size = sum(os.path.getsize(path) for path in corpus) / 1e6
    print(f"corpus {size:.1f} MB, seq {args.seq_length}, dupe_factor {args.dupe_factor}, "
          f"{len(os.sched_getaffinity(0))} core(s)")
    print(f"{'writer':<38}{'records':>9}{'wall s':>8}{'CPU s':>8}{'records/s':>11}"
          f"{'records/CPU-s':>15}")
    for name, (records, (wall, cpu)) in counts.items():
      print(f"{name:<38}{records:>9}{wall:>8.1f}{cpu:>8.1f}{records / wall:>11.0f}"
            f"{records / cpu:>15.0f}")


if __name__ == "__main__":
  main()

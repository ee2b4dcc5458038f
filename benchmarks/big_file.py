"""Corpora of any size: one big file against the same text in 100 files (issue 12).

    python benchmarks/big_file.py --sizes_mb=4,600,2500 --batches=300
    python benchmarks/big_file.py --sizes_mb=4,160 --sharded_mb= --no_blank_lines --skip_vocab


Builds, from real text (the built-in corpus's documents, repeated), a single-file corpus of
each size in `--sizes_mb` and, for the sizes in `--sharded_mb`, the same text as 100 files.
For each corpus, each in a fresh process so that peak memory is its own, it measures
`bert_tf.pretraining_dataset` (seq 128, batch 64): time to the first batch, examples/s over
`--batches` batches after it, peak resident memory; and `python -m bert_tf.vocab`'s time and
peak memory (`--vocab_size`). Prints a table; deletes the corpora after. With
`--no_blank_lines` the text has no blank line: each file is one endless document, which the
reader cuts into parts (`corpus.MAX_SENTENCES_PER_DOCUMENT`); its peak memory should grow no
more with the file than that of files with documents.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

NUM_SHARDS = 100


def corpus_text(blank_lines: bool = True) -> bytes:
  """The built-in corpus's documents in the corpus format (0.46 MB); without `blank_lines`,
  its sentences only, one a line."""
  from pydoc_data import topics

  from bert_tf.data import builtin_corpus
  ends = "\n\n" if blank_lines else "\n"
  return "".join("\n".join(builtin_corpus.topic_sentences(text)) + ends
                 for _, text in sorted(topics.topics.items())).encode()


def write_corpus(paths: list[str], megabytes: float, blank_lines: bool = True) -> None:
  """Writes about `megabytes` of text over `paths`, whole copies of the text in turn."""
  text = corpus_text(blank_lines)
  copies = max(1, round(megabytes * 1e6 / len(text)))
  handles = [open(p, "wb") for p in paths]
  for copy in range(copies):
    handles[copy * len(paths) // copies].write(text)
  for handle in handles:
    handle.close()


def child_pipeline(args) -> dict:
  import bert_tf
  start = time.perf_counter()
  dataset = bert_tf.pretraining_dataset(args.corpus, args.vocab_file, seq_length=128,
                                        max_predictions_per_seq=20, batch_size=64, seed=0)
  iterator = iter(dataset)
  next(iterator)
  first_batch = time.perf_counter() - start
  start = time.perf_counter()
  for _ in range(args.batches):
    next(iterator)
  return {"first_batch_s": first_batch,
          "examples_per_second": args.batches * 64 / (time.perf_counter() - start)}


def child_vocab(args) -> dict:
  from bert_tf.data.vocabulary_learner import build_vocabulary
  start = time.perf_counter()
  vocabulary = build_vocabulary(args.corpus, os.path.join(args.output_dir, "vocab.txt"),
                                vocab_size=args.vocab_size)
  return {"seconds": time.perf_counter() - start, "tokens": len(vocabulary)}


def run_child(kind: str, corpus: str, args) -> dict:
  output = subprocess.run(
      [sys.executable, __file__, f"--child={kind}", f"--corpus={corpus}",
       f"--vocab_file={args.vocab_file}", f"--batches={args.batches}",
       f"--vocab_size={args.vocab_size}", f"--output_dir={args.output_dir}"],
      capture_output=True, text=True)
  if output.returncode:
    raise RuntimeError(output.stderr[-3000:])
  return json.loads(output.stdout.strip().splitlines()[-1])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--sizes_mb", default="4,600,2500")
  parser.add_argument("--sharded_mb", default="600", help="Sizes also measured as 100 files.")
  parser.add_argument("--batches", type=int, default=300)
  parser.add_argument("--vocab_size", type=int, default=30000)
  parser.add_argument("--directory", default="", help="Where to write the corpora.")
  parser.add_argument("--skip_vocab", action="store_true", help="Measure the pipeline only.")
  parser.add_argument("--no_blank_lines", action="store_true",
                      help="Corpora without blank lines: one endless document a file.")
  parser.add_argument("--child", choices=["pipeline", "vocab"])
  parser.add_argument("--corpus")
  parser.add_argument("--vocab_file", default="")
  parser.add_argument("--output_dir", default="")
  args = parser.parse_args()
  if args.child:
    result = (child_pipeline if args.child == "pipeline" else child_vocab)(args)
    result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))
    return

  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  with tempfile.TemporaryDirectory(dir=args.directory or None) as directory:
    args.output_dir = directory
    if not args.vocab_file:
      from bert_tf.data.vocabulary_learner import build_vocabulary
      args.vocab_file = os.path.join(directory, "builtin-vocab.txt")
      build_vocabulary("builtin", args.vocab_file, data_dir=directory)
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; "
          f"batches of 64 at seq 128, {args.batches} timed batches")
    print(f"{'corpus':<22}{'GB':>6}{'first batch s':>15}{'examples/s':>12}{'peak MB':>9}"
          f"{'vocab s':>9}{'vocab peak MB':>15}")
    sharded = {float(m) for m in args.sharded_mb.split(",") if m}
    for megabytes in (float(m) for m in args.sizes_mb.split(",")):
      for files in ([1, NUM_SHARDS] if megabytes in sharded else [1]):
        corpus_dir = os.path.join(directory, f"{megabytes:g}mb-{files}")
        os.makedirs(corpus_dir)
        paths = [os.path.join(corpus_dir, f"part-{i:03d}.txt") for i in range(files)]
        write_corpus(paths, megabytes, blank_lines=not args.no_blank_lines)
        size = sum(os.path.getsize(p) for p in paths)
        pattern = os.path.join(corpus_dir, "*.txt")
        pipeline = run_child("pipeline", pattern, args)
        vocab = ({"seconds": float("nan"), "peak_mb": float("nan")} if args.skip_vocab
                 else run_child("vocab", pattern, args))
        label = f"{megabytes:g} MB in {files} file{'s' if files > 1 else ''}"
        print(f"{label:<22}{size / 1e9:>6.2f}{pipeline['first_batch_s']:>15.1f}"
              f"{pipeline['examples_per_second']:>12,.0f}{pipeline['peak_mb']:>9,.0f}"
              f"{vocab['seconds']:>9.0f}{vocab['peak_mb']:>15,.0f}", flush=True)
        for path in paths:
          os.remove(path)


if __name__ == "__main__":
  main()

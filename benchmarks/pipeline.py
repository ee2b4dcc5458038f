"""Input pipeline throughput and memory, side by side with keras-hub's MLM preprocessing.

    python benchmarks/pipeline.py --corpus_mb=4,16 --cores=2

Builds corpora of `--corpus_mb` megabytes from the built-in one (its documents repeated, in
16 files), then measures, each in a fresh subprocess so peak memory is its own:
  - bert_tf.pretraining_dataset (read, tokenize, pair, mask, batch) at sequence 128 and 512,
    and at 128 with tf.data's autotuning turned back on (the project turns it off:
    bert_tf/data/prefetching.py), to show that choice on this machine;
  - keras-hub's BertMaskedLMPreprocessor (tokenize, mask; no pairing) on the same text cut
    into passages of about the same length, at sequence 128.
Prints examples/s and tokens/s (non-padding) per core and peak resident memory, and for the
second corpus size only bert_tf at 128, to show that memory does not grow with the corpus.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

NUM_FILES = 16
LABELS = {"ours": "bert_tf (pairs + masks)",
          "ours_autotuned": "bert_tf, tf.data autotuning on",
          "keras_hub": "keras-hub BertMaskedLMPreprocessor"}


def build_corpus(directory: str, megabytes: float) -> list[str]:
  from pydoc_data import topics

  from bert_tf.data import builtin_corpus
  documents = ["\n".join(builtin_corpus.topic_sentences(text))
               for _, text in sorted(topics.topics.items())]
  size = sum(len(d.encode()) + 2 for d in documents)
  copies = max(1, round(megabytes * 1e6 / size))
  paths = [os.path.join(directory, f"corpus-{i:02d}.txt") for i in range(NUM_FILES)]
  handles = [open(p, "w", encoding="utf-8") for p in paths]
  for copy in range(copies):
    for i, document in enumerate(documents):
      handles[(copy * len(documents) + i) % NUM_FILES].write(document + "\n\n")
  for handle in handles:
    handle.close()
  return paths


def limit_cores(cores: int):
  import tensorflow as tf
  os.sched_setaffinity(0, range(cores))
  tf.config.threading.set_inter_op_parallelism_threads(cores)
  tf.config.threading.set_intra_op_parallelism_threads(cores)


def measure(dataset, num_batches: int, count) -> tuple[float, float]:
  """(examples/s, tokens/s) over `num_batches` after 5 warm-up batches."""
  iterator = iter(dataset)
  for _ in range(5):
    next(iterator)
  examples = tokens = 0
  start = time.perf_counter()
  for _ in range(num_batches):
    batch_examples, batch_tokens = count(next(iterator))
    examples += batch_examples
    tokens += batch_tokens
  elapsed = time.perf_counter() - start
  return examples / elapsed, tokens / elapsed


def run_ours(args):
  limit_cores(args.cores)
  import tensorflow as tf

  import bert_tf
  dataset = bert_tf.pretraining_dataset(
      os.path.join(args.corpus_dir, "*.txt"), args.vocab_file, seq_length=args.seq_length,
      max_predictions_per_seq=args.seq_length * 20 // 128, batch_size=64, seed=0)
  if args.child == "ours_autotuned":
    options = tf.data.Options()
    options.autotune.enabled = True  # overrides prefetching.prefetched's choice
    dataset = dataset.with_options(options)
  return measure(dataset, args.batches, lambda batch: (
      int(batch[0]["token_ids"].shape[0]), int(batch[0]["padding_mask"].numpy().sum())))


def run_keras_hub(args):
  limit_cores(args.cores)
  import keras_hub
  import tensorflow as tf
  vocabulary = open(args.vocab_file, encoding="utf-8").read().splitlines()
  tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocabulary, lowercase=True)
  preprocessor = keras_hub.models.BertMaskedLMPreprocessor(
      tokenizer, sequence_length=args.seq_length, mask_selection_rate=0.15,
      mask_selection_length=args.seq_length * 20 // 128)
  # Passages of consecutive sentences, about as long as our examples (~4.4 chars a token).
  passages = []
  for path in sorted(os.listdir(args.corpus_dir)):
    current = ""
    for line in open(os.path.join(args.corpus_dir, path), encoding="utf-8"):
      current = (current + " " + line.strip()).strip()
      if len(current) >= args.seq_length * 4.4 or not line.strip():
        if current:
          passages.append(current)
        current = ""
  dataset = (tf.data.Dataset.from_tensor_slices(passages).repeat().shuffle(1000, seed=0)
             .batch(64).map(preprocessor, num_parallel_calls=tf.data.AUTOTUNE)
             .prefetch(tf.data.AUTOTUNE))
  return measure(dataset, args.batches, lambda batch: (
      int(batch[0]["token_ids"].shape[0]), int(batch[0]["padding_mask"].numpy().sum())))


def child(args):
  examples, tokens = (run_keras_hub if args.child == "keras_hub" else run_ours)(args)
  peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  print(json.dumps({"examples_per_second": examples, "tokens_per_second": tokens,
                    "peak_mb": peak_mb}))


def run_child(name, corpus_dir, vocab_file, seq_length, args) -> dict:
  output = subprocess.run(
      [sys.executable, __file__, f"--child={name}", f"--corpus_dir={corpus_dir}",
       f"--vocab_file={vocab_file}", f"--seq_length={seq_length}", f"--cores={args.cores}",
       f"--batches={args.batches}"],
      capture_output=True, text=True, check=True).stdout
  return json.loads(output.strip().splitlines()[-1])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--corpus_mb", default="4,16",
                      help="Corpus sizes; the first is measured in full, the others for "
                           "memory growth (bert_tf at 128 only).")
  parser.add_argument("--cores", type=int, default=len(os.sched_getaffinity(0)))
  parser.add_argument("--batches", type=int, default=600)
  parser.add_argument("--vocab_file", default="")
  parser.add_argument("--child", choices=list(LABELS))
  parser.add_argument("--corpus_dir")
  parser.add_argument("--seq_length", type=int, default=128)
  args = parser.parse_args()
  if args.child:
    return child(args)

  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  with tempfile.TemporaryDirectory() as directory:
    vocab_file = args.vocab_file
    if not vocab_file:
      from bert_tf.data.vocabulary_learner import build_vocabulary
      vocab_file = os.path.join(directory, "vocab.txt")
      build_vocabulary("builtin", vocab_file, data_dir=directory)
    print(f"{args.cores} core(s), batches of 64, {args.batches} timed batches")
    print(f"{'pipeline':<36}{'corpus MB':>10}{'seq':>5}{'examples/s/core':>17}"
          f"{'tokens/s/core':>15}{'peak MB':>9}")
    results = {}
    for index, megabytes in enumerate(float(m) for m in args.corpus_mb.split(",")):
      corpus_dir = os.path.join(directory, f"corpus-{megabytes:g}mb")
      os.makedirs(corpus_dir)
      paths = build_corpus(corpus_dir, megabytes)
      size = sum(os.path.getsize(p) for p in paths) / 1e6
      runs = ((("ours", 128), ("ours_autotuned", 128), ("ours", 512), ("keras_hub", 128))
              if index == 0 else (("ours", 128),))
      for name, seq_length in runs:
        result = run_child(name, corpus_dir, vocab_file, seq_length, args)
        results[(name, seq_length, index)] = result
        print(f"{LABELS[name]:<36}{size:>10.1f}{seq_length:>5}"
              f"{result['examples_per_second'] / args.cores:>17,.0f}"
              f"{result['tokens_per_second'] / args.cores:>15,.0f}{result['peak_mb']:>9,.0f}")
    ours, theirs = results[("ours", 128, 0)], results[("keras_hub", 128, 0)]
    print(f"bert_tf / keras-hub at 128: "
          f"{ours['examples_per_second'] / theirs['examples_per_second']:.2f}x examples/s, "
          f"{ours['tokens_per_second'] / theirs['tokens_per_second']:.2f}x tokens/s")
    autotuned = results[("ours_autotuned", 128, 0)]
    print(f"bert_tf at 128, autotuning off / on: "
          f"{ours['examples_per_second'] / autotuned['examples_per_second']:.2f}x examples/s")
    if ("ours", 128, 1) in results:
      print(f"peak memory, larger corpus / first: "
            f"{results[('ours', 128, 1)]['peak_mb'] / ours['peak_mb']:.2f}x")


if __name__ == "__main__":
  main()

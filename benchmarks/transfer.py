"""Does pre-training transfer? The built-in task (or any GLUE-style task) fine-tuned from a
pre-trained encoder and, with the same recipe, from random weights, over several seeds: mean
and spread of the dev accuracy side by side.

    python train.py --flagfile=configs/quickstart.flags       # the pre-trained encoder
    python benchmarks/transfer.py --model_dir=runs/quickstart --seeds=0,1,2

A third column, `--contenders=ours,scratch,transformers`, fine-tunes transformers'
`BertForSequenceClassification` from our Hugging Face export of the same encoder with the same
data and recipe (`benchmarks/transfer_transformers.py`); each contender's figure is the dev
accuracy of its best epoch.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def ours_accuracy(args, seed: int, from_scratch: bool, work_dir: str) -> float:
  """Dev accuracy of `python -m bert_tf.finetune` (in this process) at `seed`."""
  from bert_tf.finetune import FinetuneConfig, finetune
  output_dir = os.path.join(work_dir, f"{'scratch' if from_scratch else 'ours'}-{seed}")
  return finetune(FinetuneConfig(
      model_dir=args.model_dir, train_file=args.train_file, dev_file=args.dev_file,
      data_dir=args.data_dir, output_dir=output_dir, text_columns=args.text_columns,
      label_column=args.label_column, epochs=args.epochs, learning_rate=args.learning_rate,
      batch_size=args.batch_size, seq_length=args.seq_length, seed=seed,
      from_scratch=from_scratch))["dev_accuracy"]


def transformers_accuracy(args, seed: int, work_dir: str) -> float:
  """The plug for transformers' contender: the encoder exported with `bert_tf.export
  --format=hf`, fine-tuned by `benchmarks/transfer_transformers.py` on the same files."""
  import transfer_transformers  # benchmarks/, beside this file

  from bert_tf.data import builtin_tasks
  from bert_tf.export import trained
  hf_dir = os.path.join(work_dir, "hf")
  if not os.path.exists(hf_dir):
    trained.export(trained.load_trained(args.model_dir), "hf", hf_dir)
  return transfer_transformers.finetune_transformers(
      hf_dir, builtin_tasks.resolve(args.train_file, args.data_dir, "train", "classify"),
      builtin_tasks.resolve(args.dev_file, args.data_dir, "dev", "classify"),
      text_columns=tuple(args.text_columns.split(",")), label_column=args.label_column,
      epochs=args.epochs, learning_rate=args.learning_rate, batch_size=args.batch_size,
      seq_length=args.seq_length, seed=seed, verbose=False)


CONTENDERS = {
    "ours": lambda args, seed, work_dir: ours_accuracy(args, seed, False, work_dir),
    "scratch": lambda args, seed, work_dir: ours_accuracy(args, seed, True, work_dir),
    "transformers": transformers_accuracy,
}
TITLES = {"ours": "pre-trained (bert_tf)", "scratch": "random weights (--from_scratch)",
          "transformers": "pre-trained (transformers)"}


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--model_dir", default="runs/quickstart")
  parser.add_argument("--train_file", default="builtin")
  parser.add_argument("--dev_file", default="builtin")
  parser.add_argument("--data_dir", default="data")
  parser.add_argument("--text_columns", default="text")
  parser.add_argument("--label_column", default="label")
  parser.add_argument("--epochs", type=int, default=3)
  parser.add_argument("--learning_rate", type=float, default=1e-3)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--seq_length", type=int, default=64)
  parser.add_argument("--seeds", default="0,1,2")
  parser.add_argument("--contenders", default="ours,scratch")
  args = parser.parse_args()
  from bert_tf import console
  console.start(sys.argv)
  console.configure(-1)  # only warnings: the table is the output
  seeds = [int(seed) for seed in args.seeds.split(",")]
  names = args.contenders.split(",")
  results = {name: [] for name in names}
  with tempfile.TemporaryDirectory() as work_dir:
    for seed in seeds:
      for name in names:
        start = time.perf_counter()
        results[name].append(CONTENDERS[name](args, seed, work_dir))
        print(f"seed {seed} {name}: dev accuracy {results[name][-1]:.4f} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
  print(f"\n{args.epochs} epochs, learning rate {args.learning_rate}, batch {args.batch_size}, "
        f"seq_length {args.seq_length}, seeds {args.seeds}; encoder {args.model_dir}\n")
  print("| encoder | dev accuracy, mean | spread (sd) | min - max |")
  print("|---|---|---|---|")
  for name in names:
    values = results[name]
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    print(f"| {TITLES[name]} | {statistics.mean(values):.4f} | {spread:.4f} | "
          f"{min(values):.4f} - {max(values):.4f} |")


if __name__ == "__main__":
  main()

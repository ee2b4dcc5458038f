"""Does pre-training transfer? A task of any kind (the built-in ones by default) fine-tuned
from a pre-trained encoder and, with the same recipe, from random weights, over several seeds:
mean and spread of the kind's dev figure side by side.

    python train.py --flagfile=configs/quickstart.flags       # the pre-trained encoder
    python benchmarks/transfer.py --model_dir=runs/quickstart --seeds=0,1,2
    python benchmarks/transfer.py --model_dir=runs/quickstart --task=tag      # builtin_swap
    python benchmarks/transfer.py --model_dir=runs/quickstart --task=answer   # builtin_answer
    python benchmarks/transfer.py --model_dir=runs/quickstart --task=regress  # builtin_similar
    python benchmarks/transfer.py --model_dir=runs/quickstart --task=choose   # builtin_choice
    python benchmarks/transfer.py --model_dir=runs/quickstart --task=regress \\
        --train_file=train.tsv --dev_file=dev.tsv --text_columns=sentence1,sentence2 \\
        --label_column=score                                                 # your own

A built-in task is read by its own columns (`builtin_tasks.columns`), the column flags by
your own files.

The figure is the best epoch's: dev accuracy (classify, choose), Pearson (regress), entity F1
(tag), F1 (answer). A third column, `--contenders=ours,scratch,transformers`, fine-tunes
transformers' class for the kind (`BertForSequenceClassification`,
`BertForTokenClassification`, `BertForQuestionAnswering`, `BertForMultipleChoice`) from our
Hugging Face export of the same encoder with the same recipe
(`benchmarks/transfer_transformers.py`): for classification on the TSV files with the export's
own tokenizer; for the other kinds on the batches our fine-tuning trains on, in the same order,
scored by our dev figures.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FIGURES = {"classify": "dev_accuracy", "regress": "dev_pearson", "tag": "dev_entity_f1",
           "answer": "dev_f1", "choose": "dev_accuracy"}
# The recipe a kind's built-in task is measured with unless flags say otherwise: tagging
# `builtin_swap` is not learned in 3 epochs at 1e-3 from either encoder (docs/measured.md).
RECIPE = dict(epochs=3, learning_rate=1e-3, batch_size=32)
RECIPES = {"tag": dict(epochs=10, learning_rate=5e-4, batch_size=16)}
BUILTIN = {"classify": "builtin", "regress": "builtin_similar", "tag": "builtin_swap",
           "answer": "builtin_answer", "choose": "builtin_choice"}


def finetune_config(args, seed: int, output_dir: str = "", from_scratch: bool = False):
  """Our fine-tuning's settings for `args` at `seed`; its export not verified (the benchmark
  reads the dev figure, and its output_dir goes when it ends)."""
  from bert_tf.finetune import FinetuneConfig
  return FinetuneConfig(
      task=args.task, model_dir=args.model_dir, train_file=args.train_file,
      dev_file=args.dev_file, data_dir=args.data_dir, output_dir=output_dir,
      text_columns=args.text_columns, label_column=args.label_column, epochs=args.epochs,
      learning_rate=args.learning_rate, batch_size=args.batch_size, seq_length=args.seq_length,
      max_query_length=args.max_query_length, doc_stride=args.doc_stride, seed=seed,
      from_scratch=from_scratch, skip_verify=True)


def ours_figure(args, seed: int, from_scratch: bool, work_dir: str) -> float:
  """The dev figure of `python -m bert_tf.finetune` (in this process) at `seed`."""
  from bert_tf.finetune import finetune
  output_dir = os.path.join(work_dir, f"{'scratch' if from_scratch else 'ours'}-{seed}")
  return finetune(finetune_config(args, seed, output_dir, from_scratch))[FIGURES[args.task]]


class Predictions:
  """Stands for a Keras task model where our task kinds score one (`TaskKind.evaluate`):
  transformers' logits, in our layout, with answer's restricted to `[CLS]` and the context as
  our span head restricts them (`kinds/answer/head.py`'s `ContextOnly`), and choose's absent
  endings (a row with fewer than the task's) given none, as `kinds/choose/head.py`'s
  `ScorePerEnding` gives them."""

  def __init__(self, kind: str, predict):
    self.kind, self._predict = kind, predict

  def _logits(self, features: dict):
    import numpy as np

    from bert_tf.finetune.heads import NOT_AN_ANSWER
    logits = self._predict(features)
    if self.kind == "answer":
      segment_ids, padding_mask = (np.asarray(features[n]) for n in ("segment_ids",
                                                                      "padding_mask"))
      positions = np.arange(segment_ids.shape[1])[None, :]
      final_sep = padding_mask.sum(axis=1, keepdims=True) - 1
      allowed = (positions == 0) | ((segment_ids == 1) & (positions < final_sep))
      logits = np.where(allowed[:, None, :], logits, NOT_AN_ANSWER)
    if self.kind == "choose":
      logits = np.where(np.asarray(features["padding_mask"])[:, :, 0] > 0, logits,
                        NOT_AN_ANSWER)
    return logits

  def __call__(self, features: dict, training: bool = False):
    import tensorflow as tf
    return tf.constant(self._logits({n: v.numpy() for n, v in features.items()}))

  def predict(self, features: dict, batch_size: int, verbose: int = 0):
    import numpy as np
    rows = len(features["token_ids"])
    return np.concatenate([self._logits({n: v[start:start + batch_size]
                                         for n, v in features.items()})
                           for start in range(0, rows, batch_size)])


def transformers_figure(args, seed: int, work_dir: str) -> float:
  """The plug for transformers' contender: the encoder exported with `bert_tf.export
  --format=hf`, fine-tuned by `benchmarks/transfer_transformers.py` on the same data."""
  import transfer_transformers  # benchmarks/, beside this file

  from bert_tf.data import builtin_tasks
  from bert_tf.export import formats
  from bert_tf.finetune.epochs import EpochPlan
  from bert_tf.finetune.model import load_pretrained
  from bert_tf.finetune.tasks import task_kind
  from bert_tf.serving import trained
  hf_dir = os.path.join(work_dir, "hf")
  if not os.path.exists(hf_dir):
    formats.export(trained.load_trained(args.model_dir), "hf", hf_dir)
  if args.task == "classify":
    text_columns, label_column = (builtin_tasks.columns(args.train_file) or
                                  (args.text_columns.split(","), args.label_column))
    return transfer_transformers.finetune_transformers(
        hf_dir, builtin_tasks.resolve(args.train_file, args.data_dir, "train", "classify"),
        builtin_tasks.resolve(args.dev_file, args.data_dir, "dev", "classify"),
        text_columns=tuple(text_columns), label_column=label_column,
        epochs=args.epochs, learning_rate=args.learning_rate, batch_size=args.batch_size,
        seq_length=args.seq_length, seed=seed, verbose=False)
  kind = task_kind(finetune_config(args, seed))
  kind.encode(load_pretrained(args.model_dir))
  plan = EpochPlan(kind.train_rows, args.batch_size, args.epochs, seed)
  return transfer_transformers.finetune_task(
      hf_dir, args.task, lambda epoch: kind.train_batches(args.batch_size, plan.order(epoch)),
      lambda predict: kind.evaluate(Predictions(args.task, predict))[0][FIGURES[args.task]],
      num_labels=len(kind.labels), epochs=args.epochs, steps_per_epoch=plan.steps_per_epoch,
      learning_rate=args.learning_rate, seed=seed, verbose=False)


CONTENDERS = {
    "ours": lambda args, seed, work_dir: ours_figure(args, seed, False, work_dir),
    "scratch": lambda args, seed, work_dir: ours_figure(args, seed, True, work_dir),
    "transformers": transformers_figure,
}
TITLES = {"ours": "pre-trained (bert_tf)", "scratch": "random weights (--from_scratch)",
          "transformers": "pre-trained (transformers)"}


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--model_dir", default="runs/quickstart")
  parser.add_argument("--task", default="classify", choices=tuple(FIGURES))
  parser.add_argument("--train_file", default="", help="default: the kind's built-in task")
  parser.add_argument("--dev_file", default="", help="default: the training file's")
  parser.add_argument("--data_dir", default="data")
  parser.add_argument("--text_columns", default="text", help="your own TSV's (a built-in "
                      "task has its own)")
  parser.add_argument("--label_column", default="label", help="your own TSV's")
  parser.add_argument("--epochs", type=int, default=None, help="default: the kind's RECIPES")
  parser.add_argument("--learning_rate", type=float, default=None)
  parser.add_argument("--batch_size", type=int, default=None)
  parser.add_argument("--seq_length", type=int, default=None,
                      help="default 64, 128 for --task=answer")
  parser.add_argument("--max_query_length", type=int, default=32, help="answer")
  parser.add_argument("--doc_stride", type=int, default=32, help="answer")
  parser.add_argument("--seeds", default="0,1,2")
  parser.add_argument("--contenders", default="ours,scratch")
  args = parser.parse_args()
  args.train_file = args.train_file or BUILTIN[args.task]
  args.dev_file = args.dev_file or args.train_file
  args.seq_length = args.seq_length or (128 if args.task == "answer" else 64)
  for name, value in RECIPES.get(args.task, RECIPE).items():
    setattr(args, name, value if getattr(args, name) is None else getattr(args, name))
  from bert_tf import console
  console.start(sys.argv)
  console.configure(-1)  # only warnings: the table is the output
  seeds = [int(seed) for seed in args.seeds.split(",")]
  names = args.contenders.split(",")
  figure = FIGURES[args.task].removeprefix("dev_").replace("_", " ")
  results = {name: [] for name in names}
  with tempfile.TemporaryDirectory() as work_dir:
    for seed in seeds:
      for name in names:
        start = time.perf_counter()
        results[name].append(CONTENDERS[name](args, seed, work_dir))
        print(f"seed {seed} {name}: dev {figure} {results[name][-1]:.4f} "
              f"({time.perf_counter() - start:.0f} s)", flush=True)
  print(f"\n{args.task} on {args.train_file}: {args.epochs} epochs, learning rate "
        f"{args.learning_rate}, batch {args.batch_size}, seq_length {args.seq_length}, seeds "
        f"{args.seeds}; encoder {args.model_dir}\n")
  print(f"| encoder | dev {figure}, mean | spread (sd) | min - max |")
  print("|---|---|---|---|")
  for name in names:
    values = results[name]
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    print(f"| {TITLES[name]} | {statistics.mean(values):.4f} | {spread:.4f} | "
          f"{min(values):.4f} - {max(values):.4f} |")


if __name__ == "__main__":
  main()

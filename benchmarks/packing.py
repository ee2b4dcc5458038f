"""What packing (`--packing`, docs/pipeline.md#packing) is worth: padding, real tokens per
second and MLM accuracy after the same steps, packed and unpacked, on a corpus of short
documents (the built-in corpus cut into documents of two sentences) and on a long-document one
(the built-in corpus, a help topic a document).

    python benchmarks/packing.py --config=bert_mini --seq_length=128 --batch_size=32 --steps=150

For each corpus and layout: the padding share of the training batches (over --audit_batches),
then a model trained with `model.fit` on the pipeline's batches, the same seed and learning
rate, timed over --steps steps after --warmup: real (not padding) tokens per second, and pairs
per second at the audited tokens a pair; then its held-out MLM accuracy, on the documents
--eval_fraction holds out, read unpacked, the same batches for both layouts. The first line
says the CPU's features.
"""

import argparse
import os
import tempfile
import time

CORPORA = {"short documents": 2, "long documents": 0}  # sentences a document (0: a topic)


def dataset(args, pattern, vocab_file, data_dir, packing, held_out, **options):
  import bert_tf
  from bert_tf.data.holdout import Holdout
  return bert_tf.pretraining_dataset(
      pattern, vocab_file, seq_length=args.seq_length,
      max_predictions_per_seq=round(0.15 * args.seq_length + 0.5), batch_size=args.batch_size,
      data_dir=data_dir, packing=packing, seed=args.seed,
      holdout=Holdout(args.eval_fraction, held_out), **options)


def padding_share(batches) -> tuple[float, float, float]:
  """(padding share, pairs a row, real tokens a pair) of `batches`."""
  from bert_tf.audit import pairs_present
  real = rows = slots = pairs = 0
  for features, labels, _ in batches.as_numpy_iterator():
    real += int(features["padding_mask"].sum())
    slots += features["padding_mask"].size
    rows += len(features["padding_mask"])
    pairs += int(pairs_present(features, labels).sum())
  return 1 - real / slots, pairs / rows, real / pairs


def trained(args, config, batches, held_out):
  """(real tokens/s, held-out MLM accuracy) of a model trained on `batches`."""
  import keras

  from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
  from bert_tf.runtime.optimization import create_optimizer
  keras.utils.set_random_seed(args.seed)
  model = pretraining_model(config)
  compile_for_pretraining(model, create_optimizer(
      learning_rate=args.learning_rate, warmup_steps=args.warmup,
      train_steps=args.warmup + args.steps))
  model.fit(batches, epochs=1, steps_per_epoch=args.warmup, verbose=0)
  start = time.perf_counter()
  history = model.fit(batches, epochs=1, steps_per_epoch=args.steps, verbose=0).history
  seconds = time.perf_counter() - start
  accuracy = model.evaluate(held_out, steps=args.eval_batches, return_dict=True,
                            verbose=0)["mlm_accuracy"]
  return history["tokens"][-1] / seconds, accuracy


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--config", default="bert_mini")
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--steps", type=int, default=150)
  parser.add_argument("--warmup", type=int, default=10)
  parser.add_argument("--learning_rate", type=float, default=5e-4)
  parser.add_argument("--audit_batches", type=int, default=20)
  parser.add_argument("--eval_fraction", type=float, default=0.1)
  parser.add_argument("--eval_batches", type=int, default=20)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(argv)

  from bert_tf.data import builtin_corpus
  from bert_tf.data.tokenization import Vocabulary
  from bert_tf.data.vocabulary_learner import build_vocabulary
  from bert_tf.model.bert_config import BertConfig
  from bert_tf.runtime.precision import cpu_features
  print(f"CPU features: {cpu_features()}")
  with tempfile.TemporaryDirectory() as data_dir:
    vocab_file = os.path.join(data_dir, "vocab.txt")
    build_vocabulary(builtin_corpus.corpus_pattern(data_dir), vocab_file, vocab_size=8000)
    config = BertConfig.from_preset(args.config, vocab_size=len(Vocabulary(vocab_file)))
    print(f"{args.config}, seq {args.seq_length}, {args.batch_size} rows a batch, "
          f"{args.steps} steps timed after {args.warmup}, learning rate {args.learning_rate}")
    print("| corpus | layout | padding | pairs a row | real tokens/s | pairs/s | "
          "held-out MLM accuracy |")
    print("|---|---|---|---|---|---|---|")
    for corpus, sentences in CORPORA.items():
      pattern = builtin_corpus.corpus_pattern(data_dir, sentences)
      held_out = dataset(args, pattern, vocab_file, data_dir, False, True)
      rates = {}
      for packing in (False, True):
        batches = dataset(args, pattern, vocab_file, data_dir, packing, False)
        padding, pairs_a_row, pair_tokens = padding_share(batches.take(args.audit_batches))
        tokens, accuracy = trained(args, config, batches, held_out)
        rates[packing] = tokens
        layout = "packed" if packing else "unpacked"
        print(f"| {corpus} | {layout} | {padding:.1%} | {pairs_a_row:.2f} | {tokens:,.0f} | "
              f"{tokens / pair_tokens:,.1f} | {accuracy:.4f} |", flush=True)
      print(f"| {corpus} | packed / unpacked | | | {rates[True] / rates[False]:.2f}x | | |")


if __name__ == "__main__":
  main()

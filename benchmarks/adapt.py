"""Does adapting a general BERT to a domain beat pre-training one there from scratch?

The general model is the quickstart's (configs/quickstart.flags: bert_tiny, trained on the
built-in corpus, Python's language reference). The domain is a second real corpus that every
Python 3.11 carries: the docstrings of the standard library's modules
(`benchmarks/docstrings_corpus.py`), one module in ten held out. Three contenders train the
same number of steps on the domain with the same recipe, over several seeds:

- adapted, grown: from the general model, its vocabulary grown by --add_vocabulary words;
- adapted: from the general model's weights alone (--init_weights_only), its vocabulary;
- scratch: random weights, a vocabulary of the grown one's size learned from the domain.

Printed: held-out MLM accuracy and loss at each evaluation (mean and spread over the seeds),
and the WordPieces per word of the held-out text under each vocabulary.

    python benchmarks/adapt.py --work_dir=runs/adapt                  # docs/measured.md
    python benchmarks/adapt.py --general_model_dir=runs/quickstart   # an existing general model

The accuracies are per predicted WordPiece of each contender's own tokenization: a grown or
domain vocabulary cuts the text into fewer, rarer pieces, so its predictions are of harder
pieces; the comparison at equal tokenization is adapted against general without new words.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import docstrings_corpus  # noqa: E402  benchmarks/, beside this file

CONTENDERS = ("adapted_grown", "adapted", "scratch")
# The quickstart's vocabulary learned from the built-in corpus (docs/pipeline.md): the domain
# vocabulary is learned at this size plus the words added.
GENERAL_VOCAB_SIZE = 3437
# The quickstart's recipe for every run on the domain, at half its sequence length (the
# docstrings' sentences are short, and the machine is shared), with a shorter warm-up.
DOMAIN_RECIPE = ["--config=bert_tiny", "--dropout=0", "--seq_length=64",
                 "--masked_lm_prob=0.4", "--max_predictions_per_seq=26",
                 "--global_batch_size=16", "--learning_rate=1e-3", "--noserving_export",
                 "--noverbose"]


def train(args: list[str]) -> None:
  """Runs train.py with `args`; stops the benchmark on a failure."""
  started = time.time()
  result = subprocess.run([sys.executable, os.path.join(ROOT, "train.py"), *args],
                          capture_output=True, text=True)
  if result.returncode:
    sys.exit(f"train.py {' '.join(args)} failed:\n{result.stderr[-3000:]}")
  print(f"  ({time.time() - started:.0f} s) train.py {' '.join(args)}", flush=True)


def general_model(work_dir: str, given: str, steps: int) -> str:
  """The quickstart's model_dir: `given`, or trained in `work_dir` (once) for `steps`."""
  if given:
    return given
  model_dir = os.path.join(work_dir, "general")
  if not os.path.exists(os.path.join(model_dir, "model.weights.h5")):
    train([f"--flagfile={os.path.join(ROOT, 'configs', 'quickstart.flags')}",
           f"--model_dir={model_dir}", f"--data_dir={os.path.join(work_dir, 'data')}",
           f"--vocab_file={os.path.join(model_dir, 'general_vocab.txt')}",
           "--probe_train_file=", "--probe_dev_file=", "--eval_every=0", "--noserving_export",
           "--noverbose", f"--train_steps={steps}"])
  return model_dir


def contender_args(name: str, general: str, domain: dict, args, seed: int) -> list[str]:
  model_dir = os.path.join(args.work_dir, f"{name}-{seed}")
  common = [*DOMAIN_RECIPE, f"--input_files={domain['train']}",
            f"--eval_files={domain['held_out']}", f"--model_dir={model_dir}",
            f"--train_steps={args.steps}", f"--warmup_steps={args.warmup_steps}",
            f"--checkpoint_every={args.eval_every}", f"--eval_every={args.eval_every}",
            f"--eval_steps={args.eval_steps}", f"--seed={seed}",
            f"--data_dir={os.path.join(args.work_dir, 'data')}"]
  general_vocab = os.path.join(general, "vocab.txt")
  if name == "adapted_grown":
    return [*common, f"--init_checkpoint={general}", f"--vocab_file={general_vocab}",
            f"--add_vocabulary={args.add_vocabulary}"]
  if name == "adapted":
    return [*common, f"--init_checkpoint={general}", f"--vocab_file={general_vocab}",
            "--init_weights_only"]
  return [*common, f"--vocab_file={domain['vocab']}"]


def evaluations(model_dir: str) -> dict:
  """{step: (held-out MLM accuracy, MLM loss)} of a run's history.jsonl."""
  found = {}
  with open(os.path.join(model_dir, "history.jsonl")) as f:
    for line in f:
      record = json.loads(line)
      if "eval_mlm_accuracy" in record:
        found[record["step"]] = (record["eval_mlm_accuracy"], record["eval_mlm_loss"])
  return found


def pieces_per_word(vocab_files: dict, held_out: str) -> dict:
  """WordPieces per word of the held-out text under each vocabulary."""
  from bert_tf.data import vocabulary_fit
  from bert_tf.data.tokenization import Vocabulary
  sentences, _ = vocabulary_fit.sample_sentences(held_out, "sentence_per_line")
  return {name: vocabulary_fit.figures(vocabulary_fit.count_words(
              sentences, Vocabulary(path), True), Vocabulary(path), True, 0)["pieces_per_word"]
          for name, path in vocab_files.items()}


def shown(values: list[float]) -> str:
  spread = max(values) - min(values) if len(values) > 1 else 0.0
  return f"{statistics.mean(values):.3f} ± {spread / 2:.3f}"


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--work_dir", default="runs/adapt")
  parser.add_argument("--general_model_dir", default="",
                      help="A quickstart model_dir to adapt (default: trained in --work_dir).")
  parser.add_argument("--general_steps", type=int, default=2000,
                      help="Steps of the general model (the quickstart's: 2000).")
  parser.add_argument("--steps", type=int, default=200)
  parser.add_argument("--eval_every", type=int, default=50)
  parser.add_argument("--eval_steps", type=int, default=20)
  parser.add_argument("--warmup_steps", type=int, default=20)
  parser.add_argument("--add_vocabulary", type=int, default=1000)
  parser.add_argument("--seeds", default="0,1")
  parser.add_argument("--contenders", default=",".join(CONTENDERS),
                      help="Train only these now (runs already finished are read, not redone).")
  args = parser.parse_args()
  seeds = [int(s) for s in args.seeds.split(",")]
  os.makedirs(args.work_dir, exist_ok=True)

  train_pattern, held_out = docstrings_corpus.write_corpus(os.path.join(args.work_dir, "domain"))
  domain = {"train": train_pattern, "held_out": held_out,
            "vocab": os.path.join(args.work_dir, "domain_vocab.txt")}
  if not os.path.exists(domain["vocab"]):
    subprocess.run([sys.executable, "-m", "bert_tf.vocab", f"--input_files={train_pattern}",
                    f"--vocab_file={domain['vocab']}",
                    f"--vocab_size={GENERAL_VOCAB_SIZE + args.add_vocabulary}"],
                   check=True, capture_output=True, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": ROOT})
  chosen = args.contenders.split(",")
  general = (general_model(args.work_dir, args.general_model_dir, args.general_steps)
             if set(chosen) - {"scratch"} else "")
  for seed in seeds:
    for name in chosen:
      model_dir = os.path.join(args.work_dir, f"{name}-{seed}")
      if not os.path.exists(os.path.join(model_dir, "metrics.json")):
        train(contender_args(name, general, domain, args, seed))
  if chosen != list(CONTENDERS):
    return
  results = {name: [evaluations(os.path.join(args.work_dir, f"{name}-{seed}"))
                    for seed in seeds] for name in CONTENDERS}

  vocab_files = {"general": os.path.join(general, "vocab.txt"),
                 "adapted_grown": os.path.join(args.work_dir, f"adapted_grown-{seeds[0]}",
                                               "vocab.txt"),
                 "scratch": domain["vocab"]}
  per_word = pieces_per_word(vocab_files, held_out)
  print(f"\nHeld-out MLM accuracy / loss on the domain (mean ± half the range over seeds "
        f"{args.seeds}), {args.steps} steps of batch 16:")
  print(f"{'step':>6}  " + "  ".join(f"{name:>30}" for name in CONTENDERS))
  for step in sorted(results[CONTENDERS[0]][0]):
    cells = []
    for name in CONTENDERS:
      accuracy = [runs[step][0] for runs in results[name]]
      loss = [runs[step][1] for runs in results[name]]
      cells.append(f"{shown(accuracy)} / {statistics.mean(loss):.2f}")
    print(f"{step:>6}  " + "  ".join(f"{cell:>30}" for cell in cells))
  print("WordPieces per word of the held-out text: " + ", ".join(
      f"{name} {value:.3f}" for name, value in per_word.items()))
  vocabulary_sizes = {name: sum(1 for _ in open(path, encoding="utf-8"))
                      for name, path in vocab_files.items()}
  print("Vocabulary sizes: " + ", ".join(f"{n} {s:,}" for n, s in vocabulary_sizes.items()))


if __name__ == "__main__":
  main()

"""Does bf16 learn as float32 does? Held-out MLM accuracy of both precisions, seed by seed.

A one-layer bert_tiny on the built-in corpus (sequence 32, 40% masked, batch 16, learning
rate 3e-3, dropout off: the recipe of tests/test_precision.py), two ways:

- from initialisation: train.py's training (`trainer.train`) in float32 and in bf16 from the
  same seed, for each of --steps;
- going on (--shared_steps): float32 trains --shared_steps from the seed, then float32 and bf16
  each go on --own_steps from those weights and that optimizer state, on the same batches.

Printed: each run's accuracy (and the plateau, always answering the most frequent masked
token), then per precision the mean and the spread over the seeds.

    python benchmarks/bf16_accuracy.py --seeds=1,2,3,4,5 --steps=300,600   # docs/measured.md
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

PRECISIONS = ("none", "bf16")
RECIPE = dict(seq_length=32, masked_lm_prob=0.4, max_predictions_per_seq=13,
              global_batch_size=16, eval_fraction=0.2)
LEARNING_RATE, WARMUP_STEPS, EVAL_BATCHES = 3e-3, 20, 25


def corpus(work_dir: str) -> tuple[dict, str]:
  """The built-in corpus, a vocabulary learned from it and a one-layer bert_tiny of its size,
  in `work_dir` (made once): (the runs' `data_dir`, `input_files` and `vocab_file`, the
  config file)."""
  from bert_tf.data import builtin_corpus
  from bert_tf.data.tokenization import Vocabulary
  from bert_tf.data.vocabulary_learner import build_vocabulary
  from bert_tf.model.bert_config import BertConfig
  os.makedirs(work_dir, exist_ok=True)
  data_dir = os.path.join(work_dir, "data")
  pattern = builtin_corpus.corpus_pattern(data_dir)
  vocab_file = os.path.join(work_dir, "vocab.txt")
  config_file = os.path.join(work_dir, "bert_tiny_one_layer.json")
  if not os.path.exists(config_file):
    build_vocabulary(pattern, vocab_file, vocab_size=8000)
    BertConfig.from_preset("bert_tiny", vocab_size=len(Vocabulary(vocab_file)),
                           num_hidden_layers=1).to_json_file(config_file)
  return dict(data_dir=data_dir, input_files=pattern, vocab_file=vocab_file), config_file


def from_initialisation(work_dir: str, files: dict, config_file: str, precision: str,
                        seed: int, steps: int) -> dict:
  """A run of train.py's training: its held-out MLM accuracy and the plateau's."""
  from bert_tf.training import trainer
  from bert_tf.training.train_settings import TrainConfig
  metrics = trainer.train(TrainConfig(
      model_dir=os.path.join(work_dir, f"runs/{precision}-{seed}-{steps}-{time.time():.0f}"),
      config=config_file, mixed_precision=precision, train_steps=steps,
      checkpoint_every=steps, warmup_steps=WARMUP_STEPS, learning_rate=LEARNING_RATE,
      dropout=0.0, eval_steps=EVAL_BATCHES, verbose=False, seed=seed, serving_export=False,
      **files, **RECIPE))
  return {"accuracy": metrics["eval_mlm_accuracy"],
          "plateau": metrics["most_frequent_token_accuracy"]}


def going_on(files: dict, config_file: str, seed: int, shared_steps: int,
             own_steps: int) -> dict:
  """Float32 trains `shared_steps` from `seed`; float32 and bf16 each go on `own_steps` from
  its weights and optimizer state, on the same batches. Held-out MLM accuracies: the plateau,
  at `shared_steps` (`shared`), and each precision's at the end."""
  import keras
  import tensorflow as tf

  from bert_tf.data import readers
  from bert_tf.data.tokenization import Vocabulary
  from bert_tf.model.bert_config import BertConfig
  from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
  from bert_tf.runtime import precision
  from bert_tf.runtime.optimization import create_optimizer
  from bert_tf.training.datasets import RunInputs
  from bert_tf.training.train_settings import TrainConfig
  from bert_tf.training.watching.evaluation import most_frequent_token_accuracy
  config = BertConfig.from_json_file(config_file).replace(
      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  inputs = RunInputs(TrainConfig(model_dir="unused", seed=seed, **files, **RECIPE),
                     Vocabulary(files["vocab_file"]))
  held_out = readers.batches(inputs.held_out).take(EVAL_BATCHES).cache()
  batches = list(readers.batches(inputs.training).take(shared_steps + own_steps))

  def stream(first, last=None):
    return tf.data.Dataset.from_tensor_slices(tf.nest.map_structure(
        lambda *parts: tf.stack(parts), *batches[first:last]))

  def model(name):
    keras.utils.set_random_seed(seed)
    with precision.policy(name):
      return compile_for_pretraining(pretraining_model(config), create_optimizer(
          learning_rate=LEARNING_RATE, warmup_steps=WARMUP_STEPS,
          train_steps=shared_steps + own_steps),
          steps_per_execution=math.gcd(shared_steps, own_steps))

  def accuracy(trained):
    return trained.evaluate(held_out, return_dict=True, verbose=0)["mlm_accuracy"]

  shared = model("none")
  shared.fit(stream(0, shared_steps), epochs=1, verbose=0)
  results = {"plateau": most_frequent_token_accuracy(held_out, EVAL_BATCHES),
             "shared": accuracy(shared)}
  for name in PRECISIONS:
    going = model(name)
    going.set_weights(shared.get_weights())
    for variable, value in zip(going.optimizer.variables, shared.optimizer.variables,
                               strict=True):
      variable.assign(value)
    going.fit(stream(shared_steps), epochs=1, verbose=0)
    results[name] = accuracy(going)
  return results


def summary(rows: list[dict], key: str) -> None:
  """Per precision: the mean and the spread over the seeds; and of bf16 minus float32."""
  for name in (*PRECISIONS, "bf16 - float32"):
    values = ([row["bf16"] - row["none"] for row in rows] if name == "bf16 - float32" else
              [row[name] for row in rows])
    print(f"  {key} {name}: mean {statistics.mean(values):.4f}, standard deviation "
          f"{statistics.pstdev(values):.4f}, {min(values):.4f} to {max(values):.4f}",
          flush=True)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--work_dir", default="runs/bf16_accuracy")
  parser.add_argument("--seeds", default="1,2,3,4,5")
  parser.add_argument("--steps", default="300,600", help="from initialisation; empty: none")
  parser.add_argument("--shared_steps", type=int, default=200, help="0: no going on")
  parser.add_argument("--own_steps", type=int, default=100)
  args = parser.parse_args()
  seeds = [int(seed) for seed in args.seeds.split(",")]
  files, config_file = corpus(args.work_dir)
  for steps in [int(steps) for steps in args.steps.split(",") if steps]:
    rows = []
    for seed in seeds:
      runs = {name: from_initialisation(args.work_dir, files, config_file, name, seed, steps)
              for name in PRECISIONS}
      rows.append({"seed": seed, "steps": steps, "plateau": runs["none"]["plateau"],
                   **{name: runs[name]["accuracy"] for name in PRECISIONS}})
      print(json.dumps(rows[-1]), flush=True)
    summary(rows, f"from initialisation, {steps} steps:")
  if args.shared_steps:
    rows = []
    for seed in seeds:
      rows.append({"seed": seed, **going_on(files, config_file, seed, args.shared_steps,
                                            args.own_steps)})
      print(json.dumps(rows[-1]), flush=True)
    summary(rows, f"going on {args.own_steps} steps from float32's step {args.shared_steps}:")


if __name__ == "__main__":
  main()

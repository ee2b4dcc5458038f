"""Training-step throughput, side by side: bert_tf, keras-hub, Hugging Face (PyTorch), in
float32 and bf16, against the CPU's measured matmul peak of each precision.

    python benchmarks/train_step.py --config=bert_mini --seq_length=128 --batch_size=32

Each contender trains the same-sized BERT on the same synthetic batch (random tokens, 15% of
positions masked, vocabulary 30,522), each in a fresh subprocess with every core:
  - bert_tf: `pretraining_model` + `compile_for_pretraining` (MLM + NSP, AdamW), `model.fit`;
  - train_loop: "train.py's loop", the same model and batches through `fit` with every
    callback train.py uses (checkpoints every 500 steps, the training scalars every
    `--log_every` steps to TensorBoard and history.jsonl, the clock; no progress line, as the
    bare `fit`). It also times the bare `fit`, and a `fit` with one no-op batch callback, in
    rounds alternating with it, in the same process, and prints the gaps: on a shared machine
    the contenders' separate runs differ by more than the callbacks cost;
  - keras_hub: `BertMaskedLM` on a `BertBackbone` of the same size (MLM only: keras-hub has no
    NSP head), Keras AdamW, `model.fit`;
  - hf_torch: transformers `BertForPreTraining` (MLM + NSP; it projects every position onto
    the vocabulary), torch AdamW, a plain loop, under `torch.autocast` in bf16 / fp16.
All three use dropout 0.1, global-norm clipping at 1.0, and the same precision. Each precision
of `--mixed_precision` (a list: `none,bf16` by default) runs every contender, one precision
after the other for each, so that a contender's two figures see the same machine load. Prints
sequences/s after `--warmup` steps (tracing, compilation), measured over `--steps` steps, each
contender's ratio to bert_tf and to its own float32, and model-FLOPs utilisation
(`model_flops_per_sequence` over time, the same count for every contender) against the peak of
its precision: TensorFlow's best of timed 2048x2048 matmul chains in that dtype (`matmul_peak`),
or `--peak_tflops` when given. The first lines say the CPU's features (AVX2, AVX-512 VNNI,
AVX-512 BF16, AMX), which decide the peaks.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

CONTENDERS = ("bert_tf", "train_loop", "keras_hub", "hf_torch")
VOCAB_SIZE = 30522
DTYPES = {"none": "float32", "bf16": "bfloat16", "fp16": "float16"}


def matmul_peak(dtype: str, size: int = 2048, chain: int = 8, repeats: int = 5) -> float:
  """TensorFlow's matmul rate in `dtype`, TFLOP/s: the best of `repeats` timed chains of
  `chain` size x size products (one graph each, oneDNN's kernels on CPU)."""
  import tensorflow as tf
  matrix = tf.cast(tf.random.stateless_normal([size, size], [0, 0]) / size**0.5, dtype)

  @tf.function
  def products(x):
    for _ in range(chain):
      x = tf.matmul(x, matrix)
    return x

  products(matrix).numpy()
  best = math.inf
  for _ in range(repeats):
    start = time.perf_counter()
    products(matrix).numpy()
    best = min(best, time.perf_counter() - start)
  return 2 * size**3 * chain / best / 1e12


def synthetic_batch(batch_size: int, seq_length: int, predictions: int):
  """Numpy features, MLM labels and weights, NSP labels: the same for every contender."""
  import numpy as np
  rng = np.random.default_rng(0)
  token_ids = rng.integers(1000, VOCAB_SIZE, (batch_size, seq_length)).astype("int32")
  positions = np.sort(np.stack([rng.choice(np.arange(1, seq_length), predictions, False)
                                for _ in range(batch_size)]), axis=1).astype("int32")
  return {
      "token_ids": token_ids,
      "segment_ids": (np.arange(seq_length) >= seq_length // 2).astype("int32")[None].repeat(
          batch_size, 0),
      "padding_mask": np.ones((batch_size, seq_length), "int32"),
      "masked_positions": positions,
      "masked_ids": np.take_along_axis(token_ids, positions, 1),
      "masked_weights": np.ones((batch_size, predictions), "float32"),
      "is_next": rng.integers(0, 2, batch_size).astype("int32"),
  }


def time_keras_fit(model, dataset, warmup: int, steps: int, callbacks=()) -> float:
  model.fit(dataset, epochs=1, steps_per_epoch=warmup, verbose=0, callbacks=list(callbacks))
  start = time.perf_counter()
  model.fit(dataset, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=list(callbacks))
  return time.perf_counter() - start


def bert_tf_model_and_data(args, batch):
  import tensorflow as tf

  from bert_tf.model.bert_config import BertConfig
  from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
  from bert_tf.runtime import precision
  from bert_tf.runtime.optimization import create_optimizer
  config = BertConfig.from_preset(args.config, vocab_size=VOCAB_SIZE)
  with precision.policy(args.mixed_precision):
    model = pretraining_model(config)
    compile_for_pretraining(model, create_optimizer(warmup_steps=10, train_steps=10_000),
                            jit_compile=args.jit_compile)
  features = {name: batch[name] for name in
              ("token_ids", "segment_ids", "padding_mask", "masked_positions")}
  dataset = tf.data.Dataset.from_tensors((
      features, {"mlm": batch["masked_ids"], "nsp": batch["is_next"]},
      {"mlm": batch["masked_weights"], "nsp": tf.ones_like(batch["is_next"], tf.float32)}
  )).repeat()
  return model, dataset


def run_bert_tf(args, batch) -> float:
  return time_keras_fit(*bert_tf_model_and_data(args, batch), args.warmup, args.steps)


def run_train_loop(args, batch) -> float:
  """Times `fit` with train.py's callbacks (`RunMonitor`, without the progress line);
  also the bare `fit` of the same model, in rounds alternating with it (`bare_seconds`), so
  that both see the same machine load."""
  import tempfile

  import keras
  import tensorflow as tf

  from bert_tf.model.bert_config import BertConfig
  from bert_tf.runtime import checkpointing, stopping
  from bert_tf.training.train_settings import TrainConfig
  from bert_tf.training.watching.monitor import RunMonitor
  model, dataset = bert_tf_model_and_data(args, batch)
  model.optimizer.build(model.trainable_variables)
  with tempfile.TemporaryDirectory() as model_dir:
    checkpointer = checkpointing.Checkpointer(
        os.path.join(model_dir, "checkpoints"), model, model.optimizer, keep=1,
        data_position=tf.Variable(0, dtype=tf.int64))
    config = TrainConfig(model_dir=model_dir, config=args.config, seq_length=args.seq_length,
                         max_predictions_per_seq=math.ceil(0.15 * args.seq_length),
                         global_batch_size=args.batch_size, train_steps=10**9,
                         checkpoint_every=500, log_every=args.log_every, verbose=False)
    monitor = RunMonitor(config, None, BertConfig.from_preset(args.config,
                                                              vocab_size=VOCAB_SIZE))
    loop = monitor.callbacks(stopping.CheckpointEvery(checkpointer, 500, 10**9))
    model.fit(dataset, epochs=1, steps_per_epoch=args.warmup, verbose=0, callbacks=loop)
    # Without any batch callback Keras dispatches its own callbacks to a thread, which on a
    # small CPU slows the bare `fit`: a `fit` with one no-op batch callback is timed too.
    noop = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: None)
    seconds = {"loop": 0.0, "bare": 0.0, "noop": 0.0}
    rounds = 5
    for _ in range(rounds):
      for name, with_callbacks in (("bare", []), ("noop", [noop]), ("loop", loop)):
        start = time.perf_counter()
        model.fit(dataset, epochs=1, steps_per_epoch=args.steps // rounds, verbose=0,
                  callbacks=with_callbacks)
        seconds[name] += time.perf_counter() - start
  timed_steps = args.steps // rounds * rounds
  run_train_loop.bare_seconds = seconds["bare"] * args.steps / timed_steps
  run_train_loop.noop_seconds = seconds["noop"] * args.steps / timed_steps
  return seconds["loop"] * args.steps / timed_steps


def run_keras_hub(args, batch) -> float:
  import keras
  import keras_hub
  import tensorflow as tf

  from bert_tf.model.bert_config import BertConfig
  from bert_tf.runtime import precision
  config = BertConfig.from_preset(args.config, vocab_size=VOCAB_SIZE)
  with precision.policy(args.mixed_precision):
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=VOCAB_SIZE, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, dropout=config.hidden_dropout_prob,
        max_sequence_length=config.max_position_embeddings)
    model = keras_hub.models.BertMaskedLM(backbone=backbone, preprocessor=None)
    model.compile(
        optimizer=keras.optimizers.AdamW(learning_rate=1e-4, weight_decay=0.01, epsilon=1e-6,
                                         global_clipnorm=1.0),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()],
        jit_compile=args.jit_compile)
  features = {"token_ids": batch["token_ids"], "segment_ids": batch["segment_ids"],
              "padding_mask": batch["padding_mask"], "mask_positions": batch["masked_positions"]}
  dataset = tf.data.Dataset.from_tensors(
      (features, batch["masked_ids"], batch["masked_weights"])).repeat()
  return time_keras_fit(model, dataset, args.warmup, args.steps)


def run_hf_torch(args, batch) -> float:
  import numpy as np
  import torch
  import transformers

  from bert_tf.model.bert_config import BertConfig
  torch.manual_seed(0)
  torch.set_num_threads(os.cpu_count())
  config = BertConfig.from_preset(args.config, vocab_size=VOCAB_SIZE)
  model = transformers.BertForPreTraining(transformers.BertConfig(
      vocab_size=VOCAB_SIZE, hidden_size=config.hidden_size,
      num_hidden_layers=config.num_hidden_layers,
      num_attention_heads=config.num_attention_heads,
      intermediate_size=config.intermediate_size,
      max_position_embeddings=config.max_position_embeddings))
  model.train()
  optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6)
  labels = np.full(batch["token_ids"].shape, -100, "int64")
  np.put_along_axis(labels, batch["masked_positions"], batch["masked_ids"], 1)
  inputs = {
      "input_ids": torch.tensor(batch["token_ids"], dtype=torch.long),
      "token_type_ids": torch.tensor(batch["segment_ids"], dtype=torch.long),
      "attention_mask": torch.tensor(batch["padding_mask"], dtype=torch.long),
      "labels": torch.tensor(labels),
      "next_sentence_label": torch.tensor(1 - batch["is_next"], dtype=torch.long),
  }
  dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.mixed_precision)

  def step():
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
      loss = model(**inputs).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()

  for _ in range(args.warmup):
    step()
  start = time.perf_counter()
  for _ in range(args.steps):
    step()
  return time.perf_counter() - start


def run_one(args) -> None:
  if args.contender == "peak":
    print(json.dumps({"tflops": matmul_peak(DTYPES[args.mixed_precision])}))
    return
  predictions = math.ceil(0.15 * args.seq_length)
  batch = synthetic_batch(args.batch_size, args.seq_length, predictions)
  run = globals()[f"run_{args.contender}"]
  seconds = run(args, batch)
  result = {"contender": args.contender,
            "sequences_per_second": args.steps * args.batch_size / seconds}
  if hasattr(run, "bare_seconds"):
    result["bare_sequences_per_second"] = args.steps * args.batch_size / run.bare_seconds
    result["noop_sequences_per_second"] = args.steps * args.batch_size / run.noop_seconds
  print(json.dumps(result))


def subprocess_result(contender: str, precision: str) -> dict | None:
  """`run_one`'s result in a fresh process (every core, TensorFlow's C++ lines off); None,
  with the error printed, when it failed."""
  passed = [a for a in sys.argv[1:]
            if not a.startswith(("--contenders", "--mixed_precision"))]
  command = [sys.executable, __file__, f"--contender={contender}",
             f"--mixed_precision={precision}", *passed]
  done = subprocess.run(command, capture_output=True, text=True,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  if done.returncode:
    print(f"{contender} ({precision}): failed\n{done.stderr[-2000:]}")
    return None
  return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--config", default="bert_mini", help="a bert_tf preset")
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--mixed_precision", default="none,bf16",
                      help=f"precisions to run, comma-separated: {', '.join(DTYPES)}")
  parser.add_argument("--jit_compile", action="store_true", help="XLA (Keras contenders)")
  parser.add_argument("--warmup", type=int, default=5)
  parser.add_argument("--steps", type=int, default=20)
  parser.add_argument("--contenders", default=",".join(CONTENDERS))
  parser.add_argument("--log_every", type=int, default=20, help="train_loop's --log_every")
  parser.add_argument("--peak_tflops", type=float, default=0.0,
                      help="the device's dense peak (every precision), in place of the "
                      "measured matmul peaks")
  parser.add_argument("--contender", help=argparse.SUPPRESS)  # one, in a subprocess
  args = parser.parse_args()
  if args.contender:
    return run_one(args)
  precisions = args.mixed_precision.split(",")
  unknown = [name for name in precisions if name not in DTYPES]
  if unknown:
    parser.error(f"unknown --mixed_precision {', '.join(unknown)}: use {', '.join(DTYPES)}")

  from bert_tf.model.bert_config import BertConfig
  from bert_tf.model.flops import model_flops_per_sequence
  from bert_tf.runtime.precision import cpu_features
  print(f"{args.config}, sequence {args.seq_length}, batch {args.batch_size}, XLA "
        f"{'on' if args.jit_compile else 'off'}, {os.cpu_count()} cores; {args.steps} steps "
        f"after {args.warmup}\nCPU features: {cpu_features()}")
  peaks = {name: args.peak_tflops or subprocess_result("peak", name)["tflops"]
           for name in precisions}
  print("matmul peak (TFLOP/s): " + ", ".join(f"{DTYPES[name]} {peak:.3f}"
                                              for name, peak in peaks.items()))
  results, alongside = {}, {}
  for contender in args.contenders.split(","):
    for name in precisions:
      result = subprocess_result(contender, name)
      if result is None:
        continue
      results[contender, name] = result["sequences_per_second"]
      if "bare_sequences_per_second" in result:
        alongside[contender, name] = (result["bare_sequences_per_second"],
                                      result["noop_sequences_per_second"])
  flops = model_flops_per_sequence(BertConfig.from_preset(args.config, vocab_size=VOCAB_SIZE),
                                   args.seq_length, math.ceil(0.15 * args.seq_length))
  print(f"{'contender':<12}{'precision':>10}{'sequences/s':>12}{'bert_tf is':>11}"
        f"{'vs float32':>11}{'TFLOP/s':>9}{'MFU':>7}")
  for (contender, name), rate in results.items():
    reference, own_float32 = results.get(("bert_tf", name)), results.get((contender, "none"))
    ratio = f"{reference / rate:.2f}x" if reference else "-"
    gain = f"{rate / own_float32:.2f}x" if own_float32 else "-"
    print(f"{contender:<12}{DTYPES[name]:>10}{rate:>12.1f}{ratio:>11}{gain:>11}"
          f"{rate * flops / 1e12:>9.3f}{rate * flops / 1e12 / peaks[name]:>7.0%}")
  for (contender, name), (bare, noop) in alongside.items():
    rate = results[contender, name]
    print(f"{contender} ({DTYPES[name]}): {rate:.1f} sequences/s; in rounds alternating with "
          f"it, the bare fit {bare:.1f} ({1 - rate / bare:+.1%} slower), the fit with one "
          f"no-op batch callback {noop:.1f} ({1 - rate / noop:+.1%})")


if __name__ == "__main__":
  main()

"""Training-step throughput, side by side: bert_tf, keras-hub, Hugging Face (PyTorch).

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
    the vocabulary), torch AdamW, a plain loop.
All three use dropout 0.1, global-norm clipping at 1.0, and the same precision. Prints
sequences/s after `--warmup` steps (tracing, compilation), measured over `--steps` steps, and
each contender's ratio to bert_tf. With `--peak_tflops` (the device's dense peak at this
precision), also model-FLOPs utilisation: `model_flops_per_sequence` over time, the same count
for every contender.
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


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--config", default="bert_mini", help="a bert_tf preset")
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--mixed_precision", default="none", choices=["none", "bf16", "fp16"])
  parser.add_argument("--jit_compile", action="store_true", help="XLA (Keras contenders)")
  parser.add_argument("--warmup", type=int, default=5)
  parser.add_argument("--steps", type=int, default=20)
  parser.add_argument("--contenders", default=",".join(CONTENDERS))
  parser.add_argument("--log_every", type=int, default=20, help="train_loop's --log_every")
  parser.add_argument("--peak_tflops", type=float, default=0.0,
                      help="the device's dense peak at this precision, for utilisation")
  parser.add_argument("--contender", help=argparse.SUPPRESS)  # one, in a subprocess
  args = parser.parse_args()
  if args.contender:
    return run_one(args)

  print(f"{args.config}, sequence {args.seq_length}, batch {args.batch_size}, precision "
        f"{args.mixed_precision}, XLA {'on' if args.jit_compile else 'off'}, "
        f"{os.cpu_count()} cores; {args.steps} steps after {args.warmup}")
  results, alongside = {}, {}
  for contender in args.contenders.split(","):
    command = [sys.executable, __file__, f"--contender={contender}",
               *[a for a in sys.argv[1:] if not a.startswith("--contenders")]]
    done = subprocess.run(command, capture_output=True, text=True,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    if done.returncode:
      print(f"{contender}: failed\n{done.stderr[-2000:]}")
      continue
    result = json.loads(done.stdout.strip().splitlines()[-1])
    results[contender] = result["sequences_per_second"]
    if "bare_sequences_per_second" in result:
      alongside[contender] = (result["bare_sequences_per_second"],
                              result["noop_sequences_per_second"])
  from bert_tf.model.bert_config import BertConfig
  from bert_tf.model.flops import model_flops_per_sequence
  flops = model_flops_per_sequence(BertConfig.from_preset(args.config, vocab_size=VOCAB_SIZE),
                                   args.seq_length, math.ceil(0.15 * args.seq_length))
  reference = results.get("bert_tf")
  print(f"{'contender':<12}{'sequences/s':>12}{'bert_tf is':>12}{'TFLOP/s':>10}{'MFU':>8}")
  for contender, rate in results.items():
    ratio = f"{reference / rate:.2f}x" if reference else "-"
    utilisation = f"{rate * flops / 1e12 / args.peak_tflops:.1%}" if args.peak_tflops else "-"
    print(f"{contender:<12}{rate:>12.1f}{ratio:>12}{rate * flops / 1e12:>10.3f}"
          f"{utilisation:>8}")
  for contender, (bare, noop) in alongside.items():
    print(f"{contender}: {results[contender]:.1f} sequences/s; in rounds alternating with it, "
          f"the bare fit {bare:.1f} ({1 - results[contender] / bare:+.1%} slower), the fit "
          f"with one no-op batch callback {noop:.1f} ({1 - results[contender] / noop:+.1%})")


if __name__ == "__main__":
  main()

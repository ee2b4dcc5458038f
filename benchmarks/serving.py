"""Serving a fine-tuned classifier, side by side: the SavedModel on ids (Keras's ExportArchive,
what LiteRT converts) and the LiteRT and ONNX exports, float32 and int8 (`python -m
bert_tf.export --format=litert|onnx --quantize=none|int8`): the latency of a call by the
input's length (16, 64, 128 tokens) and batch (1, 32), with one thread and with each runtime's
default, beside the CPU's features and its own product rates at one thread (`ceiling`: what
int8 can reach against float32 on this CPU); the model file's size and, of a fine-tuned
classifier, the dev accuracy on the built-in task (the SavedModel on raw text too).

    python -m bert_tf.finetune --model_dir=runs/quickstart --task=classify \\
        --train_file=builtin --dev_file=builtin --learning_rate=1e-3 \\
        --output_dir=runs/quickstart_builtin --noserving_export
    python benchmarks/serving.py --output_dir=runs/quickstart_builtin
    python benchmarks/serving.py --config=bert_base --runs=20 --batches=2  # random weights
    python benchmarks/serving.py --quick  # bert_tiny's shape, a few calls: minutes

With `--config`, a classifier of that shape over data/vocab.txt, with random weights, stands
for a fine-tuned one: its speed and size are the shape's, its dev accuracy would be chance and
is left out (`-`). Each format is converted once and quantized from there. Each threads
setting is timed in its own process (TensorFlow's threads are fixed once it starts), the forms
in turn, a call of each in each round, so that a shared machine's changing load falls on all
alike. Prints Markdown tables.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

QUANTIZATIONS = ("none", "int8")
BATCHES = (1, 32)
# /proc/cpuinfo's flags that decide which kernels the runtimes take: float32 (AVX2,
# AVX-512), int8 (VNNI: AVX-512's or AVX's; AMX), bfloat16.
CPU_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_int8",
                "amx_bf16")
# BERT-base's feed-forward product at 128 tokens, [tokens, hidden] by [hidden, intermediate]:
# the shape of most of the model's multiply-adds, timed alone by `ceiling`.
CEILING_SHAPE = (128, 768, 3072)


def parse_args() -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--output_dir", help="A fine-tuned classifier's output_dir.")
  parser.add_argument("--config", help="A preset's shape (bert_base), random weights.")
  parser.add_argument("--quick", action="store_true",
                      help="bert_tiny's shape, 5 batch-1 and 1 batch-32 calls a cell.")
  parser.add_argument("--vocab_file", default="data/vocab.txt")
  parser.add_argument("--data_dir", default="data")
  parser.add_argument("--lengths", default="16,64,128",
                      help="Input lengths timed; the export's longest is the last.")
  parser.add_argument("--runs", type=int, default=20, help="Batch-1 calls timed a cell.")
  parser.add_argument("--batches", type=int, default=2, help="Batch-32 calls timed a cell.")
  parser.add_argument("--formats", default="litert,onnx")
  parser.add_argument("--threads", default="1,0",
                      help="Threads of every runtime, TensorFlow's too (0: each one's default).")
  parser.add_argument("--timing", help=argparse.SUPPRESS)  # the child's plan: see `timing`
  parser.add_argument("--ceiling", action="store_true", help=argparse.SUPPRESS)  # the child
  parsed = parser.parse_args()
  if parsed.quick:
    parsed.config, parsed.runs, parsed.batches = parsed.config or "bert_tiny", 5, 1
  if not (parsed.timing or parsed.ceiling) and not (parsed.output_dir or parsed.config):
    parser.error("give --output_dir, --config or --quick")
  return parsed


def cpu_features() -> str:
  """The CPU's model and which of `CPU_FEATURES` it has."""
  try:
    with open("/proc/cpuinfo") as f:
      info = f.read()
  except OSError:
    return "CPU features unknown (no /proc/cpuinfo)"
  model = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                if line.startswith("model name")), "unknown CPU")
  flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines()
                    if line.startswith("flags")), []))
  said = ", ".join(f"{name} {'yes' if name in flags else 'no'}" for name in CPU_FEATURES)
  return f"{model}, {os.cpu_count()} CPUs seen; {said}"


def ceiling() -> dict[str, float]:
  """The child: the CPU's own rates at one thread on `CEILING_SHAPE`, in billions of
  multiply-adds a second (CPU time, the median of 30 calls of each in turn): TensorFlow's
  float32 matmul (the SavedModel's products), ONNX Runtime's float32 `MatMul` and its int8
  `MatMulInteger` on u8 inputs and s8 weights (the int8 export's products; VNNI's kernel where
  the CPU has it). Their ratio is what an int8 export can gain at most on this CPU."""
  import onnxruntime
  import tensorflow as tf
  from onnx import TensorProto, helper, numpy_helper

  tf.config.threading.set_intra_op_parallelism_threads(1)
  tf.config.threading.set_inter_op_parallelism_threads(1)
  tokens, hidden, inner = CEILING_SHAPE
  rng = np.random.default_rng(0)
  x, weight = (rng.standard_normal(shape, np.float32) for shape in
               ((tokens, hidden), (hidden, inner)))
  options = onnxruntime.SessionOptions()
  options.intra_op_num_threads = options.inter_op_num_threads = 1

  def onnx_product(op: str, x_type: int, y_type: int, weight: np.ndarray):
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "w"], ["y"])], "ceiling",
        [helper.make_tensor_value_info("x", x_type, [tokens, hidden])],
        [helper.make_tensor_value_info("y", y_type, [tokens, inner])],
        [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return onnxruntime.InferenceSession(model.SerializeToString(), options,
                                        providers=["CPUExecutionProvider"])

  onnx_float = onnx_product("MatMul", TensorProto.FLOAT, TensorProto.FLOAT, weight)
  onnx_int8 = onnx_product("MatMulInteger", TensorProto.UINT8, TensorProto.INT32,
                           rng.integers(-64, 64, (hidden, inner), np.int8))
  x8 = rng.integers(0, 256, (tokens, hidden), np.uint8)
  tf_x, tf_weight = tf.constant(x), tf.constant(weight)
  tf_product = tf.function(lambda: tf.matmul(tf_x, tf_weight))
  calls = {"tensorflow float32": lambda: tf_product().numpy(),
           "onnxruntime float32": lambda: onnx_float.run(None, {"x": x}),
           "onnxruntime int8": lambda: onnx_int8.run(None, {"x": x8})}
  times = {name: [] for name in calls}
  for round_number in range(31):  # the first round warms
    for name, call in calls.items():
      start = time.process_time()
      call()
      if round_number:
        times[name].append(time.process_time() - start)
  return {name: tokens * hidden * inner / float(np.median(t)) / 1e9 for name, t in times.items()}


def ceiling_line(rates: dict[str, float]) -> str:
  """`ceiling`'s rates as one line."""
  tokens, hidden, inner = CEILING_SHAPE
  return (f"one thread, {tokens} x {hidden} by {hidden} x {inner}: TensorFlow float32 "
          f"{rates['tensorflow float32']:.0f}, ONNX Runtime float32 "
          f"{rates['onnxruntime float32']:.0f}, ONNX Runtime int8 (u8 x s8) "
          f"{rates['onnxruntime int8']:.0f} billion multiply-adds a second: int8 "
          f"{rates['onnxruntime int8'] / rates['tensorflow float32']:.2f}x TensorFlow's float32")


def random_classifier(preset: str, vocab_file: str, data_dir: str, seq_length: int,
                      directory: str) -> str:
  """An output_dir holding a classifier of `preset`'s shape, random weights, over the
  built-in task's classes."""
  import tensorflow as tf

  from bert_tf import files
  from bert_tf.data import builtin_tasks
  from bert_tf.data.tokenization import Vocabulary
  from bert_tf.finetune import data
  from bert_tf.finetune.model import classifier_model
  from bert_tf.model.bert_config import BertConfig
  from bert_tf.model.pretraining import pretraining_model
  vocabulary = Vocabulary(vocab_file)
  config = BertConfig.from_preset(preset, vocab_size=len(vocabulary))
  path = builtin_tasks.resolve("builtin", data_dir, "train", "classify")
  classes = sorted(set(data.read_examples(path, *builtin_tasks.columns("builtin")).labels))
  model = classifier_model(pretraining_model(config).get_layer("bert_encoder"), len(classes))
  tf.io.gfile.makedirs(directory)
  files.write_json(os.path.join(directory, "task.json"), {
      "task": "classify", "labels": classes, "pair": False, "seq_length": seq_length,
      "lower_case": True})
  files.write_json(os.path.join(directory, "bert_config.json"), config.to_dict())
  tf.io.gfile.copy(vocab_file, os.path.join(directory, "vocab.txt"), overwrite=True)
  model.save_weights(os.path.join(directory, "model.weights.h5"))
  return directory


def inputs_of_length(token_stream: list[int], cls_id: int, sep_id: int, length: int,
                     batch: int) -> dict:
  """`batch` rows of exactly `length` real tokens, `[CLS]` windows of the dev texts' pieces
  `[SEP]`, each window further along."""
  body = np.resize(np.array(token_stream, np.int32), len(token_stream) + batch * 7 + length)
  ids = np.array([[cls_id, *body[row * 7:row * 7 + length - 2], sep_id]
                  for row in range(batch)], np.int32)
  return {"input_ids": ids, "token_type_ids": np.zeros_like(ids),
          "attention_mask": np.ones_like(ids)}


def size_mb(path: str) -> float:
  total = (sum(os.path.getsize(os.path.join(d, f)) for d, _, names in os.walk(path)
               for f in names) if os.path.isdir(path) else os.path.getsize(path))
  return total / 1e6


def timing(plan_file: str, threads: int) -> None:
  """The child: loads each form of the plan with `threads`, times every (length, batch) cell
  with the forms in turn, writes {form: {"length,batch": [wall ms, CPU ms]}} (medians)."""
  import tensorflow as tf

  tf.config.threading.set_intra_op_parallelism_threads(threads)
  tf.config.threading.set_inter_op_parallelism_threads(threads)
  from bert_tf.export.formats import runtime_runner
  with open(plan_file) as f:
    plan = json.load(f)
  calls = {}
  for name, export_format, directory in plan["forms"]:
    if export_format == "savedmodel":
      serve = tf.saved_model.load(directory).signatures["serving_default"]
      calls[name] = lambda inputs, serve=serve: {k: v.numpy() for k, v in serve(
          **{n: tf.constant(a) for n, a in inputs.items()}).items()}
    else:
      calls[name] = runtime_runner(export_format, directory, threads=threads)
  figures = {name: {} for name in calls}
  for cell in plan["cells"]:
    length, batch, rounds = cell
    inputs = {k: np.array(v, np.int32) for k, v in plan["inputs"][f"{length},{batch}"].items()}
    wall, cpu = {name: [] for name in calls}, {name: [] for name in calls}
    for round_number in range(rounds + 1):  # the first round warms
      for name, call in calls.items():
        start, start_cpu = time.perf_counter(), time.process_time()
        call(inputs)
        if round_number:
          wall[name].append((time.perf_counter() - start) * 1000)
          cpu[name].append((time.process_time() - start_cpu) * 1000)
    for name in calls:
      figures[name][f"{length},{batch}"] = [float(np.median(wall[name])),
                                            float(np.median(cpu[name]))]
  with open(plan["answer"] + f".{threads}", "w") as f:
    json.dump(figures, f)


def main() -> None:
  import tensorflow as tf
  import tensorflow_text  # noqa: F401

  from bert_tf.export.formats import FORMATS, export_portable, runtime_runner
  from bert_tf.finetune.export import export_task
  from bert_tf.finetune.finetuned import load_finetuned, portable_finetuned
  from bert_tf.finetune.portable_dev import Converted, PortableDev
  from bert_tf.serving.portable import write_ids_saved_model

  lengths = [int(x) for x in args.lengths.split(",")]
  scratch = tempfile.mkdtemp(prefix="serving_benchmark_")
  SCRATCH.append(scratch)
  output_dir = args.output_dir or random_classifier(
      args.config, args.vocab_file, args.data_dir, max(lengths), f"{scratch}/classifier")
  finetuned = load_finetuned(output_dir)
  portable = portable_finetuned(finetuned, max(lengths))
  dev = PortableDev(finetuned.task, portable, "builtin", data_dir=args.data_dir,
                    text_columns="text", label_column="label", header=True)
  texts = dev.texts
  vocabulary = finetuned.vocabulary
  tokenizer = vocabulary.tokenizer(portable.lower_case)
  stream = [i for row in tokenizer.tokenize(tf.constant(texts)).to_list() for i in row]
  labels = np.array([finetuned.task.labels.index(label) for label in dev.kind.dev.labels])

  def dev_figure(run) -> float | None:
    return dev.figure(Converted(run, dev.kind.portable_logits)) if args.output_dir else None

  # (name, format, directory, file MB, dev accuracy)
  forms = []
  raw = export_task(finetuned.model, finetuned.task, finetuned.vocabulary, f"{scratch}/raw")
  raw_accuracy = None
  if args.output_dir:
    classify = tf.saved_model.load(raw).signatures["classify"]
    predicted = np.concatenate([
        np.argmax(classify(text=tf.constant(texts[i:i + 32]))["probabilities"].numpy(), -1)
        for i in range(0, len(texts), 32)])
    raw_accuracy = float(np.mean(predicted == labels))
  ids = write_ids_saved_model(portable, f"{scratch}/ids")
  serve = tf.saved_model.load(ids).signatures["serving_default"]
  forms.append(("SavedModel, ids", "savedmodel", ids, size_mb(ids), dev_figure(
      lambda inputs: {k: v.numpy() for k, v in serve(
          **{n: tf.constant(a) for n, a in inputs.items()}).items()})))
  for export_format in args.formats.split(","):
    exported = export_portable(portable, export_format, {
        quantize: f"{scratch}/{export_format}_{quantize}" for quantize in QUANTIZATIONS})
    for quantize, directory in exported.items():
      forms.append((f"{export_format} {'float' if quantize == 'none' else quantize}",
                    export_format, directory,
                    size_mb(os.path.join(directory, FORMATS[export_format].model_file)),
                    dev_figure(runtime_runner(export_format, directory))))

  cells = [(length, batch, args.runs if batch == 1 else args.batches)
           for batch in BATCHES for length in lengths]
  plan = {"forms": [form[:3] for form in forms], "cells": cells,
          "answer": f"{scratch}/timed.json",
          "inputs": {f"{length},{batch}": {k: v.tolist() for k, v in inputs_of_length(
              stream, vocabulary.cls_id, vocabulary.sep_id, length, batch).items()}
              for length, batch, _ in cells}}
  with open(f"{scratch}/plan.json", "w") as f:
    json.dump(plan, f)
  rates = json.loads(subprocess.run([sys.executable, __file__, "--ceiling"], check=True,
                                    capture_output=True, text=True).stdout.splitlines()[-1])
  timed, loads = {}, {}
  for threads in [int(x) for x in args.threads.split(",")]:
    loads[threads] = os.getloadavg()[0]
    subprocess.run([sys.executable, __file__, f"--timing={scratch}/plan.json",
                    f"--threads={threads}"], check=True)
    with open(f"{plan['answer']}.{threads}") as f:
      timed[threads] = json.load(f)

  shape = (f"fine-tuned classifier {output_dir}" if args.output_dir
           else f"{args.config}'s shape, random weights")
  print(f"\n{shape}; exported at {max(lengths)} tokens\nCPU: {cpu_features()}\n"
        f"CPU's products: {ceiling_line(rates)}\n"
        f"{args.runs} batch-1 and {args.batches} batch-32 calls timed a cell, the forms in "
        f"turn; load average {', '.join(f'{v:.1f}' for v in loads.values())} as each "
        f"threads setting started\n")
  header = [f"batch {batch}, {length} tokens" for length, batch, _ in cells]
  print("Latency, median ms by the clock (CPU ms of the process, all its threads):\n")
  print("| form | threads | " + " | ".join(header) + " |")
  print("|---|---|" + "---|" * len(header))
  for threads, figures in timed.items():
    for name, *_ in forms:
      cell_figures = [figures[name][f"{length},{batch}"] for length, batch, _ in cells]
      print(f"| {name} | {threads or 'default'} | " + " | ".join(
          f"{wall:.1f} ({cpu:.1f})" for wall, cpu in cell_figures) + " |")
  print("\nSpeed-up over the SavedModel on ids in the same cell (one thread: by CPU time; "
        "the default: by the clock), and each form's batch-1 speed-up from its longest "
        f"input to {lengths[0]} tokens:\n")
  print("| form | threads | " + " | ".join(header) + f" | {max(lengths)} -> {lengths[0]} "
        "tokens, batch 1 |")
  print("|---|---|" + "---|" * (len(header) + 1))
  for threads, figures in timed.items():
    clock = 1 if threads == 1 else 0
    base = figures["SavedModel, ids"]
    for name, *_ in forms:
      mine = figures[name]
      print(f"| {name} | {threads or 'default'} | " + " | ".join(
          f"{base[f'{length},{batch}'][clock] / mine[f'{length},{batch}'][clock]:.2f}x"
          for length, batch, _ in cells) + " | "
          f"{mine[f'{max(lengths)},1'][clock] / mine[f'{lengths[0]},1'][clock]:.2f}x |")
  print("\n| form | file MB | dev accuracy |\n|---|---|---|")
  if args.output_dir:
    print(f"| SavedModel, raw text | {size_mb(raw):.1f} | {raw_accuracy:.4f} |")
  for name, _, _, size, accuracy in forms:
    print(f"| {name} | {size:.1f} | {'-' if accuracy is None else f'{accuracy:.4f}'} |")


SCRATCH = []  # the directories the exports were written to, removed at the end

if __name__ == "__main__":
  args = parse_args()
  if args.timing:
    timing(args.timing, int(args.threads))
  elif args.ceiling:
    print(json.dumps(ceiling()))
  else:
    try:
      main()
    finally:
      for directory in SCRATCH:
        shutil.rmtree(directory, ignore_errors=True)

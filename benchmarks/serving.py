"""Serving a fine-tuned classifier, side by side: the SavedModel on raw text, the same model
on ids (Keras's ExportArchive, what LiteRT converts), and the LiteRT and ONNX exports at each
quantization (`python -m bert_tf.export --format=litert|onnx --quantize=...`): latency at batch
1 (median and 99th percentile, and its CPU time), examples/s at batch 32 (and per CPU second),
the model file's size and, of a fine-tuned classifier, the dev accuracy on the built-in task.

    python -m bert_tf.finetune --model_dir=runs/quickstart --task=classify \\
        --train_file=builtin --dev_file=builtin --learning_rate=1e-3 \\
        --output_dir=runs/quickstart_builtin --noserving_export
    python benchmarks/serving.py --output_dir=runs/quickstart_builtin
    python benchmarks/serving.py --config=bert_base --runs=10 --batches=1  # random weights

With `--config`, a classifier of that shape over data/vocab.txt, with random weights, stands
for a fine-tuned one: its speed and size are the shape's, its dev accuracy would be chance and
is left out (`-`). Each format is converted once and quantized from there; the forms are timed
in turn, a call of each in each round, so that a shared machine's load falls on all alike.
Prints a Markdown table.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

QUANTIZATIONS = ("none", "fp16", "int8")
SCRATCH = []  # the directories the exports were written to, removed at the end


def parse_args() -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--output_dir", help="A fine-tuned classifier's output_dir.")
  parser.add_argument("--config", help="A preset's shape (bert_base), random weights.")
  parser.add_argument("--vocab_file", default="data/vocab.txt")
  parser.add_argument("--data_dir", default="data")
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--runs", type=int, default=50, help="Batch-1 calls timed.")
  parser.add_argument("--batches", type=int, default=5, help="Batch-32 calls timed.")
  parser.add_argument("--formats", default="litert,onnx")
  parser.add_argument("--threads", type=int, default=1,
                      help="Threads of every runtime, TensorFlow's too (0: each one's default).")
  return parser.parse_args()


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


def timed_together(forms: list[tuple], runs: int, batches: int) -> list[tuple[float, ...]]:
  """Of each form, (call, its batch-1 inputs, its batch-32 inputs): (median and 99th percentile
  latency at batch 1 in ms, the median CPU time of a batch-1 call in ms, examples/s at batch
  32, examples per CPU second at batch 32). The forms' calls take turns, one call of each in
  each round, so that a shared machine's changing load falls on all of them alike; the CPU
  time (this process's, every thread's) is what a call costs whatever the neighbours do."""
  for call, one, many in forms:  # warm
    call(one)
    call(many)
  latencies, cpu = [[] for _ in forms], [[] for _ in forms]
  seconds, cpu_seconds = [0.0] * len(forms), [0.0] * len(forms)
  for _ in range(runs):
    for i, (call, one, _) in enumerate(forms):
      start, start_cpu = time.perf_counter(), time.process_time()
      call(one)
      latencies[i].append((time.perf_counter() - start) * 1000)
      cpu[i].append((time.process_time() - start_cpu) * 1000)
  for _ in range(batches):
    for i, (call, _, many) in enumerate(forms):
      start, start_cpu = time.perf_counter(), time.process_time()
      call(many)
      seconds[i] += time.perf_counter() - start
      cpu_seconds[i] += time.process_time() - start_cpu
  return [(float(np.median(latencies[i])), float(np.percentile(latencies[i], 99)),
           float(np.median(cpu[i])), 32 * batches / seconds[i], 32 * batches / cpu_seconds[i])
          for i in range(len(forms))]


def size_mb(path: str) -> float:
  total = (sum(os.path.getsize(os.path.join(d, f)) for d, _, names in os.walk(path)
               for f in names) if os.path.isdir(path) else os.path.getsize(path))
  return total / 1e6


def main() -> None:
  import tensorflow as tf
  import tensorflow_text  # noqa: F401

  tf.config.threading.set_intra_op_parallelism_threads(args.threads)
  tf.config.threading.set_inter_op_parallelism_threads(args.threads)
  from bert_tf.export.export_settings import FORMATS
  from bert_tf.export.portable import export_portable, write_ids_saved_model
  from bert_tf.export.portable_verification import reference_inputs, runtime_runner
  from bert_tf.finetune.export import export_task
  from bert_tf.finetune.finetuned import load_finetuned, portable_finetuned
  from bert_tf.finetune.portable_dev import Converted, PortableDev

  scratch = tempfile.mkdtemp(prefix="serving_benchmark_")
  SCRATCH.append(scratch)
  output_dir = args.output_dir or random_classifier(
      args.config, args.vocab_file, args.data_dir, args.seq_length, f"{scratch}/classifier")
  finetuned = load_finetuned(output_dir)
  portable = portable_finetuned(finetuned)
  dev = PortableDev(finetuned.task, portable, "builtin", data_dir=args.data_dir,
                    text_columns="text", label_column="label", header=True)
  texts = dev.texts
  _, inputs = reference_inputs(finetuned.vocabulary, texts, lower_case=portable.lower_case,
                               seq_length=portable.seq_length)
  ids_1 = {k: v[:1] for k, v in inputs.items()}
  ids_32 = {k: np.resize(v, (32, v.shape[1])) for k, v in inputs.items()}
  labels = np.array([finetuned.task.labels.index(label) for label in dev.kind.dev.labels])
  rows = []

  raw = export_task(finetuned.model, finetuned.task, finetuned.vocabulary, f"{scratch}/raw")
  classify = tf.saved_model.load(raw).signatures["classify"]

  def raw_figure() -> float | None:
    if not args.output_dir:
      return None
    predicted = np.concatenate([
        np.argmax(classify(text=tf.constant(texts[i:i + 32]))["probabilities"].numpy(), -1)
        for i in range(0, len(texts), 32)])
    return float(np.mean(predicted == labels))
  # (name, (call, batch-1 inputs, batch-32 inputs), file MB, dev accuracy)
  rows.append(("SavedModel, raw text", (lambda batch: classify(text=tf.constant(batch)),
                                        texts[:1], (texts * 32)[:32]), size_mb(raw), raw_figure()))

  on_ids = tf.saved_model.load(write_ids_saved_model(portable, f"{scratch}/ids"))
  serve = on_ids.signatures["serving_default"]

  def run_ids(inputs):
    outputs = serve(**{name: tf.constant(value) for name, value in inputs.items()})
    return {name: value.numpy() for name, value in outputs.items()}

  def dev_figure(run) -> float | None:
    return dev.figure(Converted(run, dev.kind.portable_logits)) if args.output_dir else None
  rows.append(("SavedModel, ids", (run_ids, ids_1, ids_32), size_mb(f"{scratch}/ids"),
               dev_figure(run_ids)))

  for export_format in args.formats.split(","):
    exported = export_portable(portable, export_format, {
        quantize: f"{scratch}/{export_format}_{quantize}" for quantize in QUANTIZATIONS})
    for quantize, directory in exported.items():
      run = runtime_runner(export_format, directory, threads=args.threads)
      rows.append((f"{export_format} {quantize}", (run, ids_1, ids_32),
                   size_mb(os.path.join(directory, FORMATS[export_format].model_file)),
                   dev_figure(run)))

  speeds = timed_together([form for _, form, _, _ in rows], args.runs, args.batches)
  base = speeds[1][2]  # the SavedModel on ids' CPU ms at batch 1
  print(f"\n{'fine-tuned classifier ' + output_dir if args.output_dir else args.config}, "
        f"seq_length {portable.seq_length}, {args.threads or 'default'} thread(s), "
        f"{args.runs} batch-1 calls, {args.batches} batch-32 calls timed, the forms in turn"
        f"{f', dev: {len(labels)} examples of the built-in task' if args.output_dir else ''}\n")
  print("| model | batch 1 median ms | p99 ms | batch 1 CPU ms | batch-1 speed-up vs SavedModel "
        "on ids (CPU) | batch 32 examples/s | per CPU s | file MB | dev accuracy |")
  print("|---|---|---|---|---|---|---|---|---|")
  for (name, _, size, accuracy), (median, p99, cpu, throughput, per_cpu) in zip(rows, speeds):
    print(f"| {name} | {median:.2f} | {p99:.2f} | {cpu:.2f} | {base / cpu:.2f}x | "
          f"{throughput:.1f} | {per_cpu:.1f} | {size:.1f} | "
          f"{'-' if accuracy is None else f'{accuracy:.4f}'} |")


if __name__ == "__main__":
  args = parse_args()
  try:
    main()
  finally:
    for directory in SCRATCH:
      shutil.rmtree(directory, ignore_errors=True)

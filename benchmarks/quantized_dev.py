"""What int8 costs a trained model's dev figure: each kind's built-in task fine-tuned from a
pre-training run, then exported as ONNX int8 and LiteRT int8, and the dev figure the export
itself prints (`--dev_file`: the kind's first figure, the converted model scored as the fine-tune
scores an epoch) beside the Keras float model's, in points (issue 54: within 1 point of float).

    python train.py --flagfile=configs/quickstart.flags               # the pre-trained run
    python benchmarks/quantized_dev.py --model_dir=runs/quickstart
    python benchmarks/quantized_dev.py --model_dir=runs/quickstart --kinds=tag,choose --epochs=5
    python benchmarks/quantized_dev.py --model_dir=runs/quickstart --kinds=tag \\
        --tag_task=builtin_swap --epochs=10 --learning_rate=5e-4 --batch_size=16

Each kind is `python -m bert_tf.finetune --noserving_export` on its built-in task (trained and
scored on its files), then `python -m bert_tf.export --format=onnx|litert --quantize=int8
--dev_file=<the task>` of its output_dir; every step a subprocess of its own, one after
another (they are the commands a user runs, and they share no memory or threads). The Keras
float figure is the export's own line's (the fine-tune's kept epoch rescored at the export's
sequence length), which is also checked against the fine-tune's metrics.json. Prints a Markdown
table, the CPU's features on its first line.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

TASKS = {"classify": "builtin", "regress": "builtin_similar", "tag": "builtin_tag",
         "answer": "builtin_answer", "choose": "builtin_choice"}
# A window of 128 tokens needs a shorter question and stride than answer's defaults (384).
EXTRA_FLAGS = {"answer": ["--max_query_length=48", "--doc_stride=32"]}
FORMATS = ("onnx", "litert")
# The export's line: `dev: onnx int8 dev_accuracy 0.7412, the Keras model's 0.7412 (170 examples)`
DEV_LINE = re.compile(r"^dev: (\w+) int8 (\w+) (-?[\d.]+|nan), the Keras model's (-?[\d.]+|nan) "
                      r"\((\d+) examples\)$", re.MULTILINE)


def run(command: list[str], what: str) -> str:
  """Runs `command` (a `python -m ...` of this tree) to its end; its output, or the tail of it
  and an exit if it fails."""
  started = time.time()
  done = subprocess.run([sys.executable, *command], capture_output=True, text=True,
                        env={**os.environ, "PYTHONPATH": ROOT})
  output = done.stdout + done.stderr
  if done.returncode:
    sys.exit(f"{what} failed (status {done.returncode}):\n{output[-3000:]}")
  print(f"  {what}: {time.time() - started:.0f} s", file=sys.stderr, flush=True)
  return output


def finetune(args, kind: str, output_dir: str) -> dict:
  """Fine-tunes `kind` on its built-in task from the run; its metrics.json."""
  task = args.tasks[kind]
  run(["-m", "bert_tf.finetune", f"--task={kind}", f"--model_dir={args.model_dir}",
       f"--train_file={task}", f"--dev_file={task}", f"--output_dir={output_dir}",
       f"--data_dir={args.data_dir}", f"--epochs={args.epochs}",
       f"--learning_rate={args.learning_rate}", f"--batch_size={args.batch_size}",
       f"--seq_length={args.seq_length}", f"--seed={args.seed}", "--noserving_export",
       *EXTRA_FLAGS.get(kind, [])], f"{kind}: fine-tune")
  with open(os.path.join(output_dir, "metrics.json")) as f:
    return json.load(f)


def exported_dev(args, kind: str, output_dir: str, export_format: str) -> dict:
  """The int8 export of `output_dir` in `export_format` and its dev line, parsed."""
  output = run(["-m", "bert_tf.export", f"--model_dir={output_dir}",
                f"--format={export_format}", "--quantize=int8", f"--dev_file={args.tasks[kind]}",
                f"--data_dir={args.data_dir}", f"--output={output_dir}_{export_format}"],
               f"{kind}: {export_format} int8")
  found = DEV_LINE.search(output)
  if not found:
    sys.exit(f"{kind}: no dev line in the {export_format} export's output:\n{output[-3000:]}")
  return dict(figure=found[2], int8=float(found[3]), keras=float(found[4]),
              examples=int(found[5]))


def measure(args, kind: str, work_dir: str) -> list[str]:
  """A table row for `kind`; its cells the figures to 4 places and the differences in points."""
  output_dir = os.path.join(work_dir, kind)
  metrics = finetune(args, kind, output_dir)
  onnx, litert = (exported_dev(args, kind, output_dir, name) for name in FORMATS)
  keras = onnx["keras"]
  if abs(metrics[onnx["figure"]] - keras) > 5e-5 or abs(litert["keras"] - keras) > 5e-5:
    print(f"  {kind}: Keras float {keras:.4f} in the ONNX export's line, {litert['keras']:.4f} "
          f"in LiteRT's, {metrics[onnx['figure']]:.4f} in metrics.json", file=sys.stderr)
  points = [100 * (each["int8"] - keras) for each in (onnx, litert)]
  return [f"{kind} (`{args.tasks[kind]}`, {onnx['examples']})", onnx["figure"], f"{keras:.4f}",
          f"{onnx['int8']:.4f}", f"{litert['int8']:.4f}",
          " / ".join(f"{p:+.2f}" for p in points), str(metrics["best_epoch"])]


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--model_dir", required=True, help="a pre-training run (train.py's)")
  parser.add_argument("--kinds", default=",".join(TASKS), help="of " + ", ".join(TASKS))
  parser.add_argument("--epochs", type=int, default=3)
  parser.add_argument("--learning_rate", type=float, default=1e-3)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--tag_task", default=TASKS["tag"], choices=("builtin_tag", "builtin_swap"),
                      help="tag's built-in task: builtin_swap needs the context")
  parser.add_argument("--data_dir", default="data", help="where the built-in tasks are")
  parser.add_argument("--work_dir", default="", help="keep the fine-tunes and exports here "
                      "(default: a temporary directory, removed at the end)")
  args = parser.parse_args()
  kinds = args.kinds.split(",")
  if unknown := [k for k in kinds if k not in TASKS]:
    parser.error(f"unknown kinds {', '.join(unknown)}: use {', '.join(TASKS)}")
  args.tasks = {**TASKS, "tag": args.tag_task}
  with tempfile.TemporaryDirectory(prefix="quantized_dev_") as temporary:
    work_dir = args.work_dir or temporary
    started, load = time.time(), os.getloadavg()[0]
    rows = [measure(args, kind, work_dir) for kind in kinds]
  from bert_tf import console
  console.start([])  # TensorFlow, which the next import loads, without its start-up lines
  from bert_tf.runtime.precision import cpu_features
  print(f"CPU: {cpu_features()}; load average {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end; {time.time() - started:.0f} s")
  print(f"\n{args.model_dir}: {args.epochs} epochs at {args.learning_rate}, batch "
        f"{args.batch_size}, {args.seq_length} tokens, seed {args.seed}\n")
  header = ["kind (task, dev examples)", "figure", "Keras float", "ONNX int8", "LiteRT int8",
            "points (ONNX / LiteRT)", "best epoch"]
  for row in [header, ["---"] * len(header), *rows]:
    print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
  main()

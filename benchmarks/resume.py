"""Time from start-up to the first batch of a resumed run, at increasing steps: the recorded
stream position (constant time) side by side with replaying the stream (`.skip`).

    python benchmarks/resume.py --corpus_mb=40 --train_steps=100 --replay_budget=60

1. Builds a corpus of `--corpus_mb` megabytes from the built-in one (16 files, so about
   `corpus_mb / 8` pieces of 8 MiB) and trains bert_tiny on it with `trainer.train` for
   `--train_steps` cheap steps (sequences of 32, batches of 256), a checkpoint every 50.
2. For each step count N, in a fresh process: restores a checkpoint's data position and builds
   the training dataset from it (new), or builds the dataset and skips N batches (old, the
   replay this replaces), and times from the process's start to the first batch. Checkpoints
   the run wrote give their real positions; for step counts past the run, the position is
   built directly (said so in the table): the epoch and piece that N batches reach, given
   the examples per epoch counted in one pass, and a place in that piece. Restoring the
   weights is left out of both: it costs the same at any step.
The old mechanism is timed while each measurement takes under `--replay_budget` seconds; past
that the table gives the time extrapolated from the last one (marked ~).
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
SEQ, BATCH = 32, 256


def dataset_options(args) -> dict:
  return dict(seq_length=SEQ, max_predictions_per_seq=5, batch_size=BATCH, seed=0,
              data_dir=args.work_dir)


def child(args):
  """Prints the seconds from this process's start (given by the parent) to the first batch."""
  import tensorflow as tf

  import bert_tf
  corpus = os.path.join(args.work_dir, "corpus", "*.txt")
  vocab = os.path.join(args.work_dir, "vocab.txt")
  if args.child == "new":
    from bert_tf.data.data_position import DataPosition
    position = DataPosition(1)
    tf.train.Checkpoint(data_position=position.last_consumed).read(
        args.checkpoint).expect_partial()
    dataset = bert_tf.pretraining_dataset(
        corpus, vocab, start_position=position.start(1, 0), with_positions=True,
        **dataset_options(args))
  else:
    dataset = bert_tf.pretraining_dataset(corpus, vocab, **dataset_options(args)).skip(
        args.batches)
  next(iter(dataset))
  print(time.time() - args.started)


def timed(args, mode: str, **extra) -> float:
  flags = [f"--{name}={value}" for name, value in extra.items()]
  result = subprocess.run(
      [sys.executable, __file__, f"--child={mode}", f"--work_dir={args.work_dir}",
       f"--started={time.time()}", *flags], capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  if result.returncode:
    raise SystemExit(result.stderr[-3000:])
  return float(result.stdout.strip().splitlines()[-1])


def examples_per_epoch(args) -> int:
  import bert_tf
  dataset = bert_tf.pretraining_dataset(
      os.path.join(args.work_dir, "corpus", "*.txt"), os.path.join(args.work_dir, "vocab.txt"),
      repeat=False, **dataset_options(args))
  return sum(int(batch[0]["token_ids"].shape[0]) for batch in dataset)


def built_position(step: int, epoch_examples: int, num_pieces: int) -> int:
  """The key about `step` batches into the stream (pieces taken as equal in size)."""
  from bert_tf.data import stream_position
  epoch, offset = divmod(step * BATCH, epoch_examples)
  per_piece = -(-epoch_examples // num_pieces)
  return stream_position.encode(epoch, offset // per_piece, offset % per_piece) - 1


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--corpus_mb", type=float, default=40)
  parser.add_argument("--train_steps", type=int, default=100)
  parser.add_argument("--steps", default="50,100,1000,4000,16000,64000,256000,1000000")
  parser.add_argument("--replay_budget", type=float, default=120)
  parser.add_argument("--child", choices=["new", "old"])
  parser.add_argument("--work_dir")
  parser.add_argument("--started", type=float)
  parser.add_argument("--checkpoint")
  parser.add_argument("--batches", type=int)
  args = parser.parse_args()
  if args.child:
    return child(args)

  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import tensorflow as tf

  from benchmarks.pipeline import build_corpus
  from bert_tf.data import pieces
  from bert_tf.data.vocabulary_learner import build_vocabulary
  from bert_tf.training import trainer
  from bert_tf.training.train_settings import TrainConfig
  with tempfile.TemporaryDirectory() as work_dir:
    args.work_dir = work_dir
    os.makedirs(os.path.join(work_dir, "corpus"))
    files = build_corpus(os.path.join(work_dir, "corpus"), args.corpus_mb)
    vocab = os.path.join(work_dir, "vocab.txt")
    build_vocabulary("builtin", vocab, data_dir=work_dir)
    num_pieces = len(pieces.plan_pieces(sorted(files)))
    model_dir = os.path.join(work_dir, "run")
    start = time.perf_counter()
    trainer.train(TrainConfig(
        input_files=os.path.join(work_dir, "corpus", "*.txt"), vocab_file=vocab,
        data_dir=work_dir, model_dir=model_dir, seq_length=SEQ, max_predictions_per_seq=5,
        global_batch_size=BATCH, train_steps=args.train_steps, checkpoint_every=50,
        warmup_steps=10, eval_steps=1, verbose=False, seed=0))
    print(f"trained {args.train_steps} steps of {BATCH} x {SEQ} tokens in "
          f"{time.perf_counter() - start:.0f} s")
    real = {int(path.rsplit("-", 1)[1].split(".")[0]): path.rsplit(".", 1)[0]
            for path in glob.glob(os.path.join(model_dir, "checkpoints", "ckpt-*.index"))}
    epoch_examples = examples_per_epoch(args)
    print(f"corpus {args.corpus_mb:g} MB: {num_pieces} pieces, {epoch_examples} examples "
          f"({epoch_examples // BATCH} batches) an epoch; 2 shared cores: timings are noisy")
    print(f"{'step':>9}{'position from':>16}{'recorded (s)':>14}{'replay (s)':>12}")
    replay = replay_start = None
    for step in sorted({0, *(int(s) for s in args.steps.split(","))}):  # 0: a fresh start
      if step in real:
        checkpoint, source = real[step], "checkpoint"
      else:
        variable = tf.Variable([built_position(step, epoch_examples, num_pieces)],
                               dtype=tf.int64)
        checkpoint = tf.train.Checkpoint(data_position=variable).write(
            os.path.join(work_dir, f"built-{step}"))
        source = "built"
      recorded = timed(args, "new", checkpoint=checkpoint)
      if replay is None or replay[1] < args.replay_budget:
        replay = step, timed(args, "old", batches=step)
        replay_start = replay[1] if replay_start is None else replay_start
        replay_text = f"{replay[1]:.1f}"
      else:  # start-up, then a time per batch skipped
        per_batch = (replay[1] - replay_start) / replay[0]
        replay_text = f"~{replay_start + per_batch * step:,.0f}"
      print(f"{step:>9,}{source:>16}{recorded:>14.1f}{replay_text:>12}", flush=True)


if __name__ == "__main__":
  main()

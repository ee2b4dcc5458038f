"""Reading pre-training records: records/s of bert_tf's record reader (as written, masked
anew, and unshuffled: the files interleaved in turn) against the text pipeline and a plain
TFRecordDataset + parse_example baseline.

    python benchmarks/records.py --batches=200

Writes the built-in corpus's examples (`--epochs` of them, sequence 128) as original BERT's
records in 8 files, then measures each reader over `--batches` batches of 64 after 5 warm-up
batches, in this process, one after the other: the examples and tokens per second. The
baseline is what original BERT's run_pretraining.py does (files interleaved, records parsed
by its feature spec) without its int64-to-int32 casts and shuffles: the floor a reader pays.
"""

import argparse
import os
import tempfile
import time

BATCH = 64
SEQ, PREDICTIONS = 128, 20


def write_records(directory: str, vocab_file: str, epochs: int, data_dir: str) -> list[str]:
  from bert_tf.data.tokenization import Vocabulary
  from bert_tf.prepare import PrepareConfig, record_file_names
  from bert_tf.prepare import write_records as write
  config = PrepareConfig(input_files="builtin", data_dir=data_dir, vocab_file=vocab_file,
                         output=directory, dupe_factor=epochs, num_output_files=8,
                         seq_length=SEQ, max_predictions_per_seq=PREDICTIONS)
  write(config, Vocabulary(vocab_file))
  return record_file_names(directory, 8)


def measure(dataset, batches: int) -> float:
  """Examples per second over `batches` batches, after 5 warm-up batches."""
  iterator = iter(dataset.repeat())
  for _ in range(5):
    next(iterator)
  start = time.perf_counter()
  for _ in range(batches):
    next(iterator)
  return batches * BATCH / (time.perf_counter() - start)


def baseline(files: list[str]):
  import tensorflow as tf

  from bert_tf.data.records import RecordShape
  spec = RecordShape(SEQ, PREDICTIONS).feature_spec()
  return (tf.data.Dataset.from_tensor_slices(files)
          .interleave(tf.data.TFRecordDataset, cycle_length=4,
                      num_parallel_calls=tf.data.AUTOTUNE)
          .batch(BATCH, drop_remainder=True)
          .map(lambda records: tf.io.parse_example(records, spec),
               num_parallel_calls=tf.data.AUTOTUNE)
          .prefetch(tf.data.AUTOTUNE))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--batches", type=int, default=200)
  parser.add_argument("--epochs", type=int, default=2)
  args = parser.parse_args()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  from bert_tf.data.pipeline import pretraining_dataset
  from bert_tf.data.record_dataset import records_dataset
  from bert_tf.data.vocabulary_learner import build_vocabulary

  with tempfile.TemporaryDirectory() as directory:
    vocab_file = os.path.join(directory, "vocab.txt")
    build_vocabulary("builtin", vocab_file, data_dir=directory)
    files = write_records(os.path.join(directory, "records"), vocab_file, args.epochs,
                          directory)
    readers = {
        "TFRecordDataset + parse_example": baseline(files),
        "bert_tf records_dataset": records_dataset(files, vocab_file, batch_size=BATCH),
        "bert_tf records_dataset --remask": records_dataset(files, vocab_file,
                                                            batch_size=BATCH, remask=True),
        "bert_tf records_dataset --noshuffle": records_dataset(files, vocab_file,
                                                               batch_size=BATCH, shuffle=False),
        "bert_tf text pipeline": pretraining_dataset(
            "builtin", vocab_file, data_dir=directory, seq_length=SEQ,
            max_predictions_per_seq=PREDICTIONS, batch_size=BATCH),
    }
    print(f"{len(os.sched_getaffinity(0))} core(s), seq {SEQ}, batches of {BATCH}, "
          f"{args.batches} timed batches")
    print(f"{'reader':<36}{'examples/s':>12}")
    for name, dataset in readers.items():
      print(f"{name:<36}{measure(dataset, args.batches):>12.0f}", flush=True)


if __name__ == "__main__":
  main()

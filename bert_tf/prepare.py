"""Writes the text pipeline's examples as original BERT's pre-training records:
`python -m bert_tf.prepare --input_files=... --vocab_file=... --output=DIR`.

Takes `train.py`'s corpus, pipeline and seed flags, so the records hold exactly the examples
a one-pipeline training run of those settings reads in its first `--dupe_factor` epochs
(each epoch paired and masked afresh), in original BERT's format (`bert_tf.data.records`):
readable by google-research/bert's `run_pretraining.py` and by `records_dataset`. Examples
stream from the pipeline (parallel over the cores), serialized as records in the graph, to
the files, so memory does not grow with the corpus, dealt in the run's order: example i to
file i % `--num_output_files`. Read with `--noshuffle_records`, which interleaves the files
round-robin, they are that run's batches whatever the number of files. Each document is
tokenized once, its tokens cached on local disk for the later epochs. The directory appears
complete or not at all.
"""

import dataclasses
import logging
import os
import sys
import tempfile
import time

from bert_tf import console

if __name__ == "__main__":  # as a command: before TensorFlow loads, its start-up lines go
  console.start(sys.argv)
from bert_tf.data.data_settings import COMPRESSIONS, RECORDS  # noqa: E402
from bert_tf.errors import UserError  # noqa: E402
from bert_tf.replaced_outputs import check_apart  # noqa: E402
from bert_tf.settings import setting  # noqa: E402
from bert_tf.training.train_settings import TrainConfig  # noqa: E402

log = logging.getLogger("bert_tf")

BATCH = 256  # examples taken from the pipeline at a time
DESCRIPTION = "prepare.json"  # beside the records: what they hold and how they were made


@dataclasses.dataclass(frozen=True)
class PrepareConfig(TrainConfig):
  """Where the records go and how many epochs of the corpus they hold."""

  output: str = setting("", "Directory the record files are written to (replaced whole); "
                        "not one holding what it reads (the corpus, the vocabulary, the initial "
                        "model, the eval files) nor the current directory.")
  dupe_factor: int = setting(10, "Epochs of the corpus written, each paired and masked afresh "
                             "(original BERT's --dupe_factor).")
  num_output_files: int = setting(16, "Record files written, the examples dealt in turn.")
  output_compression: str = setting("", "Compress the record files: GZIP or ZLIB.",
                                    choices=COMPRESSIONS)

  def check(self) -> None:
    super().check()
    if self.input_format == RECORDS:
      raise UserError("bert_tf.prepare writes records from a text corpus: give its "
                      "--input_format (sentence_per_line or paragraph_per_line)")
    if self.add_vocabulary:
      raise UserError("bert_tf.prepare writes the ids of --vocab_file: --add_vocabulary grows "
                      "a model's vocabulary while training (train.py); give the grown one, the "
                      "run's vocab.txt, as --vocab_file")
    if self.input_weights:
      raise UserError("bert_tf.prepare writes one corpus's records: --input_weights mixes "
                      "text corpora while training (train.py)")
    if not self.output:
      raise UserError("--output is required: the directory to write the records to")
    check_apart(self.output, {"--input_files": self.input_files, "--vocab_file": self.vocab_file,
                              "--data_dir": self.data_dir,  # the built-in corpus, the vocabulary
                              "--init_checkpoint": self.init_checkpoint,  # its vocabulary, case
                              "--eval_files": self.eval_files})
    if min(self.dupe_factor, self.num_output_files) <= 0:
      raise UserError("dupe_factor and num_output_files must be positive")


def record_file_names(directory: str, count: int) -> list[str]:
  return [os.path.join(directory, f"part-{i:05d}-of-{count:05d}.tfrecord") for i in range(count)]


def write_records(config: PrepareConfig, vocabulary, report=None) -> dict:
  """Writes the records into `config.output`; returns what `prepare.json` says of them.
  `report(records_written)` is called after each batch. Each document is tokenized once: the
  first epoch caches the tokens in a local temporary directory, the others pair and mask them
  anew."""
  from bert_tf.data import input_plan
  from bert_tf.data.holdout import Holdout
  from bert_tf.data.pipeline import text_batches

  holdout = Holdout(config.eval_fraction, held_out=False) if config.eval_fraction else None
  with tempfile.TemporaryDirectory(prefix="bert_tf_tokens_") as token_cache:
    examples = text_batches(input_plan.from_settings(
        config, vocabulary, holdout=holdout, batching=input_plan.Batching(
            BATCH, with_positions=True),
        token_cache=token_cache if config.dupe_factor > 1 else ""))
    return _write(config, examples, report)


def _serialized(examples, end: int):
  """Batches of `examples` (with stream positions) -> (their records before the key `end`,
  serialized, string [<= batch]; whether the batch lies wholly before `end`), serialized in
  parallel in the graph."""
  import tensorflow as tf

  from bert_tf.data import records, stream_position
  from bert_tf.data.prefetching import prefetched

  def serialized(features, labels, weights):
    before_end = features[stream_position.FEATURE] < end
    return (tf.boolean_mask(records.serialize(features, labels, weights), before_end),
            tf.reduce_all(before_end))

  serialize = tf.autograph.experimental.do_not_convert(serialized)  # tf ops only
  return prefetched(examples.map(serialize, num_parallel_calls=tf.data.AUTOTUNE,
                                 deterministic=True))


def _write(config: PrepareConfig, examples, report) -> dict:
  """Writes the first `dupe_factor` epochs of `examples` (batches with stream positions)."""
  import tensorflow as tf

  from bert_tf import files
  from bert_tf.data import stream_position

  end = stream_position.encode(config.dupe_factor, 0, 0)  # the first key after the last epoch
  directory = files.temporary_directory(config.output)
  tf.io.gfile.makedirs(directory)
  options = tf.io.TFRecordOptions(compression_type=config.output_compression)
  writers = [tf.io.TFRecordWriter(path, options)
             for path in record_file_names(directory, config.num_output_files)]
  written = 0
  for batch, whole in _serialized(examples, end):
    batch = batch.numpy()
    for index, writer in enumerate(writers):  # record i of the stream goes to file i % files
      for record in batch[(index - written) % len(writers)::len(writers)]:
        writer.write(record)
    written += len(batch)
    if report:
      report(written)
    if not whole:
      break
  for writer in writers:
    writer.close()
  description = {
      "records": written, "seq_length": config.seq_length,
      "max_predictions_per_seq": config.max_predictions_per_seq,
      "dupe_factor": config.dupe_factor, "seed": config.seed,
      "input_files": config.input_files, "vocab_file": config.vocab_file,
      "do_lower_case": config.do_lower_case, "compression": config.output_compression,
      "next_sentence_labels": "original BERT's: 0 IsNext, 1 NotNext",
  }
  files.write_json(os.path.join(directory, DESCRIPTION), description)
  files.replace_directory(directory, config.output)
  return description


def prepare_records(config: PrepareConfig) -> dict:
  """Checks the settings and the corpus as `train.py` does, writing nothing, then builds the
  vocabulary when it does not exist and writes the records with progress by records."""
  from bert_tf.training.preparation import check_inputs, learned_vocabulary

  vocabulary = learned_vocabulary(check_inputs(config))
  start = time.monotonic()

  def report(written):
    if console.is_terminal():
      rate = written / max(time.monotonic() - start, 1e-9)
      console.status(f"{written:,} records written ({rate:,.0f}/s)")

  description = write_records(config, vocabulary, report)
  console.status("")
  log.info("%s records in %s written to %s in %.0f s", f"{description['records']:,}",
           console.counted(config.num_output_files, "file"), config.output,
           time.monotonic() - start)
  return description


if __name__ == "__main__":
  console.run_command(PrepareConfig, prepare_records)

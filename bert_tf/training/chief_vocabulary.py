"""The vocabulary a multi-worker run learns when --vocab_file does not exist: the chief alone
learns it and writes the file (renamed into place whole: `bert_tf/files.py`); every other
worker waits for that file to appear, then reads it. Without this, each worker of a Slurm job
would learn the same vocabulary into the same file at once."""

import logging
import time

import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.runtime import cluster, strategy

log = logging.getLogger("bert_tf")

# Learning reads at most 64 MiB of the corpus (`vocabulary_learner.SAMPLE_BYTES`): minutes.
WAIT_SECONDS = 1800.0
POLL_SECONDS = 1.0


def learns_here() -> bool:
  """Whether this process learns the vocabulary: the chief of its cluster, or a process on
  its own (`strategy.is_chief`)."""
  return strategy.is_chief(cluster.joined())


def learned_by_the_chief(vocab_file: str) -> Vocabulary:
  """The vocabulary the chief learns into `vocab_file`, once the file is there; one line
  naming it when it does not appear within `WAIT_SECONDS`."""
  resolver, timeout = cluster.joined(), WAIT_SECONDS
  log.info("%s %d: waiting for the chief to learn the vocabulary %s", resolver.task_type,
           resolver.task_id, vocab_file)
  deadline = time.monotonic() + timeout
  while not tf.io.gfile.exists(vocab_file):
    if time.monotonic() > deadline:
      raise UserError(f"the vocabulary {vocab_file} did not appear within {timeout:g} s: the "
                      "chief learns it; did it stop? Learn it before the job with `python -m "
                      "bert_tf.vocab` (docs/cluster.md)")
    time.sleep(POLL_SECONDS)
  return Vocabulary(vocab_file)

"""Builds a WordPiece vocabulary from a corpus: `python -m bert_tf.vocab`.

keras-hub's `compute_word_piece_vocabulary` does the learning (tensorflow-text's BERT
vocabulary learner); this module feeds it the corpus's sentences as the pipeline reads them
and writes the file atomically, with the five special tokens first.
"""

import os
import sys

from absl import app, flags, logging
import tensorflow as tf

from bert_tf.data import corpus
from bert_tf.data.tokenization import SPECIAL_TOKENS, Vocabulary
from bert_tf.errors import UserError


def build_vocabulary(file_patterns, vocab_file: str, *, vocab_size: int = 8000,
                     lower_case: bool = True, input_format: str = "sentence_per_line",
                     data_dir: str = "data") -> Vocabulary:
  """Learns a vocabulary of at most `vocab_size` tokens from the corpus; writes `vocab_file`."""
  import keras_hub  # Heavy import, needed only here.

  files = corpus.list_files(file_patterns, data_dir)
  sentences = tf.data.Dataset.from_tensor_slices(files).flat_map(
      lambda path: corpus.read_documents(path, input_format)).unbatch()
  logging.info("Learning a %d-token WordPiece vocabulary from %d files", vocab_size,
               len(files))
  tokens = keras_hub.tokenizers.compute_word_piece_vocabulary(
      sentences.batch(1024), vocab_size, lowercase=lower_case, strip_accents=lower_case,
      reserved_tokens=list(SPECIAL_TOKENS))
  directory = os.path.dirname(vocab_file)
  if directory:
    tf.io.gfile.makedirs(directory)
  with tf.io.gfile.GFile(vocab_file + ".tmp", "w") as f:
    f.write("".join(token + "\n" for token in tokens))
  tf.io.gfile.rename(vocab_file + ".tmp", vocab_file, overwrite=True)
  logging.info("Wrote %d tokens to %s", len(tokens), vocab_file)
  return Vocabulary(vocab_file)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  FLAGS = flags.FLAGS
  try:
    vocabulary = build_vocabulary(
        FLAGS.input_files, FLAGS.vocab_file, vocab_size=FLAGS.vocab_size,
        lower_case=FLAGS.do_lower_case, input_format=FLAGS.input_format,
        data_dir=FLAGS.data_dir)
  except UserError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)
  print(f"{len(vocabulary)} tokens written to {FLAGS.vocab_file}")


if __name__ == "__main__":
  flags.DEFINE_string("input_files", "builtin", "Corpus: globs or comma list; `builtin` is "
                      "Python's language reference.")
  flags.DEFINE_enum("input_format", "sentence_per_line", list(corpus.INPUT_FORMATS),
                    "Corpus layout.")
  flags.DEFINE_string("vocab_file", "data/vocab.txt", "Where to write the vocabulary.")
  flags.DEFINE_integer("vocab_size", 8000, "Largest number of tokens to learn.")
  flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (uncased model).")
  flags.DEFINE_string("data_dir", "data", "Where the built-in corpus is written.")
  app.run(main)

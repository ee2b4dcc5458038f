"""Builds a WordPiece vocabulary from a corpus: `python -m bert_tf.vocab` (the learning itself:
`bert_tf.data.vocabulary_learner`)."""

import sys

from absl import app

from bert_tf import settings
from bert_tf.data.config import VocabularyConfig
from bert_tf.data.vocabulary_learner import build_vocabulary
from bert_tf.errors import UserError


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
  config = settings.from_flags(VocabularyConfig)
  try:
    vocabulary = build_vocabulary(
        config.input_files, config.vocab_file, vocab_size=config.vocab_size,
        lower_case=config.do_lower_case, input_format=config.input_format,
        min_token_count=config.min_token_count, data_dir=config.data_dir)
  except UserError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)
  print(f"{len(vocabulary)} tokens written to {config.vocab_file}")


if __name__ == "__main__":
  settings.define_flags(VocabularyConfig)
  settings.name_verbosity_levels()
  app.run(main)

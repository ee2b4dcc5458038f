"""Builds a WordPiece vocabulary from a corpus: `python -m bert_tf.vocab` (the learning itself:
`bert_tf.data.vocabulary_learner`)."""

import sys

from bert_tf import console

if __name__ == "__main__":  # as a command: before TensorFlow loads, its start-up lines go
  console.start(sys.argv)
from bert_tf.data.data_settings import VocabularyConfig  # noqa: E402
from bert_tf.data.vocabulary_learner import build_vocabulary  # noqa: E402


def build(config: VocabularyConfig) -> None:
  vocabulary = build_vocabulary(
      config.input_files, config.vocab_file, vocab_size=config.vocab_size,
      lower_case=config.do_lower_case, input_format=config.input_format,
      min_token_count=config.min_token_count, data_dir=config.data_dir)
  print(f"{len(vocabulary)} tokens written to {config.vocab_file}")


if __name__ == "__main__":
  console.run_command(VocabularyConfig, build)

"""Learns a WordPiece vocabulary from a corpus (`build_vocabulary`; its tokens alone:
`learned_tokens`), for `python -m bert_tf.vocab`
and for a run whose --vocab_file does not exist yet.

tensorflow-text's BERT vocabulary learner does the learning (keras-hub's
`compute_word_piece_vocabulary` wraps the same learner but fixes its minimum token count at 10,
too high for a small corpus); this module feeds it the corpus's sentences as the pipeline reads
them and writes the file atomically, with the five special tokens first.
"""

import contextlib
import logging
import os
import tempfile

import tensorflow as tf

from bert_tf import files
from bert_tf.console import counted
from bert_tf.data import corpus_sample
from bert_tf.data.normalization import BertNormalizer
from bert_tf.data.tokenization import REQUIRED_TOKENS, Vocabulary

log = logging.getLogger("bert_tf")


# The learner reads at most this much of the corpus, in pieces spread evenly over it. 64 MiB
# is about 10 million words: in English text the 30,000th most frequent word occurs about once
# in 300,000 words (Zipf), so every word a 30,000-token vocabulary keeps whole is seen dozens
# of times, and rarer words only feed the counts of their pieces, which converge sooner. Peak
# memory (the learner's word counts) and time stay those of the sample whatever the corpus.
SAMPLE_BYTES = 64 << 20


def learned_tokens(file_patterns, *, vocab_size: int = 8000, lower_case: bool = True,
                   input_format: str = "sentence_per_line", min_token_count: int = 2,
                   data_dir: str = "data") -> list[str]:
  """The tokens of a vocabulary of at most `vocab_size` learned from the corpus, the special
  tokens first.

  Tokens seen fewer than `min_token_count` times are left out. Learns from a sample of at
  most SAMPLE_BYTES of the corpus (all of it when smaller), streamed.
  """
  from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

  ranges, file_count = corpus_sample.sample_ranges(file_patterns, SAMPLE_BYTES, data_dir)
  log.info("Learning a %d-token WordPiece vocabulary from %.1f MB of %s",
           vocab_size, sum(r.length for r in ranges) / 1e6, counted(file_count, "file"))
  # The learner sees the text as the tokenizer normalises it (its own lower-casing folds NFKC).
  return bert_vocab_from_dataset.bert_vocab_from_dataset(
      corpus_sample.sentences(ranges, input_format).map(BertNormalizer(lower_case).normalize),
      vocab_size, list(REQUIRED_TOKENS), bert_tokenizer_params={"lower_case": False},
      learn_params={"lower_thresh": min_token_count})


def learning_settings(config) -> dict:
  """`learned_tokens`' keywords from a command's settings (a `VocabularyConfig` or a
  `TrainConfig`: the corpus's format and case, the size asked, where the built-in corpus is)."""
  return dict(vocab_size=config.vocab_size, lower_case=config.do_lower_case,
              input_format=config.input_format, min_token_count=config.min_token_count,
              data_dir=config.data_dir)


@contextlib.contextmanager
def learned_in_passing(file_patterns, **learning):
  """A vocabulary learned from the corpus (`learned_tokens`, `learning` its keywords) for the
  block's length, in a temporary file removed when the block ends: for a command that reads
  one without keeping it (`bert_tf.vocab --report`, the audit of a run whose vocabulary is still
  to be learned)."""
  tokens = learned_tokens(file_patterns, **learning)
  with tempfile.TemporaryDirectory() as directory:
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
      f.write("".join(token + "\n" for token in tokens))
    yield Vocabulary(path)


def build_vocabulary(file_patterns, vocab_file: str, **learning) -> Vocabulary:
  """Learns a vocabulary from the corpus (`learned_tokens`, whose keywords `learning` are:
  vocab_size, lower_case, input_format, min_token_count, data_dir); writes `vocab_file`."""
  tokens = learned_tokens(file_patterns, **learning)
  directory = os.path.dirname(vocab_file)
  if directory:
    tf.io.gfile.makedirs(directory)
  files.write_text(vocab_file, "".join(token + "\n" for token in tokens))
  log.info("Wrote %d tokens to %s", len(tokens), vocab_file)
  return Vocabulary(vocab_file)

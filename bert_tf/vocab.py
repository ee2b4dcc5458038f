"""Builds a WordPiece vocabulary from a corpus: `python -m bert_tf.vocab` (the learning itself:
`bert_tf.data.vocabulary_learner`); with `--report`, says how well an existing vocabulary fits
the corpus beside one of the same size learned from it (`bert_tf.data.vocabulary_fit`). The
corpus is checked first as train.py checks it: a missing, empty, compressed or binary file is
one line and exit status 2, and nothing is written."""

import dataclasses
import json
import sys

from bert_tf import console

if __name__ == "__main__":  # as a command: before TensorFlow loads, its start-up lines go
  console.start(sys.argv)
from bert_tf.data import corpus, vocabulary_fit  # noqa: E402
from bert_tf.data import vocabulary_learner as learner  # noqa: E402
from bert_tf.data.data_settings import VocabularyConfig  # noqa: E402
from bert_tf.data.tokenization import Vocabulary  # noqa: E402
from bert_tf.settings import setting  # noqa: E402

LEARNED = "learned from the corpus"


@dataclasses.dataclass(frozen=True)
class VocabCommandConfig(VocabularyConfig):
  """What `python -m bert_tf.vocab` does: learn --vocab_file, or report on it."""

  report: bool = setting(
      False, "Do not learn: report how well the existing --vocab_file fits a sample of the "
      "corpus (WordPieces per word, words cut into 2 and 3+ pieces, [UNK] words, the most "
      "frequent words cut), beside a vocabulary of its size learned from the corpus.")
  json: bool = setting(False, "With --report: print the figures as one JSON object.")


def check_corpus(config: VocabularyConfig) -> None:
  """The corpus checked as train.py checks it, before anything is read or written: files
  that exist, are not compressed or binary, and hold text."""
  corpus.check_documents(corpus.list_files(config.input_files, config.data_dir),
                         config.input_format, needed=1)


def build(config: VocabularyConfig) -> None:
  """Learns --vocab_file; the learner says what it read and what it wrote."""
  learner.build_vocabulary(config.input_files, config.vocab_file,
                           **learner.learning_settings(config))


def report(config: VocabularyConfig) -> dict:
  """The fit of --vocab_file and of a vocabulary of its size learned from the corpus."""
  vocabulary = Vocabulary(config.vocab_file)
  sentences, sample = vocabulary_fit.sample_sentences(config.input_files, config.input_format,
                                                      config.data_dir)
  with learner.learned_in_passing(config.input_files, **{
      **learner.learning_settings(config), "vocab_size": len(vocabulary)}) as learned:
    columns = {name: vocabulary_fit.figures(
                   vocabulary_fit.count_words(sentences, v, config.do_lower_case), v,
                   config.do_lower_case)
               for name, v in ((config.vocab_file, vocabulary), (LEARNED, learned))}
  columns[LEARNED]["vocab_file"] = None  # a temporary file, gone
  return {"input_files": config.input_files, "sample": sample, "vocabularies": columns}


def main(config: VocabCommandConfig) -> None:
  if config.report:
    Vocabulary(config.vocab_file)  # one line when it is not there or not a vocabulary
  check_corpus(config)
  if not config.report:
    build(config)
    return
  result = report(config)
  if config.json:
    print(json.dumps(result))
    return
  sample = result["sample"]
  print(f"Vocabulary fit on {sample['bytes'] / 1e6:.1f} MB of "
        f"{console.counted(sample['files'], 'file')} of {config.input_files}:")
  print(vocabulary_fit.table(list(result["vocabularies"].items())))


if __name__ == "__main__":
  console.run_command(VocabCommandConfig, main)

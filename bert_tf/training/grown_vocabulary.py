"""The run's vocabulary under `--add_vocabulary=N`: the --init_checkpoint's vocabulary grown
with the N most frequent words of the corpus that it cuts into pieces
(`data/vocabulary_growth.py`), once, at the run's start, and written as the model_dir's
vocab.txt, the run's vocabulary from then on (the pipeline, the checkpoints' record, the
exports, fine-tuning). A re-run that resumes takes the vocabulary its checkpoint recorded and
does not grow it again. Says how many tokens went where, and the fit of the vocabulary to
the corpus before and after (`data/vocabulary_fit.py`)."""

import logging
import os

from bert_tf import files
from bert_tf.data import vocabulary_fit, vocabulary_growth
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.model_dir import VOCAB_FILE, has_checkpoint
from bert_tf.training import run_changes
from bert_tf.training.train_settings import TrainConfig

log = logging.getLogger("bert_tf")


def run_vocabulary(config: TrainConfig, vocabulary: Vocabulary) -> Vocabulary:
  """`vocabulary` (--vocab_file), grown as --add_vocabulary asks."""
  if not config.add_vocabulary:
    return vocabulary
  path = os.path.join(config.model_dir, VOCAB_FILE)
  if has_checkpoint(config.model_dir):
    return _already_grown(config, path)
  sentences, _ = vocabulary_fit.sample_sentences(config.input_files, config.input_format,
                                                 config.data_dir)
  before = vocabulary_fit.count_words(sentences, vocabulary, config.do_lower_case)
  words = before.cut_words(config.add_vocabulary, config.min_token_count)
  tokens, into_unused = vocabulary_growth.grown_tokens(vocabulary.tokens, words)
  files.write_text(path, "".join(token + "\n" for token in tokens))
  grown = Vocabulary(path)
  short = (f"; the corpus sample has only {len(words)} words cut into pieces and seen "
           f"{config.min_token_count}+ times" if len(words) < config.add_vocabulary else "")
  log.info("Vocabulary grown by %d words: %d into [unusedK] slots, %d appended (%d -> %d "
           "tokens, %s)%s", len(words), into_unused, len(words) - into_unused, len(vocabulary),
           len(grown), path, short)
  after = vocabulary_fit.count_words(sentences, grown, config.do_lower_case)
  log.info("The vocabulary's fit to the corpus, before and after:\n%s", vocabulary_fit.table([
      ("before", vocabulary_fit.figures(before, vocabulary, config.do_lower_case, 10)),
      ("grown", vocabulary_fit.figures(after, grown, config.do_lower_case, 10))]))
  return grown


def _already_grown(config: TrainConfig, path: str) -> Vocabulary:
  """The vocabulary the model_dir's checkpoints were trained with, when they grew it as
  --add_vocabulary asks; else a one-line UserError: a vocabulary grows once."""
  recorded = run_changes.last_run(config.model_dir)
  grew = (recorded.get("train_config") or {}).get("add_vocabulary", 0)
  if grew != config.add_vocabulary or not recorded.get("tokens"):
    trained = (f"a vocabulary grown by --add_vocabulary={grew}" if grew
               else "the vocabulary it started with")
    raise UserError(f"--add_vocabulary={config.add_vocabulary}: {config.model_dir} has "
                    f"checkpoints of a model of {trained}; a vocabulary grows once, at a "
                    f"run's start, not twice: resume with --add_vocabulary={grew}, or grow in "
                    f"a new --model_dir with --init_checkpoint={config.model_dir}")
  if not os.path.exists(path) or Vocabulary(path).tokens != recorded["tokens"]:
    files.write_text(path, "".join(token + "\n" for token in recorded["tokens"]))
  log.info("%s grew its vocabulary at its start (%d tokens): resuming with it, not grown again",
           config.model_dir, len(recorded["tokens"]))
  return Vocabulary(path)

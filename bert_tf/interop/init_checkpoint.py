"""What `--init_checkpoint` points at, checked whole before a run writes anything: a source
(`bert_tf.interop.source`) whose files are there, whose shape can be read and is the run's
(the shape comes from the model: `--config` is for a model from scratch, and one that says
another shape is an error naming both), whose vocabulary is the run's, trained on text in the
case the run gives it."""

import logging

import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.interop.source import Source, open_source
from bert_tf.model.bert_config import BertConfig

log = logging.getLogger("bert_tf")


def goes_on(source: Source, weights_only: bool) -> bool:
  """Whether a run starting from `source` goes on from its checkpoint (a bert_tf run:
  weights, optimizer and step) rather than taking its weights alone."""
  return source.has_checkpoint and not weights_only


def initial_model(path: str, weights_only: bool) -> Source | None:
  """The source at `path` (None without one), its files and shape checked; its final
  weights too when the run takes them alone (`weights_only`, or a source that is not a run
  going on). Nothing is loaded."""
  if not path:
    return None
  source = open_source(path)
  if goes_on(source, weights_only):
    _ = source.config  # the checkpoint itself is read when the run restores it
  else:
    source.check_loadable()
  return source


def check(source: Source, config: BertConfig, given: str, vocabulary: Vocabulary) -> None:
  """Raises a one-line UserError unless `config` (the shape `--config` `given` makes, or the
  source's own when `given` is empty) is the source's and `vocabulary` (--vocab_file) is of
  its size."""
  theirs = source.config
  if given:
    source.check_config(config.replace(vocab_size=theirs.vocab_size), f"--config {given}",
                        "leave --config out to take the model's own shape")
  if len(vocabulary) != theirs.vocab_size:
    raise UserError(f"--vocab_file {vocabulary.path} has {len(vocabulary)} tokens, but the "
                    f"model of {source.flag} {source.path} has vocab_size {theirs.vocab_size}: "
                    "give the vocabulary it was trained with"
                    + (f" ({source.vocabulary_file()})" if _exists(source) else ""))


def missing_vocabulary(source: Source, vocab_file: str) -> UserError:
  """The error for a --vocab_file that does not exist in a run from `source`: a vocabulary
  is learned only for a model from scratch."""
  own = f" ({source.vocabulary_file()})" if _exists(source) else ""
  return UserError(f"--vocab_file {vocab_file} does not exist: a run from {source.flag} "
                   f"{source.path} reads the vocabulary its model was trained with{own}, it "
                   "does not learn one")


def _exists(source: Source) -> bool:
  """Whether the source has its own vocabulary file, to name in a message."""
  try:
    return tf.io.gfile.exists(source.vocabulary_file())
  except UserError:  # a run directory without one
    return False


def check_case(source: Source | None, do_lower_case: bool) -> None:
  """Warns when the run would lower-case the text for a checkpoint trained on cased text, or
  the other way round: its vocabulary's tokens would be looked up in the wrong case."""
  if source is None or source.lower_case == do_lower_case:
    return
  trained, flag = ("cased", "--nodo_lower_case") if do_lower_case else (
      "lower-cased", "--do_lower_case")
  log.warning("%s %s was trained on %s text, but this run %s it: give %s to match it",
              source.flag, source.path, trained,
              "lower-cases" if do_lower_case else "keeps the case of", flag)

"""What `--init_checkpoint` points at, checked before the model is built: a source
(`bert_tf.interop.source`) of the model `--config` makes, trained on text in the case the run
gives it."""

import logging

from bert_tf.errors import UserError
from bert_tf.interop.source import open_source
from bert_tf.model.bert_config import BertConfig

log = logging.getLogger("bert_tf")


def check(path: str, config: BertConfig, vocab_file: str = "") -> None:
  """Raises a one-line UserError unless `path` is empty or a source of a model of `config`.
  A model that differs in its vocabulary's size alone blames `vocab_file` (a preset
  --config takes its vocab_size from the vocabulary, so --config is not at fault)."""
  if not path:
    return
  source = open_source(path)
  try:
    theirs = source.config
  except UserError:
    theirs = None  # a source that cannot say: its own check_config decides
  if (vocab_file and theirs and theirs.vocab_size != config.vocab_size
      and not theirs.replace(vocab_size=config.vocab_size).differences(config)):
    raise UserError(f"--vocab_file {vocab_file} has {config.vocab_size} tokens, but the model "
                    f"of --init_checkpoint {path} has vocab_size {theirs.vocab_size}: give the "
                    "vocabulary it was trained with")
  source.check_config(config)


def check_case(path: str, do_lower_case: bool) -> None:
  """Warns when the run would lower-case the text for a checkpoint trained on cased text, or
  the other way round: its vocabulary's tokens would be looked up in the wrong case."""
  if not path or open_source(path).lower_case == do_lower_case:
    return
  trained, flag = ("cased", "--nodo_lower_case") if do_lower_case else (
      "lower-cased", "--do_lower_case")
  log.warning("--init_checkpoint %s was trained on %s text, but this run %s it: give %s to "
              "match it", path, trained, "lower-cases" if do_lower_case else "keeps the case of",
              flag)

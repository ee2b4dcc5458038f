"""Everything a run checks and builds before the model exists, in two steps.

`check_inputs` reads and checks every input and writes nothing: the settings, the corpus (or
the records, against the vocabulary), the held-out data and the probe's task, the initial
model (`--init_checkpoint`: its files, its shape, its vocabulary), the vocabulary and the
model's shape (`--config` for a model from scratch, else the initial model's own). Cheap
checks come first, so that a mistake costs seconds, and a refused run leaves every file as it
was. `prepare` then builds what the run writes: the vocabulary, learned from the corpus when
`--vocab_file` does not exist (a model from scratch only), and grown by `--add_vocabulary`."""

import dataclasses
import logging

import tensorflow as tf

from bert_tf.data import builtin_corpus, corpus, record_checks
from bert_tf.data.data_settings import RECORDS
from bert_tf.data.tokenization import Vocabulary
from bert_tf.data.vocabulary_learner import build_vocabulary, learning_settings
from bert_tf.errors import UserError
from bert_tf.interop import init_checkpoint
from bert_tf.interop.source import Source
from bert_tf.model.bert_config import BertConfig, resolve_config
from bert_tf.model.model_settings import SCRATCH_CONFIG
from bert_tf.training import chief_vocabulary
from bert_tf.training.grown_vocabulary import run_vocabulary
from bert_tf.training.train_settings import TrainConfig
from bert_tf.training.watching import evaluation, probe

log = logging.getLogger("bert_tf")


@dataclasses.dataclass(frozen=True)
class CheckedInputs:
  """What `check_inputs` found: the settings (with the records' shape when the input is
  records), the initial model (None: from scratch) and the vocabulary (None: to be learned)."""

  config: TrainConfig
  source: Source | None
  vocabulary: Vocabulary | None


def model_shape(config: TrainConfig, vocabulary: Vocabulary | None,
                source: Source | None = None) -> BertConfig:
  """The model's shape: the --config preset or file, else the initial model's own, else
  `SCRATCH_CONFIG`; for `vocabulary` (None: one not learned yet, whose size is not known),
  with --dropout in place of its own. A --config that contradicts the initial model is an
  error naming both shapes."""
  size = None if vocabulary is None else len(vocabulary)
  if source is not None:
    bert_config = resolve_config(config.config, size) if config.config else source.config
    init_checkpoint.check(source, bert_config, config.config, vocabulary)
  else:
    bert_config = resolve_config(config.config or SCRATCH_CONFIG, size)
  if config.dropout is not None:
    bert_config = bert_config.replace(hidden_dropout_prob=config.dropout,
                                      attention_probs_dropout_prob=config.dropout)
  bert_config.check_seq_length(config.seq_length)
  return bert_config


def record_shaped(config: TrainConfig, vocabulary: Vocabulary) -> TrainConfig:
  """Checks the records (--input_files, and --eval_files) against each other and the
  vocabulary, and the --eval_fraction split of them; `config` with their seq_length and
  max_predictions_per_seq in place of the defaults (a value given otherwise is an error)."""
  listed = {name: corpus.list_files(patterns) for name, patterns in (
      ("input_files", config.input_files), ("eval_files", config.eval_files)) if patterns}
  checked = {name: record_checks.check_records(files, vocabulary, config.record_compression)
             for name, files in listed.items()}
  if config.eval_fraction:
    record_checks.check_split(listed["input_files"], config.record_compression,
                              config.eval_fraction)
  shape = checked["input_files"]
  if checked.get("eval_files", shape) != shape:
    held_out = checked["eval_files"]
    raise UserError(f"the --eval_files records hold {held_out.seq_length} tokens and "
                    f"{held_out.max_predictions_per_seq} predictions, the --input_files records "
                    f"{shape.seq_length} and {shape.max_predictions_per_seq}")
  fields = {field.name: field for field in dataclasses.fields(config)}
  found = {"seq_length": shape.seq_length,
           "max_predictions_per_seq": shape.max_predictions_per_seq}
  defaulted = {name: value for name, value in found.items()
               if getattr(config, name) == fields[name].default}
  config = dataclasses.replace(config, **defaulted)
  shape.check_settings(config.seq_length, config.max_predictions_per_seq)
  log.info("Records of %d tokens and %d predictions each", shape.seq_length,
           shape.max_predictions_per_seq)
  return config


def _check_text_corpus(config: TrainConfig) -> None:
  """A text corpus's files and its held-out part (records are checked by `record_shaped`)."""
  if config.input_format == RECORDS:
    return
  mixed = config.weights() is not None
  for number, files in enumerate(
      corpus.training_groups(config.input_files, mixed, config.data_dir), 1):
    with corpus.about_group(number if mixed else None, config.input_files):
      corpus.check_documents(files, config.input_format, needed=2 if config.nsp else 1)
  evaluation.check_held_out(config)


def _existing_vocabulary(config: TrainConfig, source: Source | None) -> Vocabulary | None:
  """--vocab_file, read; None when it is to be learned from a text corpus (a model from
  scratch). A run from an initial model, or on records, reads the vocabulary it was made with."""
  if tf.io.gfile.exists(config.vocab_file):
    return Vocabulary(config.vocab_file)
  if source is not None:
    raise init_checkpoint.missing_vocabulary(source, config.vocab_file)
  if config.input_format == RECORDS:
    raise UserError(f"--vocab_file {config.vocab_file} does not exist: records are read with "
                    "the vocabulary they were made with")
  return None


def check_inputs(config: TrainConfig) -> CheckedInputs:
  """Checks every input, cheap checks first; writes nothing (see the module's docstring). The
  initial model, the vocabulary and the shape come before a text corpus and the probe's task,
  whose built-in forms are written under --data_dir to be read: a run refused for them leaves
  no built-in corpus or task behind."""
  config.check()
  source = init_checkpoint.initial_model(config.init_checkpoint,
                                         config.init_weights_only or bool(config.add_vocabulary))
  vocabulary = _existing_vocabulary(config, source)
  if config.input_format == RECORDS:
    if config.input_files == builtin_corpus.NAME:
      raise UserError("--input_format=tfrecord reads --input_files as records: give them (the "
                      "built-in corpus is text)")
    config = record_shaped(config, vocabulary)
  model_shape(config, vocabulary, source)
  init_checkpoint.check_case(source, config.do_lower_case)
  _check_text_corpus(config)
  probe.check_probe(config)
  return CheckedInputs(config, source, vocabulary)


def learned_vocabulary(inputs: CheckedInputs) -> Vocabulary:
  """The checked vocabulary, or the one learned from the corpus and written as --vocab_file
  when it did not exist: by the chief alone in a cluster, the other workers waiting for its
  file (`chief_vocabulary`)."""
  if inputs.vocabulary is not None:
    return inputs.vocabulary
  config = inputs.config
  if not chief_vocabulary.learns_here():
    return chief_vocabulary.learned_by_the_chief(config.vocab_file)
  log.info("Vocabulary %s does not exist: building it from the corpus", config.vocab_file)
  return build_vocabulary(config.input_files, config.vocab_file, **learning_settings(config))


def prepare(inputs: CheckedInputs) -> tuple[TrainConfig, Vocabulary, BertConfig]:
  """Once the run holds its model_dir: the settings, the vocabulary (learned when it does not
  exist yet; grown by --add_vocabulary) and the model's shape."""
  config = inputs.config
  vocabulary = learned_vocabulary(inputs)
  bert_config = model_shape(config, vocabulary, inputs.source)
  vocabulary = run_vocabulary(config, vocabulary)
  return config, vocabulary, bert_config.replace(vocab_size=len(vocabulary))

"""Where a run's weights come from: the model_dir's own latest checkpoint (a re-run resumes
exactly), else --init_checkpoint (another bert_tf run going on, as phase 2 after phase 1; an
original BERT checkpoint; a Hugging Face directory), else the seeded random initialisation.

A run that goes on from another bert_tf run takes its optimizer and step too, and keeps its
schedule. One that starts from weights alone (a published checkpoint, or a run with
--init_weights_only or --add_vocabulary) starts a new schedule: step 0, a fresh optimizer,
its own warm-up; with a grown vocabulary, the new tokens' rows start as their pieces' mean
(`interop/grown_embeddings.py`)."""

import logging

import keras
import tensorflow as tf

from bert_tf.console import counted
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.interop import grown_embeddings, init_checkpoint
from bert_tf.interop.source import Source, open_source
from bert_tf.model.bert_config import BertConfig
from bert_tf.runtime import checkpointing
from bert_tf.training.train_settings import TrainConfig

log = logging.getLogger("bert_tf")


def restore_or_initialise(checkpointer: checkpointing.Checkpointer, model: keras.Model,
                          bert_config: BertConfig, vocabulary: Vocabulary, config: TrainConfig,
                          strategy: tf.distribute.Strategy) -> int:
  """Sets the weights (and, from a checkpoint, the optimizer and the data position); returns
  the model_dir's own checkpoint step, 0 when this run starts."""
  start_step = checkpointer.restore(strategy)
  if start_step:
    log.info("Resumed from the checkpoint at step %d of %d%s", start_step, config.train_steps,
             " (--train_steps reached: nothing to train)"
             if start_step >= config.train_steps else "")
  elif config.init_checkpoint:
    source = open_source(config.init_checkpoint)
    if init_checkpoint.goes_on(source, config.init_weights_only or bool(config.add_vocabulary)):
      _go_on_from(checkpointer, config)
    else:
      _start_from(source, model, bert_config, vocabulary, config)
  return start_step


def _start_from(source: Source, model: keras.Model, bert_config: BertConfig,
                vocabulary: Vocabulary, config: TrainConfig) -> None:
  """Takes the source's weights alone, into a model of the run's vocabulary."""
  log.info("Initialising from %s (%s): its weights; the optimizer and the learning-rate "
           "schedule start afresh (warm-up %s)", config.init_checkpoint, source.kind,
           counted(config.warmup_steps, "step"))
  base = Vocabulary(config.vocab_file)
  if vocabulary == base:
    source.load_weights(model, bert_config)
  else:
    grown_embeddings.load_grown(source, model, bert_config, base, vocabulary,
                                config.do_lower_case)


def _go_on_from(checkpointer: checkpointing.Checkpointer, config: TrainConfig) -> None:
  """Takes the weights, optimizer and step of the --init_checkpoint run's newest whole
  checkpoint."""
  step = checkpointer.continue_from(config.init_checkpoint)
  if step >= config.train_steps:
    raise UserError(f"--init_checkpoint {config.init_checkpoint} is at step {step}, "
                    f"--train_steps {config.train_steps}: nothing to train (the steps go on "
                    "from the run's: give --train_steps beyond its step)")
  log.info("Going on from %s at step %d of %d (weights, optimizer and schedule)",
           config.init_checkpoint, step, config.train_steps)

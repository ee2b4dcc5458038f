"""Where a run's weights come from: the model_dir's own latest checkpoint (a re-run resumes
exactly), else --init_checkpoint (another bert_tf run going on, as phase 2 after phase 1; an
original BERT checkpoint; a Hugging Face directory), else the seeded random initialisation."""

import logging

import keras
import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.interop.source import open_source
from bert_tf.model.bert_config import BertConfig
from bert_tf.runtime import checkpointing
from bert_tf.training.train_settings import TrainConfig

log = logging.getLogger("bert_tf")


def restore_or_initialise(checkpointer: checkpointing.Checkpointer, model: keras.Model,
                          bert_config: BertConfig, config: TrainConfig,
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
    if source.has_checkpoint:
      _go_on_from(checkpointer, config)
    else:
      log.info("Initialising from %s (%s)", config.init_checkpoint, source.kind)
      source.load_weights(model, bert_config)
  return start_step


def _go_on_from(checkpointer: checkpointing.Checkpointer, config: TrainConfig) -> None:
  """Takes the weights, optimizer and step of the --init_checkpoint run's latest checkpoint."""
  try:
    step = checkpointer.continue_from(config.init_checkpoint)
  except checkpointing.UnreadableCheckpoint as e:
    raise UserError(f"--init_checkpoint {config.init_checkpoint}: {e}") from None
  if step >= config.train_steps:
    raise UserError(f"--init_checkpoint {config.init_checkpoint} is at step {step}, "
                    f"--train_steps {config.train_steps}: nothing to train (the steps go on "
                    "from the run's: give --train_steps beyond its step)")
  log.info("Going on from %s at step %d of %d (weights, optimizer and schedule)",
           config.init_checkpoint, step, config.train_steps)

"""A fine-tune's checkpoints, in output_dir/checkpoints (`bert_tf/runtime/checkpointing.py`
writes and reads them): each holds the task model's weights, the optimizer, the dropout random
states, the run's position (`fitting.TrainedBatches`), its dev record (`dev_evaluation.
BestEpoch`) and its settings (`rerun.py`). The same command run again resumes from the latest;
once the output_dir is written they are removed (each is three times the model's size, and
a finished fine-tune has nothing to resume)."""

import logging
import os

import keras
import tensorflow as tf

from bert_tf.finetune.epochs import EpochPlan
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.fitting import TrainedBatches
from bert_tf.model_dir import CHECKPOINTS
from bert_tf.runtime.checkpointing import Checkpointer

log = logging.getLogger("bert_tf")

KEEP = 2  # the latest, and the one before it should the latest not be readable


def checkpointer(config: FinetuneConfig, model: keras.Model, record: dict,
                 **state) -> Checkpointer:
  """The checkpointer of the output_dir, saving `model`, its optimizer and `state`."""
  return Checkpointer(os.path.join(config.output_dir, CHECKPOINTS), model, model.optimizer,
                      keep=KEEP, record=record, flag="--output_dir", **state)


def resume(checkpoints: Checkpointer, strategy: tf.distribute.Strategy, plan: EpochPlan,
           position: TrainedBatches) -> None:
  """Restores the latest checkpoint, if any, and says where the run goes on; from then on
  each save records the position."""
  step = checkpoints.restore(strategy)
  position.restored()
  checkpoints.before_save.append(position.write)
  if not position.count:
    return
  epoch, batch = plan.position(position.count)
  log.info("Resumed from the checkpoint at step %d of %d: %s", step, plan.train_steps,
           f"epoch {epoch + 1} of {plan.epochs} from its batch {batch + 1} of "
           f"{plan.steps_per_epoch}" if epoch < plan.epochs else "training is done")


def remove(config: FinetuneConfig) -> None:
  """Removes the checkpoints, once the output_dir holds the run's result."""
  directory = os.path.join(config.output_dir, CHECKPOINTS)
  if tf.io.gfile.exists(directory):
    tf.io.gfile.rmtree(directory)

"""The training of a fine-tune, from where its output_dir's checkpoint left it to the last
epoch's end: an epoch at a time, each a `model.fit` over the rest of its batches in its order
(`epochs.py`), the dev figures after it (`dev_evaluation.py`). A checkpoint every
`--checkpoint_every` steps and at the end of training; SIGTERM or Ctrl-C save and stop, a
non-finite loss stops without saving (`bert_tf/runtime/stopping.py`).

An epoch's dev figures are taken when the run next stands at the epoch's end, whether it got
there by training or by resuming from a checkpoint saved before they were taken."""

import keras
import tensorflow as tf

from bert_tf.finetune.dev_evaluation import DevEvaluation
from bert_tf.finetune.epochs import EpochPlan
from bert_tf.finetune.kinds.base import TaskKind
from bert_tf.runtime import checkpointing, stopping


class TrainedBatches(keras.callbacks.Callback):
  """The run's position: the batches trained since it started, counted on the host and
  written into `variable`, which checkpoints carry, just before each save (`write`, a
  `before_save` of the checkpointer), not on every step."""

  def __init__(self):
    super().__init__()
    with tf.device("/cpu:0"):
      self.variable = tf.Variable(0, dtype=tf.int64, trainable=False)
    self.count = self.saved = 0  # batches trained, and at the latest save
    self._epoch_start = 0

  def restored(self) -> None:
    """Takes the count that a checkpoint's restore put in `variable`."""
    self.count = self.saved = int(self.variable.numpy())

  def write(self) -> None:
    self.variable.assign(self.count)
    self.saved = self.count

  def on_epoch_begin(self, epoch, logs=None):
    self._epoch_start = self.count

  def on_train_batch_end(self, batch, logs=None):
    self.count = self._epoch_start + batch + 1


def fit(model: keras.Model, kind: TaskKind, plan: EpochPlan, *, checkpoint_every: int,
        checkpointer: checkpointing.Checkpointer, position: TrainedBatches,
        evaluation: DevEvaluation, log_dir: str) -> None:
  """Trains and scores every epoch left; raises `checkpointing.TrainingStopped` when stopped
  by a signal or a non-finite loss."""
  policy = stopping.CheckpointEvery(checkpointer, checkpoint_every)  # a fit ends with its data
  tensorboard = keras.callbacks.TensorBoard(log_dir)
  training_loss = None
  while True:
    epoch, batch = plan.position(position.count)
    epoch = min(epoch, plan.epochs)
    if evaluation.scored < epoch:
      evaluation.evaluate(epoch, training_loss)
    if epoch == plan.epochs:
      return
    history = model.fit(kind.train_batches(plan.batch_size, plan.order(epoch, batch)),
                        initial_epoch=epoch, epochs=epoch + 1, verbose=0,
                        callbacks=[position, policy, tensorboard])
    if policy.stop_reason:
      raise checkpointing.TrainingStopped(policy.stop_reason)
    training_loss = history.history["loss"][-1]
    if epoch + 1 == plan.epochs and position.saved != position.count:
      checkpointer.save()  # the end of training, before its last dev figures

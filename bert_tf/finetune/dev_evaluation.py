"""The dev figures after each epoch, and the best epoch kept.

Each epoch's figures go to the console and TensorBoard's `dev` run; the best epoch by the
kind's ranking is kept, its figures and weights in variables (`BestEpoch`) that each checkpoint
carries, so that a resumed run knows how many epochs are scored and which was best, and ends
on that epoch's weights as an uninterrupted run does.
"""

import json
import logging
import os

import keras
import tensorflow as tf

from bert_tf.finetune.kinds.base import TaskKind

log = logging.getLogger("bert_tf")


class BestEpoch(tf.Module):
  """What a checkpoint keeps of the dev evaluations: the epochs scored, the best one's figures
  (JSON, with `best_epoch`; "" before any) and its weights, in host memory as before."""

  def __init__(self, weights: list):
    super().__init__(name="best_epoch")
    with tf.device("/cpu:0"):
      self.scored = tf.Variable(0, dtype=tf.int64, trainable=False)
      self.figures = tf.Variable("", dtype=tf.string, trainable=False)
      self.weights = [tf.Variable(tf.zeros(weight.shape, weight.dtype), trainable=False)
                      for weight in weights]


class DevEvaluation:
  """Scores `model` on the dev set of `kind` after each of `epochs` epochs (`evaluate`) and
  sets it to the best epoch's weights at the end (`restore_best`)."""

  def __init__(self, kind: TaskKind, model: keras.Model, log_dir: str, epochs: int):
    self.kind = kind
    self.model = model
    self.epochs = epochs
    self.writer = tf.summary.create_file_writer(os.path.join(log_dir, "dev"))
    self.best = BestEpoch(model.weights)
    self._outputs = (None, None)  # (epoch, its dev outputs) of the best epoch scored here

  @property
  def scored(self) -> int:
    """The epochs scored so far (by this run or the one it resumed)."""
    return int(self.best.scored.numpy())

  @property
  def best_figures(self) -> dict | None:
    text = self.best.figures.numpy().decode("utf-8")
    return json.loads(text) if text else None

  def evaluate(self, epochs_done: int, training_loss: float | None = None) -> None:
    """Scores the model after `epochs_done` epochs; keeps it if it is the best so far."""
    figures, outputs = self.kind.evaluate(self.model)
    with self.writer.as_default():
      for name, value in figures.items():
        if isinstance(value, float):
          tf.summary.scalar("epoch_" + name.removeprefix("dev_"), value, step=epochs_done - 1)
    self.writer.flush()
    log.info("epoch %d/%d: %s%s", epochs_done, self.epochs,
             "" if training_loss is None else f"training loss {training_loss:.4f}, ",
             self.kind.summary(figures))
    best = self.best_figures
    if best is None or self.kind.rank(figures) > self.kind.rank(best):
      self.best.figures.assign(json.dumps({**figures, "best_epoch": epochs_done}))
      for kept, weight in zip(self.best.weights, self.model.weights):
        kept.assign(weight.value)
      self._outputs = (epochs_done, outputs)
    self.best.scored.assign(epochs_done)

  def restore_best(self) -> tuple[dict, object]:
    """Sets the model to the best epoch's weights; returns that epoch's figures and dev
    outputs (answer's predictions), scored again when the epoch was a resumed run's."""
    for weight, kept in zip(self.model.weights, self.best.weights):
      weight.assign(kept)
    figures = self.best_figures
    epoch, outputs = self._outputs
    if epoch != figures["best_epoch"]:
      outputs = self.kind.evaluate(self.model)[1]
    return figures, outputs

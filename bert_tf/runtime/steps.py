"""`StepCounter`: the optimizer step on the host, for the callbacks that act at given steps
(checkpoints, windows of training scalars, the progress line) without reading a variable back
from the device on each step (a read waits for the step, so the host cannot queue the next).
"""

import keras


class StepCounter(keras.callbacks.Callback):
  """Knows the optimizer step after each call, counted in updates on the host: read once when
  `fit` begins, then advanced by the batch index Keras passes (with `steps_per_execution=N`,
  Keras calls once per N updates with the index of the last)."""

  def __init__(self):
    super().__init__()
    self.step = 0
    self._epoch_start = 0

  def on_train_begin(self, logs=None):
    self.step = int(self.model.optimizer.iterations.numpy())

  def on_epoch_begin(self, epoch, logs=None):
    self._epoch_start = self.step

  def on_train_batch_end(self, batch, logs=None):
    self.step = self._epoch_start + batch + 1

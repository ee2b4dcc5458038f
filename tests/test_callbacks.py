"""Throughput counts optimizer updates, also when Keras runs several per callback call."""

import keras
import numpy as np
import pytest

from bert_tf.training.callbacks import Throughput


@pytest.mark.parametrize("steps_per_execution", [1, 5])
def test_throughput_counts_updates(steps_per_execution):
  model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
  model.compile(optimizer="sgd", loss="mse", steps_per_execution=steps_per_execution)
  throughput = Throughput(global_batch_size=4, seq_length=8, skip_steps=10)
  x, y = np.ones((120, 3), "float32"), np.ones((120, 1), "float32")
  history = model.fit(x, y, batch_size=4, epochs=1, callbacks=[throughput], verbose=0)
  assert throughput._timed_steps == 20  # 30 updates, the first 10 left out
  assert history.history["examples_per_second"][0] > 0
  assert history.history["tokens_per_second"][0] == pytest.approx(
      8 * history.history["examples_per_second"][0])

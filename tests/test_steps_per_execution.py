"""`--steps_per_execution`: N updates per call into TensorFlow give the same weights and logs as N
calls of one update, on one device and over two replicas (MirroredStrategy on two logical
CPUs, where Keras 3.15's own multi-step loop fails).

Runs in a subprocess, because logical devices must be set before TensorFlow starts. Plain SGD
over 8 different batches, each strategy against its own run of one update per call. Tolerance:
1e-5 of the largest change of a weight (the same float32 operations, in the same order).
"""

import pytest

from helpers import TWO_CPUS_TINY_BERT, run_script

pytestmark = pytest.mark.e2e

SCRIPT = TWO_CPUS_TINY_BERT + r"""
BATCH, SEQ, SLOTS, STEPS = 8, 16, 6, 8
rng = np.random.default_rng(3)
weights = (rng.random((STEPS, BATCH, SLOTS)) < 0.6).astype("float32")
weights[:, :, 0] = 1
features = {
    "token_ids": rng.integers(5, 60, (STEPS, BATCH, SEQ)).astype("int32"),
    "segment_ids": np.broadcast_to((np.arange(SEQ) >= 8).astype("int32"),
                                   (STEPS, BATCH, SEQ)).copy(),
    "padding_mask": np.ones((STEPS, BATCH, SEQ), "int32"),
    "masked_positions": np.broadcast_to(np.arange(1, SLOTS + 1, dtype="int32"),
                                        (STEPS, BATCH, SLOTS)).copy()}
labels = {"mlm": (rng.integers(5, 60, (STEPS, BATCH, SLOTS)) * (weights > 0)).astype("int32"),
          "nsp": rng.integers(0, 2, (STEPS, BATCH)).astype("int32")}
sample_weights = {"mlm": weights, "nsp": np.ones((STEPS, BATCH), "float32")}
# Repeated, as the training stream is: each execution takes its N batches in order.
data = tf.data.Dataset.from_tensor_slices((features, labels, sample_weights)).repeat()
keras.utils.set_random_seed(0)
initial = pretraining_model(CONFIG).get_weights()

class Steps(keras.callbacks.Callback):
  def __init__(self):
    super().__init__()
    self.calls = []
  def on_train_batch_end(self, batch, logs=None):
    self.calls.append(batch)

def train(strategy, steps_per_execution):
  with strategy.scope():
    model = pretraining_model(CONFIG)
    model.set_weights(initial)
    compile_for_pretraining(model, keras.optimizers.SGD(learning_rate=0.1),
                            steps_per_execution=steps_per_execution)
  steps = Steps()
  logs = model.fit(data, epochs=1, steps_per_epoch=STEPS, verbose=0, callbacks=[steps]).history
  return (model.get_weights(), {name: values[0] for name, values in logs.items()},
          int(model.optimizer.iterations.numpy()), steps.calls)

results = {}
mirrored = tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"])
for name, strategy in (("one_device", tf.distribute.get_strategy()), ("mirrored", mirrored)):
  reference, reference_logs, _, _ = train(strategy, 1)
  scale = max(np.abs(w - w0).max() for w, w0 in zip(reference, initial))
  found, logs, iterations, calls = train(strategy, 4)
  results[name] = {
      "scale": float(scale),
      "update": float(max(np.abs(f - r).max() for f, r in zip(found, reference)) / scale),
      "logs": float(max(abs(logs[k] - reference_logs[k]) for k in reference_logs)),
      "iterations": iterations, "calls": calls}
print(json.dumps(results))
"""


def test_four_steps_per_execution_equal_four_executions():
  results = run_script(SCRIPT)
  for name in ("one_device", "mirrored"):
    found = results[name]
    assert found["scale"] > 1e-3, (name, found)  # the updates are not trivially zero
    assert found["iterations"] == 8, (name, found)
    assert found["calls"] == [3, 7], (name, found)  # callbacks see each 4th update
    assert found["update"] < 1e-5, (name, found)
    assert found["logs"] < 1e-4, (name, found)  # losses and accuracies over all 8 updates

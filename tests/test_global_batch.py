"""One optimizer update is the same however the global batch is split: on one device, over two
replicas (MirroredStrategy on two logical CPUs), into accumulated parts, or both.

Runs in a subprocess, because logical devices must be set before TensorFlow starts. The batch
has a different number of masked tokens in every example, so a per-replica or per-part mean
(instead of the global one) would show. Plain SGD with learning rate 1 makes the update the
gradient itself (Adam's first step hides the scale); a clipped SGD with our clipping shows that
the clipped norm is the global gradient's; AdamW (clipping at the same norm) runs three real
steps. The gradient's norm is several times the clipping norm, and the clipped update is the
gradient scaled down to that norm: clipping is active in every case it is compared in.

Tolerance: 1e-5 of the largest update (float32 sums in another order); 1e-4 with AdamW, which
divides each element by its own gradient's magnitude and so magnifies that noise where a
gradient is near zero.
"""

import pytest

from helpers import TWO_CPUS_TINY_BERT, run_script

pytestmark = pytest.mark.e2e

SCRIPT = TWO_CPUS_TINY_BERT + r"""
from bert_tf.model import keras_internals
from bert_tf.runtime import optimization
from helpers import masked_slots

BATCH, SEQ, SLOTS = 8, 16, 6
rng = np.random.default_rng(3)
masked = [6, 1, 2, 5, 1, 1, 3, 6]  # replica 0 draws 14 masked tokens, replica 1 draws 11
positions, weights = masked_slots(rng, masked, SEQ, SLOTS)
features = {"token_ids": rng.integers(5, 60, (BATCH, SEQ)).astype("int32"),
            "segment_ids": (np.arange(SEQ) >= 8).astype("int32")[None].repeat(BATCH, 0),
            "padding_mask": np.ones((BATCH, SEQ), "int32"),
            "masked_positions": positions}
labels = {"mlm": (rng.integers(5, 60, (BATCH, SLOTS)) * (weights > 0)).astype("int32"),
          "nsp": rng.integers(0, 2, BATCH).astype("int32")}
sample_weights = {"mlm": weights, "nsp": np.ones(BATCH, "float32")}
data = tf.data.Dataset.from_tensors((features, labels, sample_weights)).repeat()
keras.utils.set_random_seed(0)
initial = pretraining_model(CONFIG).get_weights()

class ClippedSGD(keras_internals.ClipsSummedGradients, keras.optimizers.SGD):
  pass

CLIP_NORM = 0.05
OPTIMIZERS = {
    "sgd": lambda: keras.optimizers.SGD(learning_rate=1.0),
    "clipped_sgd": lambda: ClippedSGD(learning_rate=1.0, clip_norm=CLIP_NORM),
    "adamw": lambda: optimization.create_optimizer(learning_rate=1e-3, warmup_steps=0,
                                                   train_steps=10, clip_norm=CLIP_NORM),
}

def norm(deltas):
  return float(np.sqrt(sum(np.square(d).sum() for d in deltas)))

def update(optimizer, strategy, parts, steps):
  with strategy.scope():
    model = pretraining_model(CONFIG)
    model.set_weights(initial)
    compile_for_pretraining(model, OPTIMIZERS[optimizer](), gradient_accumulation_steps=parts)
  logs = model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0).history
  return ([w - w0 for w, w0 in zip(model.get_weights(), initial)],
          {name: values[0] for name, values in logs.items()})

results = {"clip_norm": CLIP_NORM}
references = {}
for optimizer, steps in (("sgd", 1), ("clipped_sgd", 1), ("adamw", 3)):
  reference, reference_logs = update(optimizer, tf.distribute.get_strategy(), 1, steps)
  references[optimizer] = reference
  scale = max(np.abs(d).max() for d in reference)
  for name, strategy, parts in (
      ("two_replicas", tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"]), 1),
      ("accumulated", tf.distribute.get_strategy(), 2),
      ("accumulated_four", tf.distribute.get_strategy(), 4),
      ("both", tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"]), 2)):
    if optimizer == "clipped_sgd" and name in ("accumulated_four", "both"):
      continue
    deltas, logs = update(optimizer, strategy, parts, steps)
    results[f"{optimizer}/{name}"] = {
        "update": float(max(np.abs(d - r).max() for d, r in zip(deltas, reference)) / scale),
        "logs": float(max(abs(logs[k] - reference_logs[k]) for k in reference_logs
                          if "loss" in k or "accuracy" in k))}
  results[f"{optimizer}/scale"] = float(scale)
# SGD at learning rate 1: the update is minus the (clipped) gradient.
results["gradient_norm"] = norm(references["sgd"])
results["clipped_norm"] = norm(references["clipped_sgd"])
results["clipped_cosine"] = float(
    sum((a * b).sum() for a, b in zip(references["sgd"], references["clipped_sgd"]))
    / (results["gradient_norm"] * results["clipped_norm"]))
print(json.dumps(results))
"""


def test_one_update_is_the_same_however_the_batch_is_split():
  results = run_script(SCRIPT)
  assert results["sgd/scale"] > 1e-3  # the update is not trivially zero
  # Clipping is active: the gradient is well above the norm, the clipped update is on it and
  # points the same way.
  clip_norm = results.pop("clip_norm")
  assert results.pop("gradient_norm") > 3 * clip_norm
  assert abs(results.pop("clipped_norm") - clip_norm) < 1e-5 * clip_norm
  assert results.pop("clipped_cosine") > 1 - 1e-5
  assert {"adamw/accumulated_four", "adamw/both"} <= set(results)
  for name, found in results.items():
    if not name.endswith("/scale"):
      assert found["update"] < (1e-4 if name.startswith("adamw") else 1e-5), (name, found)
      assert found["logs"] < 1e-4, (name, found)  # losses and accuracies

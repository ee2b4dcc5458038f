"""The one place bert_tf reaches into Keras's internals, and the Keras releases it was tested on.

Everything else uses Keras's public API: the training step overrides `train_step` and
`test_step`, builds its own multi-step function through `make_train_function`, and uses
`compute_loss`, `compute_metrics`, `get_metrics_result` and `Model.metrics`. The model still
needs one internal, and the optimizers two more:

- `Model._maybe_symbolic_build`, which `fit` and `evaluate` call before their first step. Under
  a tf.distribute strategy Keras 3.15 takes a batch from the input there and averages it across
  replicas, to build the compiled losses and metrics from its shapes. Under
  MultiWorkerMirroredStrategy that average fails ("Attempt to convert a value (PerReplica ...)
  to a Tensor"), and everywhere it would feed the batch's stream positions to the model as if
  they were an input. `BuiltBeforeFit` replaces it by nothing: the model builds its losses and
  metrics itself, with public calls, when it is compiled (`pretraining.compile_for_pretraining`).
- `Optimizer._all_reduce_sum_gradients` and `_clip_gradients`: Keras clips each replica's
  gradient before the replicas' gradients are summed, so under two replicas a global-norm clip
  clips two half-gradients, another update than on one device. `ClipsSummedGradients` clips
  the summed gradient instead, at the one point where Keras has it: after its all-reduce.
- `Optimizer._get_variable_index`, `_momentums`, `_velocities`, `_use_weight_decay`: LAMB with
  the paper's decay inside the trust ratio (`runtime/optimization.py`) reuses Keras's Adam
  slots and its weight-decay exclusions, which Keras exposes to its own subclasses only
  (`adam_slots`, `is_decayed`).

Why each internal is needed, and how the rest of the step works: docs/design.md#the-training-step.
Importing this module checks the installed Keras against `TESTED_KERAS`, so that a newer Keras,
whose internals may differ, fails here in one line rather than deep inside `fit`.
"""

import keras
import tensorflow as tf

TESTED_KERAS = ("3.15",)  # the minor releases the suite ran on; setup.py pins the same


def check_keras_version(version: str = keras.__version__) -> None:
  """Exits with one line when `version` is not a tested minor release."""
  if ".".join(version.split(".")[:2]) not in TESTED_KERAS:
    tested = ", ".join(f"{minor}.x" for minor in TESTED_KERAS)
    raise SystemExit(f"error: bert_tf's training step was tested on Keras {tested}, not Keras "
                     f"{version}: pip install 'keras~={TESTED_KERAS[-1]}.0'")


check_keras_version()


class BuiltBeforeFit(keras.Model):
  """A model whose compiled losses and metrics are built when it is compiled, so that `fit`
  and `evaluate` need not build them from a batch of the input (see the module docstring)."""

  def _maybe_symbolic_build(self, iterator=None, data_batch=None):
    """Nothing to build: the model, its losses and its metrics already are."""


class ClipsSummedGradients:
  """An optimizer mixin: global-norm clipping of the gradient summed over replicas."""

  def __init__(self, *args, clip_norm: float = 1.0, **kwargs):
    super().__init__(*args, **kwargs)
    self.clip_norm = clip_norm

  def _clip_gradients(self, grads):
    return grads  # per replica: too early; done once the replicas' gradients are summed

  def _all_reduce_sum_gradients(self, grads_and_vars):
    grads_and_vars = super()._all_reduce_sum_gradients(grads_and_vars)
    if not self.clip_norm:
      return grads_and_vars
    grads, variables = zip(*grads_and_vars)
    present = [g for g in grads if g is not None]
    clipped = iter(tf.clip_by_global_norm(present, self.clip_norm)[0])
    return [(None if g is None else next(clipped), v) for g, v in zip(grads, variables)]

  def get_config(self):
    return {**super().get_config(), "clip_norm": self.clip_norm}


def adam_slots(optimizer: keras.optimizers.Optimizer, variable) -> tuple:
  """The first and second moment slots of `variable` in an Adam-family Keras optimizer."""
  index = optimizer._get_variable_index(variable)
  return optimizer._momentums[index], optimizer._velocities[index]


def is_decayed(optimizer: keras.optimizers.Optimizer, variable) -> bool:
  """Whether `variable` is decayed, after `exclude_from_weight_decay`."""
  return optimizer._use_weight_decay(variable)

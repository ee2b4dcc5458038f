"""`--mixed_precision`: the Keras dtype policy the model is built under.

Layers compute in bf16 or fp16 and keep float32 weights; the heads are float32 (see
`pretraining.py`), so logits and losses are too. Under fp16, `compile` wraps the optimizer in
Keras's `LossScaleOptimizer` (dynamic loss scaling), whose scale is checkpointed with it.
"""

import contextlib

import keras

from bert_tf.errors import UserError
from bert_tf.runtime.runtime_settings import PRECISIONS

POLICIES = dict(zip(PRECISIONS, ("float32", "mixed_bfloat16", "mixed_float16")))


@contextlib.contextmanager
def policy(name: str):
  """Builds models under the named policy; restores the previous one after."""
  if name not in POLICIES:
    raise UserError(f"unknown mixed_precision {name!r}: use one of {', '.join(POLICIES)}")
  previous = keras.config.dtype_policy()
  keras.config.set_dtype_policy(POLICIES[name])
  try:
    yield
  finally:
    keras.config.set_dtype_policy(previous)

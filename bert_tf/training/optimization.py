"""Optimiser and learning-rate schedule with original BERT's defaults (SPEC §8)."""

import keras

from bert_tf.errors import UserError

# Layer-norm scales and offsets (`gamma`, `beta`) and every bias (`bias`, the MLM head's
# `output_bias`) are not decayed. Keras matches these patterns against the short variable
# name, so the classic list ["LayerNorm", "layer_norm", "bias"] would miss the layer norms.
NO_DECAY_PATTERNS = ["gamma", "beta", "bias"]


@keras.saving.register_keras_serializable(package="bert_tf")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
  """Linear warm-up from 0 to `peak` over `warmup_steps`, then linear decay to 0 at
  `train_steps`. Keras has warm-up only with cosine decay, and BERT decays linearly."""

  def __init__(self, peak: float, warmup_steps: int, train_steps: int):
    self.peak = peak
    self.warmup_steps = warmup_steps
    self.train_steps = train_steps

  def __call__(self, step):
    step = keras.ops.cast(step, "float32")
    warmup = step / max(self.warmup_steps, 1)
    decay = (self.train_steps - step) / max(self.train_steps - self.warmup_steps, 1)
    factor = keras.ops.where(step < self.warmup_steps, warmup, decay)
    return self.peak * keras.ops.clip(factor, 0.0, 1.0)

  def get_config(self):
    return {"peak": self.peak, "warmup_steps": self.warmup_steps,
            "train_steps": self.train_steps}


def create_optimizer(name: str = "adamw", *, learning_rate: float = 1e-4,
                     warmup_steps: int = 10_000, train_steps: int = 1_000_000,
                     weight_decay: float = 0.01, clip_norm: float = 1.0):
  """AdamW (β 0.9/0.999, ε 1e-6), decay 0.01 except layer norms and biases, global-norm
  clipping, warm-up then linear decay: original BERT's optimiser."""
  if warmup_steps > train_steps:
    raise UserError(f"warmup_steps {warmup_steps} exceeds train_steps {train_steps}")
  schedule = WarmupLinearDecay(learning_rate, warmup_steps, train_steps)
  if name != "adamw":
    raise UserError(f"unknown optimizer {name!r}: use 'adamw'")
  optimizer = keras.optimizers.AdamW(
      learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9, beta_2=0.999,
      epsilon=1e-6, global_clipnorm=clip_norm if clip_norm > 0 else None)
  optimizer.exclude_from_weight_decay(var_names=NO_DECAY_PATTERNS)
  return optimizer

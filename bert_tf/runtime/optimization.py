"""Optimisers and learning-rate schedule with original BERT's defaults (docs/design.md#optimizer).

Written here, because Keras's own differ where it matters:
- Keras clips each replica's gradients before they are summed across replicas, so under two
  replicas `global_clipnorm` clips two half-gradients: another update than on one device.
  Ours clip the summed (global-batch) gradient, the same update for any number of replicas
  (`keras_internals.ClipsSummedGradients`).
- Keras's `Lamb` decays weights outside the trust ratio; the LAMB paper (You et al. 2019,
  Algorithm 2) puts the decay inside it: `w -= lr * (|w| / |u|) * u` with
  `u = m_hat / (sqrt(v_hat) + eps) + decay * w`.
"""

import keras
import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.model.keras_internals import ClipsSummedGradients, adam_slots, is_decayed
from bert_tf.runtime.runtime_settings import OPTIMIZERS, OptimizerConfig

# Layer-norm scales and offsets (`gamma`, `beta`) and every bias (`bias`, the MLM head's
# `output_bias`) are not decayed (and, with LAMB, not layer-adapted). Keras matches these
# patterns against the short variable name, so the classic list ["LayerNorm", "layer_norm",
# "bias"] would miss the layer norms.
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


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamW(ClipsSummedGradients, keras.optimizers.AdamW):
  """Keras's AdamW (decoupled weight decay, as BERT's `AdamWeightDecayOptimizer`)."""


@keras.saving.register_keras_serializable(package="bert_tf")
class Lamb(ClipsSummedGradients, keras.optimizers.Lamb):
  """LAMB as in the paper: decay inside the trust ratio; layer norms and biases take a plain
  Adam step, neither decayed nor layer-adapted (as NVIDIA's BERT LAMB)."""

  def __init__(self, *args, decay_rate: float = 0.01, **kwargs):
    super().__init__(*args, **kwargs)
    self.decay_rate = decay_rate

  def update_step(self, gradient, variable, learning_rate):
    learning_rate = tf.cast(learning_rate, variable.dtype)
    gradient = tf.cast(gradient, variable.dtype)
    step = tf.cast(self.iterations + 1, variable.dtype)
    m, v = adam_slots(self, variable)
    self.assign_add(m, (gradient - m) * (1 - self.beta_1))
    self.assign_add(v, (tf.square(gradient) - v) * (1 - self.beta_2))
    m_hat = m / (1 - tf.pow(tf.cast(self.beta_1, variable.dtype), step))
    v_hat = v / (1 - tf.pow(tf.cast(self.beta_2, variable.dtype), step))
    update = m_hat / (tf.sqrt(v_hat) + self.epsilon)
    if is_decayed(self, variable):
      update += self.decay_rate * variable
      weight_norm, update_norm = tf.norm(variable), tf.norm(update)
      trust_ratio = tf.where((weight_norm > 0) & (update_norm > 0),
                             weight_norm / update_norm, tf.ones_like(weight_norm))
      update *= trust_ratio
    self.assign_sub(variable, learning_rate * update)

  def get_config(self):
    return {**super().get_config(), "decay_rate": self.decay_rate}


def optimizer_for(config: OptimizerConfig) -> keras.optimizers.Optimizer:
  """The optimizer the settings ask for."""
  return create_optimizer(config.optimizer, learning_rate=config.learning_rate,
                          warmup_steps=config.warmup_steps, train_steps=decay_steps(config),
                          weight_decay=config.weight_decay, clip_norm=config.clip_norm)


def decay_steps(config: OptimizerConfig) -> int:
  """The step at which the settings' learning rate reaches 0."""
  return config.decay_steps or config.train_steps


def schedule_for(config: OptimizerConfig) -> WarmupLinearDecay:
  """The learning-rate schedule of `optimizer_for(config)`."""
  return WarmupLinearDecay(config.learning_rate, config.warmup_steps, decay_steps(config))


def create_optimizer(name: str = "adamw", *, learning_rate: float = 1e-4,
                     warmup_steps: int = 10_000, train_steps: int = 1_000_000,
                     weight_decay: float = 0.01, clip_norm: float = 1.0):
  """BERT's optimiser: β 0.9/0.999, ε 1e-6, decay 0.01 except layer norms and biases,
  global-norm clipping at 1.0, warm-up then linear decay. `name`: adamw or lamb."""
  if name not in OPTIMIZERS:
    raise UserError(f"unknown optimizer {name!r}: use one of {', '.join(OPTIMIZERS)}")
  if warmup_steps > train_steps:
    raise UserError(f"warmup_steps {warmup_steps} exceeds train_steps {train_steps}")
  common = dict(learning_rate=WarmupLinearDecay(learning_rate, warmup_steps, train_steps),
                beta_1=0.9, beta_2=0.999, epsilon=1e-6, clip_norm=clip_norm)
  if name == "adamw":
    optimizer = AdamW(weight_decay=weight_decay, **common)
  else:
    optimizer = Lamb(decay_rate=weight_decay, **common)
  optimizer.exclude_from_weight_decay(var_names=NO_DECAY_PATTERNS)
  return optimizer

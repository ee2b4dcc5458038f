"""`--mixed_precision`: what precision a run computes in, and the Keras dtype policy the model
is built under.

`auto` chooses bf16 where the hardware has bf16 units (a CPU with AMX or AVX-512 BF16, a GPU of
compute capability 8 or more, a TPU) and float32 elsewhere; `choose` says which and why, and a
run records its choice in place of `auto` (`resolved`), so that a resume on other hardware says
the change like any other setting's. The default stays float32: a run's figures do not change
with the machine unless asked.

Layers compute in bf16 or fp16 and keep float32 weights; the heads are float32 (see
`pretraining.py`), so logits and losses are too. Under fp16, `compile` wraps the optimizer in
Keras's `LossScaleOptimizer` (dynamic loss scaling), whose scale is checkpointed with it.
"""

import contextlib
import dataclasses
import logging
import sys

import keras

from bert_tf.errors import UserError
from bert_tf.runtime.runtime_settings import AUTO, PRECISIONS

log = logging.getLogger("bert_tf")

POLICIES = {"none": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
COMPUTE = {"none": "float32", "bf16": "bfloat16", "fp16": "float16"}
CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")  # /proc/cpuinfo's names of the CPU's bf16 units
CPU_FEATURES = {"avx2": "AVX2", "avx512f": "AVX-512", "avx512_vnni": "AVX-512 VNNI",
                "avx512_bf16": "AVX-512 BF16", "amx_bf16": "AMX-BF16", "amx_int8": "AMX-INT8"}


@dataclasses.dataclass(frozen=True)
class Choice:
  """A precision (one of `POLICIES`) and why it was chosen."""

  name: str
  reason: str

  def __str__(self) -> str:
    return f"{COMPUTE[self.name]} ({self.reason})"


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> set[str] | None:
  """The CPU's feature flags (Linux's names), or None where they cannot be read."""
  if not sys.platform.startswith("linux"):
    return None
  try:
    with open(cpuinfo) as f:
      for line in f:
        if line.startswith("flags"):
          return set(line.split(":", 1)[1].split())
  except OSError:
    return None
  return None


def cpu_features(flags: set[str] | None = None) -> str:
  """The CPU's features that decide its matmul speed, in words: `AVX2, AVX-512 VNNI, ...`."""
  flags = cpu_flags() if flags is None else flags
  if flags is None:
    return "unknown (not Linux)"
  return ", ".join(name for flag, name in CPU_FEATURES.items() if flag in flags) or "none"


def _gpu_capabilities() -> list[tuple[int, int]]:
  import tensorflow as tf
  return [tf.config.experimental.get_device_details(gpu).get("compute_capability", (0, 0))
          for gpu in tf.config.list_physical_devices("GPU")]


def choose(asked: str, strategy: str = "default", *, gpus=None, flags=None) -> Choice:
  """The precision `--mixed_precision=asked` means here, with the strategy `strategy`; `auto`
  looks at the TPU, else the GPUs (compute capabilities, `gpus`), else the CPU (`flags`, as
  `cpu_flags`); `gpus` and `flags` are read from the machine when not given."""
  if asked not in PRECISIONS:
    raise UserError(f"unknown mixed_precision {asked!r}: use one of {', '.join(PRECISIONS)}")
  if asked != AUTO:
    return Choice(asked, f"--mixed_precision={asked}")
  if strategy == "tpu":
    return Choice("bf16", "auto: a TPU")
  gpus = _gpu_capabilities() if gpus is None else gpus
  if gpus:
    least = ".".join(map(str, min(gpus)))
    if min(gpus) >= (8, 0):
      return Choice("bf16", f"auto: GPU compute capability {least}")
    return Choice("none", f"auto: GPU compute capability {least}, below 8.0")
  flags = cpu_flags() if flags is None else flags
  if flags is None:
    return Choice("none", "auto: the CPU's features are unknown off Linux")
  found = [flag for flag in CPU_BF16_FLAGS if flag in flags]
  if found:
    return Choice("bf16", f"auto: the CPU has {found[0]}")
  return Choice("none", f"auto: the CPU has neither {' nor '.join(CPU_BF16_FLAGS)}")


def resolved(config, strategy: str = "default"):
  """`config` (an `ExecutionConfig`) computing in the precision its `mixed_precision` chooses,
  with the reason, as the run records them; a line says them unless the run is float32 as
  by default."""
  choice = choose(config.mixed_precision, strategy)
  if config.mixed_precision != "none":
    log.info("precision: %s", choice)
  return dataclasses.replace(config, mixed_precision=choice.name,
                             precision_reason=choice.reason)


@contextlib.contextmanager
def policy(name: str):
  """Builds models under the named precision's policy (`auto` chosen on this machine);
  restores the previous policy after."""
  name = choose(name).name
  previous = keras.config.dtype_policy()
  keras.config.set_dtype_policy(POLICIES[name])
  try:
    yield
  finally:
    keras.config.set_dtype_policy(previous)

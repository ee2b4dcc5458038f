"""The settings of how a run executes and optimises, for both workloads: `ExecutionConfig` (seed,
strategy, precision, compilation; pre-training and fine-tuning) and `OptimizerConfig`
(pre-training's optimizer, batch and schedule). Declared once here (see `bert_tf.settings`); no
TensorFlow import: a flagfile is read before TensorFlow loads.
"""

import dataclasses

from bert_tf.errors import UserError
from bert_tf.settings import NOTED, STREAM, derived, setting

STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")
CLUSTERS = ("tf_config", "slurm", "kubernetes")
# The clusters whose launcher starts a process per worker (`srun`, an Indexed Job's pods): each
# one trains only as a worker of the cluster, never alone.
LAUNCHED = ("slurm", "kubernetes")
AUTO = "auto"  # --mixed_precision's choice by the hardware (`runtime/precision.py`)
PRECISIONS = ("none", "bf16", "fp16", AUTO)
OPTIMIZERS = ("adamw", "lamb")


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
  """Where the other workers of a `--strategy=multi_worker` run are, and how long to wait for
  them (docs/cluster.md)."""

  cluster: str = setting(
      "tf_config", "Where --strategy=multi_worker finds its workers: TF_CONFIG, Slurm's "
      "environment (`sbatch deploy/slurm.sbatch MY.flags`), or a Kubernetes Indexed Job's "
      "(with --cluster_workers and --cluster_service); slurm and kubernetes imply "
      "--strategy=multi_worker.", choices=CLUSTERS, change=NOTED)
  cluster_port: int = setting(8476, "The workers' port under --cluster=slurm (the next ones "
                              "for more tasks per node) and --cluster=kubernetes.",
                              change=NOTED)
  cluster_timeout: float = setting(
      600.0, "Seconds each worker waits for every other one to join the cluster (then names "
      "those that never did); a worker lost mid-run stops the others within 10 s "
      "(docs/cluster.md#when-a-worker-is-lost).", change=NOTED)
  cluster_workers: int = setting(0, "--cluster=kubernetes: the Indexed Job's completions "
                                 "(its number of workers).", change=NOTED)
  cluster_service: str = setting("", "--cluster=kubernetes: the headless Service that names "
                                 "the Job's pods (JOB-INDEX.SERVICE).", change=NOTED)

  def check(self) -> None:
    """Rejects a timeout that is not positive."""
    if not self.cluster_timeout > 0:
      raise UserError(f"cluster_timeout {self.cluster_timeout:g} is not positive")


@dataclasses.dataclass(frozen=True)
class ExecutionConfig(ClusterConfig):
  """Where and how the steps run: seed, distribution, precision, compilation."""

  seed: int = setting(0, "Seed of the data stream and the initial weights.", change=STREAM)
  strategy: str = setting(
      "", "tf.distribute strategy. Empty: multi_worker under --cluster=slurm or kubernetes, "
      "default otherwise.", choices=("", *STRATEGIES), change=NOTED)
  tpu: str = setting("", "TPU name or address for --strategy=tpu.", change=NOTED)
  mixed_precision: str = setting(
      "none", "Compute in bf16 or fp16 (fp16 with dynamic loss scaling); weights, logits and "
      "losses stay float32. auto: bf16 on a CPU with AMX or AVX-512 BF16, a GPU of compute "
      "capability 8 or more, a TPU; float32 elsewhere (the run records its choice).",
      choices=PRECISIONS, change=NOTED)
  jit_compile: bool = setting(False, "Compile the train step with XLA (Keras leaves it off "
                              "under any tf.distribute strategy unless asked).", change=NOTED)
  precision_reason: str = derived(
      "", "Why the run computes in its mixed_precision, which it resolves (auto's choice: "
      "runtime/precision.py) before it records its settings.")

  def __post_init__(self):
    if not self.strategy:  # not given: what --cluster implies (a frozen field set once, here)
      object.__setattr__(self, "strategy",
                         "multi_worker" if self.cluster in LAUNCHED else "default")

  def check(self) -> None:
    """The cluster's own checks, and a strategy that contradicts `--cluster`: under a launcher
    that starts a process per worker, any other strategy would train each of them alone."""
    ClusterConfig.check(self)
    if self.cluster in LAUNCHED and self.strategy != "multi_worker":
      raise UserError(f"--cluster={self.cluster} trains its workers together "
                      f"(--strategy=multi_worker); --strategy={self.strategy} would train each "
                      "alone: drop --strategy")


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
  """The optimizer, the batch of one update and the learning-rate schedule."""

  optimizer: str = setting("adamw", "adamw (BERT's), or lamb for large batches (the paper's "
                           "trust ratio).", choices=OPTIMIZERS, change=NOTED)
  global_batch_size: int = setting(16, "Examples per optimizer update, across all replicas "
                                   "and accumulated parts.", change=NOTED)
  gradient_accumulation_steps: int = setting(
      1, "Parts each replica's batch is split into, their gradients summed before one update: "
      "the same update in less memory.", change=NOTED)
  train_steps: int = setting(2000, "Train until this optimizer update (counted from the first "
                             "phase's start when going on from another run).", change=NOTED)
  decay_steps: int = setting(0, "The update at which the learning rate reaches 0 (0: "
                             "--train_steps). Phase 1 of a two-phase run stops before it.",
                             change=NOTED)
  learning_rate: float = setting(1e-3, "Peak learning rate.", change=NOTED)
  warmup_steps: int = setting(200, "Linear warm-up steps.", change=NOTED)
  weight_decay: float = setting(0.01, "Decoupled weight decay (not on layer norms and biases).",
                                change=NOTED)
  clip_norm: float = setting(1.0, "Clip the global batch's gradient to this global norm (0: no "
                             "clipping).", change=NOTED)

  def check(self) -> None:
    """Rejects optimizer settings that could only fail or train wrongly."""
    if min(self.train_steps, self.global_batch_size, self.gradient_accumulation_steps) <= 0:
      raise UserError("train_steps, global_batch_size and gradient_accumulation_steps must be "
                      "positive")
    if not self.learning_rate > 0:
      raise UserError(f"learning_rate {self.learning_rate} is not positive")
    if self.decay_steps and self.decay_steps < self.train_steps:
      raise UserError(f"decay_steps {self.decay_steps} is before train_steps "
                      f"{self.train_steps}: the learning rate would be 0 at the end")

"""The cluster of a `--strategy=multi_worker` run (docs/cluster.md): who its workers are, how
long to wait for them, and what to say when one is missing or lost.

- Who (`describe`): `--cluster=tf_config` reads `TF_CONFIG` (none: one process, no cluster);
  `slurm` reads Slurm's environment through TensorFlow's `SlurmClusterResolver` (`srun
  PYTHON train.py ...`, from deploy/slurm.sbatch, is the whole launch); `kubernetes` builds
  the workers of an Indexed Job behind a headless Service, `JOB-INDEX.SERVICE:PORT`, from the
  pod's `JOB_COMPLETION_INDEX` and hostname. A description that cannot be right (an index out
  of range, two workers at one address, a name that does not resolve, this worker's port
  taken) is a `UserError` before anything starts.
- Waiting (`form`): TensorFlow waits for a missing worker in silence, holding the interpreter,
  so each worker first listens on its own port and connects to every other one's until all
  answer or `--cluster_timeout` passes; then it stops naming those that never joined, before
  the model_dir is touched. A worker that answered but goes away or hangs before TensorFlow's
  own servers meet (`registered`) is waited for the same timeout again, not TensorFlow's hour.
- Lost (`lost_worker`): TensorFlow's coordination service notices a dead worker (its
  connection reset) or a silent one (its heartbeats missed: TensorFlow's 10 s) and aborts the
  collective ops of the others: that error is said as a lost worker, not a failed input.
- Leaving (`exiting_at_once`): once a cluster formed, the process ends as soon as the command
  has flushed its output, without the seconds TensorFlow's teardown waits for the others.
"""

import contextlib
import json
import logging
import os
import re
import socket
import sys
import time

import tensorflow as tf
from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2
from tensorflow.python.distribute import multi_worker_util
from tensorflow.python.eager import context

from bert_tf.errors import UserError
from bert_tf.runtime.checkpointing import TrainingStopped
from bert_tf.runtime.runtime_settings import ClusterConfig

# The jobs whose tasks train together (MultiWorkerMirroredStrategy's); an evaluator waits for
# no one.
TRAINING_JOBS = ("chief", "worker")
PROBE_INTERVAL = 0.5  # seconds between rounds of connecting to the workers not yet seen

_joined = None  # the resolver of the cluster this process formed, once it did


def describe(config: ClusterConfig):
  """This process's cluster as `--cluster` finds it: a `ClusterResolver` with its task, or None
  for one process on its own (no `TF_CONFIG`)."""
  if config.cluster == "slurm":
    return _slurm(config.cluster_port)
  if config.cluster == "kubernetes":
    return _kubernetes(config)
  text = os.environ.get("TF_CONFIG", "")
  if not text.strip():
    return None
  try:
    described = json.loads(text)
  except ValueError as e:
    raise UserError(f"TF_CONFIG is not JSON: {e}") from None
  if not isinstance(described, dict) or not described.get("cluster"):
    raise UserError('TF_CONFIG names no cluster: give {"cluster": {"worker": ["host:port", '
                    '...]}, "task": {"type": "worker", "index": N}}')
  return tf.distribute.cluster_resolver.TFConfigClusterResolver()


def _slurm(port: int):
  if "SLURM_PROCID" not in os.environ:
    raise UserError("--cluster=slurm outside a Slurm allocation (no SLURM_PROCID): launch "
                    "with srun")
  try:
    tasks = int(os.environ["SLURM_STEP_NUM_TASKS"])
  except (KeyError, ValueError):
    raise UserError("--cluster=slurm outside a job step (no SLURM_STEP_NUM_TASKS): launch "
                    "with srun") from None
  # Slurm binds each task's accelerators (--gpus-per-task, or a node's all with one task per
  # node): the resolver only needs room for every task, never to set CUDA_VISIBLE_DEVICES.
  try:
    return tf.distribute.cluster_resolver.SlurmClusterResolver(
        port_base=port, gpus_per_node=tasks, gpus_per_task=1, auto_set_gpu=False)
  except (RuntimeError, ValueError) as e:
    raise UserError(f"Slurm's environment does not describe the job step: {e}") from None


def _kubernetes(config: ClusterConfig):
  index = os.environ.get("JOB_COMPLETION_INDEX", "")
  if not index.isdigit():
    raise UserError("--cluster=kubernetes without JOB_COMPLETION_INDEX: run it in the pods "
                    "of an Indexed Job (deploy/kubernetes.yaml)")
  if config.cluster_workers <= 0 or not config.cluster_service:
    raise UserError("--cluster=kubernetes needs --cluster_workers (the Job's completions) and "
                    "--cluster_service (its headless Service)")
  hostname = os.environ.get("HOSTNAME") or socket.gethostname()
  job, dash, own_index = hostname.rpartition("-")
  if not dash or own_index != index:
    raise UserError(f"the pod's hostname {hostname!r} is not JOB-{index}: is it a pod of an "
                    "Indexed Job?")
  workers = [f"{job}-{i}.{config.cluster_service}:{config.cluster_port}"
             for i in range(config.cluster_workers)]
  return tf.distribute.cluster_resolver.SimpleClusterResolver(
      tf.train.ClusterSpec({"worker": workers}), task_type="worker", task_id=int(index),
      rpc_layer="grpc")


def check(resolver, names_appear_late: bool = False) -> None:
  """Rejects a description that cannot form a cluster, in one line: no task for this process
  or one out of range, two workers at one address, an address that does not resolve (unless
  `names_appear_late`: a pod's name is published when the pod starts), this worker's port
  taken on this machine (another worker with its index?: `form` says so)."""
  cluster = resolver.cluster_spec().as_dict()
  task_type, task_id = resolver.task_type, resolver.task_id
  if task_type not in cluster or task_id is None:
    raise UserError(f"the cluster description names no task of this process ({task_type} "
                    f"{task_id}) among {', '.join(cluster)}")
  count = len(cluster[task_type])
  if not 0 <= task_id < count:
    raise UserError(f"task index {task_id} is out of range: the cluster has {count} "
                    f"{task_type}(s), 0 to {count - 1}")
  seen = {}
  for task, address in _tasks(resolver):
    host, port = _host_and_port(task, address)
    if address in seen:
      raise UserError(f"{seen[address]} and {task} have one address, {address}")
    seen[address] = task
    if not names_appear_late:
      try:
        socket.getaddrinfo(host, port)
      except OSError:
        raise UserError(f"the address of {task}, {address}, does not resolve") from None


def form(resolver, timeout: float) -> None:
  """Waits until every other worker answers on its port, listening on this worker's own
  meanwhile (a `UserError` when it is taken); raises `TrainingStopped` naming those that did not
  within `timeout` seconds."""
  own = resolver.cluster_spec().task_address(resolver.task_type, resolver.task_id)
  others = {task: address for task, address in _tasks(resolver)
            if task != f"{resolver.task_type} {resolver.task_id}"}
  deadline = time.monotonic() + timeout
  with _listening(own):
    while others and time.monotonic() < deadline:
      others = {task: address for task, address in others.items() if not _answers(address)}
      if others:
        time.sleep(PROBE_INTERVAL)
  if others:
    missing = ", ".join(f"{task} ({address})" for task, address in others.items())
    raise TrainingStopped(f"the cluster did not form within {timeout:g} s: {missing} never "
                          "joined; nothing was written")


def join(config: ClusterConfig):
  """This process's cluster described, checked and formed (`describe`, `check`, `form`); its
  resolver, or None for a process on its own."""
  global _joined
  resolver = describe(config)
  if resolver is not None:
    check(resolver, names_appear_late=config.cluster == "kubernetes")
    form(resolver, config.cluster_timeout)
    _coordinate(resolver, config.cluster_timeout)
  _joined = resolver
  return resolver


@contextlib.contextmanager
def registered(resolver, timeout: float):
  """Runs the block that starts this worker's TensorFlow server (the strategy's making), in
  which every worker registers with the coordination service; when one never does within
  `timeout` seconds more (it went away or hung after `form` saw it), a `TrainingStopped`
  names it."""
  try:
    yield
  except tf.errors.OpError as e:
    if resolver is None or not _UNREGISTERED.search(str(e)):
      raise
    addresses = dict(_tasks(resolver))
    itself = f"{resolver.task_type} {resolver.task_id}"
    _, _, late = str(e).partition("timed out task names:")
    named = [f"{job} {task}" for job, task in _TASK.findall(late)
             if f"{job} {task}" != itself]  # this worker, late itself on a busy machine
    if not named:
      named = [task for task, address in addresses.items()
               if task != itself and not _answers(address)]
    who = (", ".join(f"{task} ({addresses.get(task, 'address unknown')})"
                     for task in dict.fromkeys(named))
           or "a worker (TensorFlow does not say which)")
    raise TrainingStopped(f"the cluster did not form within {timeout:g} s: {who} answered on "
                          "its port but never joined; nothing was written") from None


def _coordinate(resolver, timeout: float) -> None:
  """Sets up TensorFlow's coordination service as `MultiWorkerMirroredStrategy` would, but
  with `timeout` for every worker to register (TensorFlow's default waits an hour, silently)."""
  cluster = resolver.cluster_spec()
  context.context().configure_coordination_service(
      service_type="standalone",
      service_leader=multi_worker_util.coordination_leader(cluster),
      cluster_register_timeout_in_ms=int(timeout * 1000),
      coordinated_jobs=[coordination_config_pb2.CoordinatedJob(name=job,
                                                               num_tasks=cluster.num_tasks(job))
                        for job in TRAINING_JOBS if job in cluster.jobs])
  context.context().coordination_service.cluster_register_with_barrier = True


def joined():
  """The resolver of the cluster this process joined (None: none)."""
  return _joined


# What TensorFlow says when a collective op could not finish because a worker went away: the
# coordination service's missed heartbeats, a connection reset or refused, the abort that
# spreads to every collective after one of those.
_LOST = re.compile(r"Collective ops is aborted|stopped sending heartbeats|Connection reset by "
                   r"peer|failed to connect to all addresses|Socket closed")
_UNHEALTHY = re.compile(r"stopped sending heartbeats\):\s*((?:/job:\w+/replica:\d+/task:\d+\s*)+)"
                        r"|Task (/job:\w+/replica:\d+/task:\d+) heartbeat timeout")
_UNREGISTERED = re.compile(r"Wait_for_all_tasks_to_register|RegisterTask")
_REMOTE = re.compile(r"from remote target /job:(\w+)/replica:\d+/task:(\d+)")
_TASK = re.compile(r"/job:(\w+)/replica:\d+/task:(\d+)")


def lost_worker(error: Exception) -> str | None:
  """The line that says a worker of this process's cluster was lost, when `error` is
  TensorFlow's word for it; None otherwise. The worker is the one TensorFlow names (this very
  worker, when it was the one whose heartbeats were missed: starved of CPU, or cut off), else
  those that no longer answer on their port."""
  if _joined is None or not isinstance(error, tf.errors.OpError) or not _LOST.search(str(error)):
    return None
  text = str(error)
  unhealthy = _UNHEALTHY.search(text)
  itself = f"{_joined.task_type} {_joined.task_id}"
  if unhealthy:
    named = [f"{job} {task}" for job, task in _TASK.findall(unhealthy.group(0))]
    how = "stopped answering (no heartbeat)"
  else:
    named = [f"{job} {task}" for job, task in _REMOTE.findall(text) if f"{job} {task}" != itself]
    how = "went away"
  addresses = dict(_tasks(_joined))
  named = list(dict.fromkeys(named))
  if not named:
    named = [task for task, address in addresses.items()
             if task != itself and not _answers(address)]
  who = (", ".join(f"{task} ({addresses.get(task, 'address unknown')})" for task in named)
         or "a worker (TensorFlow does not say which)")
  return (f"a worker was lost: {who} {how}; every worker stops. Re-run every worker's command "
          "to resume from the last checkpoint all of them completed")


@contextlib.contextmanager
def losses_said():
  """Runs the block; TensorFlow's error for a lost worker (`lost_worker`) becomes a
  `TrainingStopped` that says so, in one line."""
  try:
    yield
  except tf.errors.OpError as e:
    line = lost_worker(e)
    if line is None:
      raise
    raise TrainingStopped(line) from None


@contextlib.contextmanager
def exiting_at_once():
  """Runs a command; once it ends (its output written, its exit status set) in a process that
  joined a cluster, the process ends at once: TensorFlow's teardown would wait seconds for the
  other workers, minutes for a lost one. Anything that escapes as a traceback ends as usual."""
  try:
    yield
  except SystemExit as e:
    if _joined is None:
      raise
    _end(e.code)
  if _joined is not None:
    _end(0)


def _end(code) -> None:
  if code is not None and not isinstance(code, int):
    print(code, file=sys.stderr)
    code = 1
  logging.shutdown()
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(code or 0)


def _tasks(resolver) -> list[tuple[str, str]]:
  """(`job index`, address) of every task that trains, in order."""
  cluster = resolver.cluster_spec().as_dict()
  return [(f"{job} {index}", address) for job in TRAINING_JOBS
          for index, address in enumerate(_addresses(cluster.get(job, [])))]


def _addresses(tasks) -> list[str]:
  return [tasks[i] for i in sorted(tasks)] if isinstance(tasks, dict) else list(tasks)


def _host_and_port(task: str, address: str) -> tuple[str, int]:
  host, colon, port = address.rpartition(":")
  if not colon or not port.isdigit():
    raise UserError(f"the address of {task}, {address!r}, is not host:port")
  return host.strip("[]"), int(port)


def _answers(address: str) -> bool:
  """Whether something accepts a connection at `address` (a worker waiting in `form`, or its
  TensorFlow server)."""
  host, port = _host_and_port("", address)
  try:
    socket.create_connection((host, port), timeout=2).close()
    return True
  except OSError:
    return False


def _wildcard(address: str):
  host, port = _host_and_port("", address)
  return (socket.AF_INET6, ("::", port)) if ":" in host else (socket.AF_INET, ("", port))


@contextlib.contextmanager
def _listening(address: str):
  """Listens on this worker's port for the block, so that the others see it waiting (their
  connections wait in the backlog, never accepted); closed before TensorFlow's server takes
  the port."""
  family, bound = _wildcard(address)
  with socket.socket(family) as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
      s.bind(bound)
    except OSError as e:
      raise UserError(f"this worker's port {bound[1]} is taken on this machine ({e.strerror}): "
                      "is another worker running with its index?") from None
    s.listen(128)
    yield

"""The cluster of a multi-worker run, in this process: described from TF_CONFIG, Slurm's
variables and a Kubernetes pod's (the shipped manifest checked against the flags it passes),
a wrong description rejected in one line, a cluster that does not form named by its missing
workers, and TensorFlow's errors for a lost worker said as such."""

import socket
import threading

import pytest
import tensorflow as tf

import pods
from bert_tf.errors import UserError
from bert_tf.runtime import cluster
from bert_tf.runtime.checkpointing import TrainingStopped
from bert_tf.runtime.runtime_settings import ClusterConfig
from bert_tf.training.train_settings import TrainConfig
from helpers import free_ports, slurm_step, tf_config


def spec(resolver):
  return resolver.cluster_spec().as_dict(), resolver.task_type, resolver.task_id


def test_tf_config_describes_the_cluster_and_its_absence_one_process(monkeypatch):
  monkeypatch.delenv("TF_CONFIG", raising=False)
  assert cluster.describe(ClusterConfig()) is None
  monkeypatch.setenv("TF_CONFIG", tf_config(["a:1", "b:2"], 1))
  assert spec(cluster.describe(ClusterConfig())) == ({"worker": ["a:1", "b:2"]}, "worker", 1)
  monkeypatch.setenv("TF_CONFIG", "{'cluster': ")
  with pytest.raises(UserError, match="^TF_CONFIG is not JSON: "):
    cluster.describe(ClusterConfig())


def test_slurm_variables_describe_one_task_per_node_or_several(monkeypatch):
  for name, value in slurm_step(1, 2, node="n[1-2]").items():
    monkeypatch.setenv(name, value)
  monkeypatch.setenv("SLURM_STEP_TASKS_PER_NODE", "1(x2)")
  slurm = ClusterConfig(cluster="slurm", cluster_port=9000)
  assert spec(cluster.describe(slurm)) == ({"worker": ["n1:9000", "n2:9000"]}, "worker", 1)
  monkeypatch.setenv("SLURM_STEP_NODELIST", "n1")
  monkeypatch.setenv("SLURM_STEP_TASKS_PER_NODE", "2")  # one task per accelerator
  assert spec(cluster.describe(slurm)) == ({"worker": ["n1:9000", "n1:9001"]}, "worker", 1)
  monkeypatch.delenv("SLURM_PROCID")
  with pytest.raises(UserError, match="outside a Slurm allocation .*: launch with srun$"):
    cluster.describe(slurm)


def test_a_pod_of_the_shipped_indexed_job_describes_the_cluster_from_its_variables(monkeypatch):
  service, job = pods.indexed_job()
  assert service["spec"]["clusterIP"] == "None"  # headless
  assert job["spec"]["completionMode"] == "Indexed"
  pod = job["spec"]["template"]["spec"]
  assert pod["subdomain"] == service["metadata"]["name"]  # pods named JOB-INDEX.SERVICE
  assert service["spec"]["selector"].items() <= job["spec"]["template"]["metadata"][
      "labels"].items()
  (container,) = pod["containers"]
  flags = dict(arg.removeprefix("--").split("=", 1) for arg in container["args"]
               if arg.startswith("--") and "=" in arg)
  assert flags["cluster"] == "kubernetes"  # multi_worker, implied (test_launchers.py)
  assert int(flags["cluster_workers"]) == job["spec"]["completions"] == job["spec"]["parallelism"]
  assert flags["cluster_service"] == service["metadata"]["name"]
  assert [port["containerPort"] for port in container["ports"]] == [int(flags["cluster_port"])]

  monkeypatch.setenv("JOB_COMPLETION_INDEX", "2")
  monkeypatch.setenv("HOSTNAME", f"{job['metadata']['name']}-2")  # Kubernetes' hostname
  config = ClusterConfig(cluster="kubernetes", cluster_port=int(flags["cluster_port"]),
                         cluster_workers=int(flags["cluster_workers"]),
                         cluster_service=flags["cluster_service"])
  names = [f"{job['metadata']['name']}-{i}.{service['metadata']['name']}:{flags['cluster_port']}"
           for i in range(int(flags["cluster_workers"]))]
  assert spec(cluster.describe(config)) == ({"worker": names}, "worker", 2)
  monkeypatch.delenv("JOB_COMPLETION_INDEX")
  with pytest.raises(UserError, match="without JOB_COMPLETION_INDEX"):
    cluster.describe(config)


def resolver(addresses, index):
  return tf.distribute.cluster_resolver.SimpleClusterResolver(
      tf.train.ClusterSpec({"worker": addresses}), task_type="worker", task_id=index)


def test_a_wrong_description_is_one_line_before_anything_starts():
  with pytest.raises(UserError, match=r"^task index 2 is out of range: .* 2 worker\(s\), 0 to 1$"):
    cluster.check(resolver(["127.0.0.1:1", "127.0.0.1:2"], 2))
  with pytest.raises(UserError, match="^worker 0 and worker 1 have one address, 127.0.0.1:5$"):
    cluster.check(resolver(["127.0.0.1:5", "127.0.0.1:5"], 0))
  with pytest.raises(UserError, match="^the address of worker 1, nowhere.invalid:5, does not "
                                      "resolve$"):
    cluster.check(resolver(["127.0.0.1:5", "nowhere.invalid:5"], 0))
  cluster.check(resolver(["127.0.0.1:5", "nowhere.invalid:5"], 0), names_appear_late=True)
  with pytest.raises(UserError, match="cluster_timeout 0 is not positive"):
    TrainConfig(cluster_timeout=0).check()


def test_two_workers_with_one_index_on_one_machine_is_one_line():
  port, other = free_ports(2)
  with socket.socket() as first:  # the worker that took index 0 first
    first.bind(("", port))
    first.listen()
    with pytest.raises(UserError, match=f"port {port} is taken on this machine .*another "
                                        "worker running with its index"):
      cluster.form(resolver([f"127.0.0.1:{port}", f"127.0.0.1:{other}"], 0), timeout=1)


def test_workers_wait_for_each_other_and_name_those_that_never_join():
  addresses = [f"127.0.0.1:{port}" for port in free_ports(3)]
  with pytest.raises(TrainingStopped, match=rf"^the cluster did not form within 1 s: worker 1 "
                                            rf"\({addresses[1]}\), worker 2 \({addresses[2]}\) "
                                            "never joined; nothing was written$"):
    cluster.form(resolver(addresses, 0), timeout=1)
  # A pod whose name is not published yet (Kubernetes): a worker that has not joined.
  with pytest.raises(TrainingStopped, match=r"^the cluster did not form within 1 s: worker 1 "
                                            r"\(bert-pretraining-1.invalid:5\) never joined; "):
    cluster.form(resolver([addresses[0], "bert-pretraining-1.invalid:5"], 0), timeout=1)

  # Each worker, once it saw the other, leaves its port to TensorFlow's server (here a socket
  # that listens until both have formed).
  formed = []
  both = threading.Barrier(2)

  def worker(index):
    formed.append(cluster.form(resolver(addresses[:2], index), timeout=60))
    with socket.socket() as server:
      server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
      server.bind(("", int(addresses[index].rsplit(":")[1])))
      server.listen()
      both.wait(timeout=60)

  workers = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
  for thread in workers:
    thread.start()
  for thread in workers:
    thread.join()
  assert formed == [None, None]


# TensorFlow's words (2.21) for a worker that stopped sending heartbeats (SIGSTOP), and for the
# collective a dead worker broke (kill -9): what the other workers' training step raises.
NO_HEARTBEAT = """Graph execution error:

Detected at node CollectiveReduceV2 defined at (most recent call last):
Collective ops is aborted by: Error reported from /job:worker/task:1: The following tasks are \
unhealthy (stopped sending heartbeats):
/job:worker/replica:0/task:1
The tasks have crashed. Check the task logs for an earlier error.
\t [[{{node CollectiveReduceV2}}]] [Op:__inference_step_36]"""
CONNECTION_RESET = ("Collective ops is aborted by: recvmsg:Connection reset by peer\n"
                    "\t [[{{node CollectiveReduceV2}}]]")


def test_a_lost_worker_is_said_as_such(monkeypatch):
  addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
  error = tf.errors.UnavailableError(None, None, NO_HEARTBEAT)
  assert cluster.lost_worker(error) is None  # no cluster joined: not a lost worker
  monkeypatch.setattr(cluster, "_joined", resolver(addresses, 0))
  assert cluster.lost_worker(error) == (
      f"a worker was lost: worker 1 ({addresses[1]}) stopped answering (no heartbeat); every "
      "worker stops. Re-run every worker's command to resume from the last checkpoint all of "
      "them completed")
  with socket.socket() as this_worker:  # worker 0 answers on its port, worker 1 is gone
    this_worker.bind(("127.0.0.1", int(addresses[0].rsplit(":")[1])))
    this_worker.listen()
    line = cluster.lost_worker(tf.errors.UnavailableError(None, None, CONNECTION_RESET))
  assert line.startswith(f"a worker was lost: worker 1 ({addresses[1]}) went away; ")
  starved = ("Collective ops is aborted by: Unexpected heartbeat request from an already-in-"
             "error task: /job:worker/replica:0/task:0 with existing error: UNAVAILABLE: Task "
             "/job:worker/replica:0/task:0 heartbeat timeout. This indicates that the remote "
             "task has failed")  # this very worker, as the coordination service saw it
  assert cluster.lost_worker(tf.errors.AbortedError(None, None, starved)).startswith(
      f"a worker was lost: worker 0 ({addresses[0]}) stopped answering (no heartbeat); ")
  missing_file = tf.errors.NotFoundError(None, None, "data/x.txt: no such file")
  assert cluster.lost_worker(missing_file) is None
  with pytest.raises(TrainingStopped, match="^a worker was lost: worker 1 "):
    with cluster.losses_said():
      raise error


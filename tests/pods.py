"""A Kubernetes node on this machine, for the tests of `--cluster=kubernetes`: the pods of an
Indexed Job behind a headless Service, each as Kubernetes makes it, so that every pod listens on
the one port of the manifest.

The node is a user, network and mount namespace of its own. Each pod in it is a network and UTS
namespace: its own loopback, its own address on a bridge of the node (as a pod network's), its
hostname `JOB-INDEX`. A hosts file bind-mounted over the node's /etc/hosts stands in for the
cluster DNS of the headless Service: `JOB-INDEX.SERVICE` resolves to the pod's address once the
pod has started (`publishNotReadyAddresses`), not before. A pod's command is forked from the
warm Python (`helpers.start`) and enters its pod's namespaces as its first act (`become`): a
forked process has one thread, which is what joining a user namespace asks.

Nothing of the node is on this machine outside its namespaces: its interfaces and its mount end
with it. It ends when its `with` block does, which kills the pods still running first, or when
the test process dies: the kernel then kills the pods (`PR_SET_PDEATHSIG`), and the processes
that hold the namespaces read a pipe from the test process, which ends with it.
"""

import ctypes
import os
import select
import signal
import subprocess
import sys
import time

import yaml

import helpers

MANIFEST = os.path.join(helpers.ROOT, "deploy", "kubernetes.yaml")
PR_SET_PDEATHSIG = 1
POD_NETWORK = "10.244.0."  # pod i is at 10.244.0.(i + 2)/24; the bridge holds no address

# Runs in the node's namespaces (`unshare`) with the hosts file and each pod's `hostname/address`
# as arguments: mounts the hosts file, makes each pod's namespaces (held by `cat` reading the
# test's pipe: the pipe's end ends them), joins it to the bridge, prints the pods' pids, and
# waits for the pipe's end.
NODE = r"""
set -e
exec 3<&0
hosts=$1
shift
mount --bind "$hosts" /etc/hosts
ip link set lo up
ip link add bridge0 type bridge
ip link set bridge0 up
pids=
i=0
for pod; do
  unshare --net --uts -- cat <&3 >/dev/null &
  pid=$!
  while [ "$(readlink /proc/$pid/ns/net)" = "$(readlink /proc/$$/ns/net)" ]; do sleep 0.01; done
  ip link add veth$i type veth peer name eth0 netns $pid
  ip link set veth$i master bridge0 up
  nsenter --target $pid --net --uts sh -c "echo ${pod%/*} > /proc/sys/kernel/hostname
    ip link set lo up
    ip addr add ${pod#*/}/24 dev eth0
    ip link set eth0 up"
  pids="$pids $pid"
  i=$((i + 1))
done
echo $pids
wait
"""


def indexed_job(path=MANIFEST):
  """The manifest's (headless Service, Indexed Job)."""
  service, job = yaml.safe_load_all(open(path))
  assert service["kind"] == "Service" and job["kind"] == "Job"
  return service, job


class Node:
  """The node of the pods of `job` (an Indexed Job's manifest) behind `service`, in `directory`
  (its hosts file); a context manager. `start(index, ...)` starts pod `index`'s container."""

  def __init__(self, directory, service, job):
    pod = job["spec"]["template"]["spec"]
    # What makes Kubernetes set a pod's index and name, and publish the names.
    assert job["spec"]["completionMode"] == "Indexed"
    assert service["spec"]["clusterIP"] == "None"
    assert service["metadata"]["name"] == pod["subdomain"]
    self.job = job["metadata"]["name"]
    self.subdomain = pod["subdomain"]
    self.count = job["spec"]["completions"]
    self.hosts = os.path.join(str(directory), "hosts")
    self.holders = []  # the pid of the process that holds each pod's namespaces
    self.started = []

  def name(self, index):
    """Pod `index`'s hostname, as Kubernetes names the pods of an Indexed Job."""
    return f"{self.job}-{index}"

  def address(self, index):
    """Pod `index`'s address on the node's pod network."""
    return f"{POD_NETWORK}{index + 2}"

  def __enter__(self):
    with open(self.hosts, "w") as f:
      f.write("127.0.0.1 localhost\n")
    pods = [f"{self.name(i)}/{self.address(i)}" for i in range(self.count)]
    self.node = subprocess.Popen(
        ["unshare", "--user", "--map-root-user", "--net", "--mount", "--uts", "--", "sh", "-c",
         NODE, "node", self.hosts, *pods],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([self.node.stdout], [], [], 60)
    line = self.node.stdout.readline() if ready else ""
    if len(line.split()) != self.count:
      self.__exit__(None, None, None)
      raise AssertionError("the Kubernetes node stand-in needs user, network, mount and UTS "
                           "namespaces, a bridge and veth pairs (unshare, ip, nsenter): "
                           f"{self.failure or 'no answer in 60 s'}")
    self.holders = [int(pid) for pid in line.split()]
    return self

  def start(self, index, command, args, **variables):
    """Starts pod `index`'s container, `command` (the manifest's: `python SCRIPT`) with `args`,
    with the variables the Job controller and the container runtime give it
    (`JOB_COMPLETION_INDEX`, `HOSTNAME`) and `variables`; publishes its name first, as the
    headless Service does when the pod starts. The process, from `helpers.start`."""
    python, script = command
    assert python == "python"
    with open(self.hosts, "a") as f:  # in place: the node's /etc/hosts is this very file
      f.write(f"{self.address(index)} {self.name(index)}.{self.subdomain}\n")
    process = helpers.start(
        ["-c", f"import pods; pods.become({self.node.pid}, {self.holders[index]}, {os.getpid()})",
         script, *args],
        JOB_COMPLETION_INDEX=str(index), HOSTNAME=self.name(index), **variables)
    self.started.append(process)
    return process

  def listens(self, index, port):
    """Whether something listens on `port` in pod `index` (its own network's sockets)."""
    for table in ("tcp", "tcp6"):
      with open(f"/proc/{self.holders[index]}/net/{table}") as sockets:
        for line in list(sockets)[1:]:
          local, state = line.split()[1], line.split()[3]
          if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
            return True
    return False

  def __exit__(self, *exception):
    for process in self.started:
      if process.poll() is None:
        process.kill()
        process.wait()
    self.node.stdin.close()  # the pods' namespaces end, then the node
    try:
      self.node.wait(timeout=30)
    except subprocess.TimeoutExpired:
      self.node.kill()
      self.node.wait()
    self.failure = self.node.stderr.read().strip()
    self.node.stdout.close()
    self.node.stderr.close()


def traces():
  """What a node could leave on this machine: its kinds of interfaces (a bridge, veth pairs) and
  mounts over /etc/hosts, as this machine has them now."""
  interfaces = sorted(name for name in os.listdir("/sys/class/net")
                      if name.startswith(("bridge", "veth")))
  with open("/proc/self/mountinfo") as mounts:
    return interfaces, [line for line in mounts if " /etc/hosts " in line]


def become(node, pod, test):
  """Makes this process (single-threaded: a fork) a process of `pod`'s container on `node`
  (their pids), which the kernel kills if the `test` process (its parent, by adoption) ends: the
  namespaces joined, the working directory kept; then runs `sys.argv[1]` as `__main__` with the
  arguments after it, as `python SCRIPT ARGS` does."""
  libc = ctypes.CDLL(None, use_errno=True)
  directory = os.getcwd()
  # Each opened first: inside the node's user namespace, the pods' are no longer this process's
  # to open.
  joined = [os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY)
            for pid, kind in ((node, "user"), (node, "mnt"), (pod, "net"), (pod, "uts"))]
  for fd in joined:
    if libc.setns(fd, 0) != 0:
      raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    os.close(fd)
  os.chdir(directory)  # joining a mount namespace moves to its root
  # After the namespaces (a new user namespace clears it), once the test process has adopted
  # this one (the warm Python's middle process ends first).
  deadline = time.monotonic() + 60
  while os.getppid() != test and time.monotonic() < deadline:
    time.sleep(0.01)
  libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
  if os.getppid() != test:
    sys.exit(f"the test process {test} ended before its pod started")
  import runpy
  sys.argv = sys.argv[1:]
  runpy.run_path(sys.argv[0], run_name="__main__")

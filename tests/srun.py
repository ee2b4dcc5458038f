"""A stand-in for Slurm's `srun` inside a batch job of one node (this machine), for the journey
of deploy/slurm.sbatch: `python srun.py [--label] COMMAND ARGS...` starts the job's
`SLURM_NTASKS` tasks of COMMAND at once, each with the variables srun gives a task of a job
step (`SLURM_PROCID`, `SLURM_LOCALID`, `SLURM_STEP_NODELIST`, `SLURM_STEP_NUM_TASKS`,
`SLURM_STEP_TASKS_PER_NODE`, ...), and waits for them all. `--label` prefixes each line a task
writes with its number, as srun does; any other option is refused, so that the script relies
on nothing this stand-in does not play. The exit status is the highest of the tasks' (srun's;
a task ended by a signal counts as 128 + the signal). A task ends with the stand-in, as a
step's tasks end with a cancelled srun."""

import ctypes
import os
import signal
import subprocess
import sys
import threading

PR_SET_PDEATHSIG = 1


def step_variables(task: int, tasks: int, node: str) -> dict:
  """What srun sets for task `task` of a step of `tasks` tasks, all on `node`."""
  return dict(SLURM_PROCID=str(task), SLURM_LOCALID=str(task), SLURM_NODEID="0",
              SLURM_STEP_ID="0", SLURM_STEPID="0", SLURM_STEP_NUM_TASKS=str(tasks),
              SLURM_STEP_NUM_NODES="1", SLURM_STEP_NODELIST=node,
              SLURM_STEP_TASKS_PER_NODE=str(tasks), SLURM_TASK_PID=str(os.getpid()))


def ending_with_this_process() -> None:
  """In a task, before it runs its command: the kernel kills it when the stand-in ends."""
  ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def relay(stream, out, prefix: str) -> None:
  """Copies a task's `stream` to `out` line by line, each line after `prefix`."""
  for line in iter(stream.readline, b""):
    out.buffer.write(prefix.encode() + line)
    out.buffer.flush()
  stream.close()


def main(argv: list[str]) -> int:
  label = argv[:1] == ["--label"]
  command = argv[1:] if label else argv
  if not command or command[0].startswith("-"):
    sys.exit(f"srun stand-in: plays only `srun [--label] COMMAND ...`, not {argv}")
  node = os.environ["SLURM_JOB_NODELIST"]
  if os.environ.get("SLURM_JOB_NUM_NODES", "1") != "1" or "," in node or "[" in node:
    sys.exit(f"srun stand-in: plays a job of one node, not {node}")
  tasks = int(os.environ["SLURM_NTASKS"])
  started = [subprocess.Popen(command, env={**os.environ, **step_variables(i, tasks, node)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              preexec_fn=ending_with_this_process)
             for i in range(tasks)]
  relays = [threading.Thread(target=relay, args=(stream, out, f"{i}: " if label else ""))
            for i, task in enumerate(started)
            for stream, out in ((task.stdout, sys.stdout), (task.stderr, sys.stderr))]
  for thread in relays:
    thread.start()
  statuses = [task.wait() for task in started]
  for thread in relays:
    thread.join()
  return max(128 - status if status < 0 else status for status in statuses)


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))

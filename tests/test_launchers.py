"""The shipped launchers take the user's run (docs/cluster.md): `deploy/slurm.sbatch MY.flags
[more flags]` passes them to every task with the submitting environment's Python and refuses
to start without a flagfile; the Kubernetes manifest runs the flagfile of its ConfigMap in the
image the Dockerfile builds, which installs the project as README does; `--cluster=slurm` or
`kubernetes` trains as multi_worker or is refused. And the journey: docs/cluster.md's `sbatch`
command, run as sbatch would in a job of two tasks on 127.0.0.1 with `srun` played by
tests/srun.py, trains both tasks together.

Slurm and Kubernetes themselves are not here, nor a Docker engine: the script runs under bash
with the variables of a job, and the image's build is checked against README, not run."""

import os
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest
from absl import flags

import pods
from bert_tf import settings
from bert_tf.errors import UserError
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.runtime import preamble
from bert_tf.training.train_settings import TrainConfig
from helpers import (
  ROOT,
  STARTED_WITH,
  TESTS,
  consecutive_free_ports,
  latest_checkpoint_step,
  one_layer_config,
  weights,
)

SBATCH = "deploy/slurm.sbatch"


def read(path: str) -> str:
  return open(os.path.join(ROOT, path), encoding="utf-8").read()


def documented(prefix: str) -> list[str]:
  """The first command of docs/cluster.md's code lines that starts with `prefix`, as words."""
  for line in read("docs/cluster.md").splitlines():
    if line.startswith("    ") and line.strip().startswith(prefix):
      return shlex.split(line)
  raise AssertionError(f"docs/cluster.md shows no `{prefix} ...` command")


def submit(tmp_path, args, cwd=ROOT, **variables):
  """`sbatch deploy/slurm.sbatch ARGS` as Slurm runs the job once allocated: the script under
  bash in the submitting directory (`cwd`: the repository's root), with the variables of a job
  of two tasks on 127.0.0.1 and the submitting environment: this test process's as it
  started, TensorFlow's logging as a user has it, no venv, conda or BERT_TF_PYTHON but those
  `variables` give; `srun` is tests/srun.py. The completed process."""
  bin_dir = tmp_path / "slurm-bin"
  bin_dir.mkdir(exist_ok=True)
  (bin_dir / "srun").write_text(
      f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(TESTS)}/srun.py "$@"\n')
  (bin_dir / "srun").chmod(0o755)
  environment = {name: value for name, value in STARTED_WITH.items()
                 if not name.startswith("SLURM_") and name not in (
                     "VIRTUAL_ENV", "CONDA_PREFIX", "BERT_TF_PYTHON", "TF_CONFIG",
                     "TF_CPP_MIN_LOG_LEVEL")}
  job = dict(SLURM_JOB_ID="4242", SLURM_JOBID="4242", SLURM_JOB_NAME="bert-pretraining",
             SLURM_JOB_NODELIST="127.0.0.1", SLURM_NODELIST="127.0.0.1",
             SLURM_JOB_NUM_NODES="1", SLURM_NNODES="1", SLURM_NTASKS="2", SLURM_NPROCS="2",
             SLURM_TASKS_PER_NODE="2", SLURM_SUBMIT_DIR=cwd)
  path = f"{bin_dir}{os.pathsep}{variables.pop('PATH', environment['PATH'])}"
  return subprocess.run(["bash", os.path.join(ROOT, SBATCH), *args], cwd=cwd,
                        capture_output=True, text=True, timeout=600,
                        env={**environment, **job, "PATH": path, **variables})


def fake_python(path, answers=True):
  """A `python` at `path` that says which it is and what it was given, as each task runs it,
  and answers the script's import check (or fails it)."""
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with open(path, "w") as f:
    f.write('#!/bin/sh\n[ "$1" = -c ] && exit ' + ("0" if answers else "1") + "\n"
            'echo "task $SLURM_PROCID of $SLURM_STEP_NUM_TASKS on $SLURM_STEP_NODELIST: $0 $*"\n')
  os.chmod(path, 0o755)
  return str(path)


def test_a_slurm_job_without_a_usable_flagfile_stops_in_one_line(tmp_path):
  line = "error: no flagfile: sbatch deploy/slurm.sbatch MY.flags [more flags] (docs/cluster.md)"
  assert f"    {line}\n" in read("docs/cluster.md")  # the line the doc shows
  python = dict(BERT_TF_PYTHON=fake_python(tmp_path / "python"))
  for args, said in (([], line), (["--train_steps=5"], line),
                     ([str(tmp_path / "missing.flags")],
                      f"error: the flagfile {tmp_path / 'missing.flags'} is not a readable file "
                      f"in {ROOT}")):
    result = submit(tmp_path, args, **python)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", said + "\n")
  flagfile = tmp_path / "MY.flags"
  flagfile.write_text("--train_steps=5\n")
  outside = subprocess.run(["bash", SBATCH, str(flagfile)], cwd=ROOT, capture_output=True,
                           text=True, env={"PATH": os.environ["PATH"]})
  assert (outside.returncode, outside.stderr) == (
      2, f"error: not in a Slurm job: submit it, sbatch deploy/slurm.sbatch {flagfile}\n")
  result = submit(tmp_path, [str(flagfile)], cwd=str(tmp_path), **python)
  assert (result.returncode, result.stdout, result.stderr) == (
      2, "", f"error: no train.py in {tmp_path}: submit from the repository's root\n")
  result = submit(tmp_path, [str(flagfile)],
                  BERT_TF_PYTHON=fake_python(tmp_path / "bare" / "python", answers=False))
  assert (result.returncode, result.stdout) == (2, "")
  assert result.stderr == (f"error: {tmp_path / 'bare' / 'python'} cannot import tensorflow and "
                           "bert_tf: submit from the environment README installs, or set "
                           "BERT_TF_PYTHON\n")


def test_every_task_runs_the_submitting_environments_python_with_the_flagfile_and_flags(
    tmp_path):
  flagfile = tmp_path / "MY.flags"
  flagfile.write_text("--train_steps=5\n")
  venv, conda, chosen, on_path = (fake_python(tmp_path / name / "bin" / "python")
                                  for name in ("venv", "conda", "chosen", "path"))
  os.symlink(on_path, tmp_path / "path" / "bin" / "python3")
  for variables, python in (
      (dict(VIRTUAL_ENV=str(tmp_path / "venv"), CONDA_PREFIX=str(tmp_path / "conda")), venv),
      (dict(CONDA_PREFIX=str(tmp_path / "conda")), conda),
      (dict(BERT_TF_PYTHON=chosen, VIRTUAL_ENV=str(tmp_path / "venv")), chosen),
      (dict(PATH=f"{tmp_path / 'path' / 'bin'}{os.pathsep}{os.environ['PATH']}"),
       str(tmp_path / "path" / "bin" / "python3"))):
    result = submit(tmp_path, [str(flagfile), "--seed=7"], **variables)
    assert result.returncode == 0, result.stderr
    launched, *tasks = result.stdout.splitlines()
    assert launched.startswith(f"job 4242: 2 tasks on 127.0.0.1 run {python} train.py ")
    command = (f"{python} train.py --cluster=slurm --cluster_port=8476 --cluster_timeout=600 "
               f"--flagfile={flagfile} --seed=7")
    assert sorted(tasks) == [f"{i}: task {i} of 2 on 127.0.0.1: {command}" for i in range(2)]


def train_flags(argv):
  """train.py's flags parsed from `argv` (a fresh set of flags, flagfiles read): the config."""
  flag_values = flags.FlagValues()
  settings.define_flags(TrainConfig, flag_values)
  flag_values(["train.py", *argv])
  return settings.from_flags(TrainConfig, flag_values)


def test_a_launched_cluster_trains_as_multi_worker_or_is_refused(tmp_path):
  for cluster in ("slurm", "kubernetes"):
    assert train_flags([f"--cluster={cluster}"]).strategy == "multi_worker"
    assert FinetuneConfig(cluster=cluster).strategy == "multi_worker"
    assert train_flags([f"--cluster={cluster}", "--strategy=multi_worker"]).strategy == (
        "multi_worker")
  assert train_flags([]).strategy == "default"
  assert train_flags(["--strategy=mirrored"]).strategy == "mirrored"
  for strategy in ("default", "mirrored", "tpu"):
    config = train_flags(["--cluster=slurm", f"--strategy={strategy}",
                          f"--model_dir={tmp_path / 'run'}"])
    with pytest.raises(UserError, match=rf"^--cluster=slurm trains its workers together "
                                        rf"\(--strategy=multi_worker\); --strategy={strategy} "
                                        "would train each alone: drop --strategy$"):
      preamble.create(config)  # the first thing a run does
  assert not os.path.exists(tmp_path / "run")
  with pytest.raises(UserError, match="^--cluster=kubernetes trains its workers together"):
    FinetuneConfig(cluster="kubernetes", strategy="mirrored", model_dir="m",
                   output_dir="o").check()


def test_the_manifest_runs_the_configmaps_flagfile_in_the_dockerfiles_image(tmp_path):
  service, job = pods.indexed_job()
  pod = job["spec"]["template"]["spec"]
  (container,) = pod["containers"]
  # The flagfile: the ConfigMap that docs/cluster.md's command makes, mounted where the
  # manifest's --flagfile reads it, its last argument (the user's flags win).
  command = documented("kubectl create configmap")
  name, (key, source) = command[3], command[4].removeprefix("--from-file=").split("=")
  assert command[:3] == ["kubectl", "create", "configmap"] and source == "MY.flags"
  (volume,) = [v for v in pod["volumes"] if v.get("configMap", {}).get("name") == name]
  (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
  assert container["args"][-1] == f"--flagfile={mount['mountPath']}/{key}"

  my_flags = tmp_path / "MY.flags"
  my_flags.write_text("--model_dir=/runs/my_run\n--train_steps=7\n")
  config = train_flags([f"--flagfile={my_flags}" if arg.startswith("--flagfile=") else arg
                        for arg in container["args"]])
  assert (config.model_dir, config.train_steps) == ("/runs/my_run", 7)
  assert (config.cluster, config.strategy) == ("kubernetes", "multi_worker")
  assert config.cluster_workers == job["spec"]["completions"] == job["spec"]["parallelism"]
  assert config.cluster_service == service["metadata"]["name"] == pod["subdomain"]
  assert train_flags(container["args"][:-1]).model_dir.startswith(
      tuple(m["mountPath"] + "/" for m in container["volumeMounts"]
            if m["name"] != volume["name"]))  # by default on the volume every pod sees

  # The image: the one docs/cluster.md builds from the Dockerfile, run in its working
  # directory, where train.py is.
  assert documented("docker build") == ["docker", "build", "-t", container["image"], "."]
  dockerfile = read("Dockerfile")
  (workdir,) = re.findall(r"^WORKDIR (\S+)$", dockerfile, re.MULTILINE)
  assert container["workingDir"] == workdir and container["command"] == ["python", "train.py"]
  assert re.search(r"^COPY \. \.$", dockerfile, re.MULTILINE)


def test_the_dockerfile_installs_the_project_as_readme_does():
  """The image's Python is README's, and it installs the project with README's pip command
  and extras but the test extra; its CUDA libraries are those of the TensorFlow release
  setup.py pins."""
  readme, dockerfile = read("README.md"), read("Dockerfile")
  ((python, extras),) = re.findall(r'python(3\.\d+) -m venv .*pip install -e "\.(?:\[(.*)\])?"',
                                  readme)
  assert re.findall(r"^FROM python:(\S+?)-slim$", dockerfile, re.MULTILINE) == [python]
  installs = re.findall(r"^RUN pip install (.*)$", dockerfile, re.MULTILINE)
  kept = ",".join(sorted(set(extras.split(",")) - {"test", ""}))
  assert [shlex.split(words) for words in installs if words.startswith("-e ")] == [
      ["-e", f".[{kept}]" if kept else "."]]
  (pinned,) = re.findall(r'"tensorflow(~=[\d.]+)"', read("setup.py"))
  assert f'"tensorflow[and-cuda]{pinned}"' in installs


@pytest.mark.e2e
def test_the_documented_slurm_submission_trains_both_tasks_together(tmp_path, data_dir,
                                                                    vocab_file):
  """docs/cluster.md's `sbatch` command, its MY.flags a tiny run's (a one-layer bert_tiny, 6
  steps, on the job's two tasks on 127.0.0.1, each listening on a port of its own), one flag
  more after it (4 steps, which every task takes): both tasks train together, the chief
  writing --model_dir and its checkpoints, the other its own copy, to the same weights."""
  command = documented("sbatch ")
  assert command[:3] == ["sbatch", SBATCH, "MY.flags"], command
  model_dir = tmp_path / "run"
  my_flags = tmp_path / "MY.flags"
  my_flags.write_text("\n".join([
      f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
      f"--config={one_layer_config(vocab_file)}", f"--model_dir={model_dir}", "--seq_length=64",
      "--max_predictions_per_seq=10", "--global_batch_size=8", "--train_steps=6",
      "--checkpoint_every=2", "--warmup_steps=1", "--eval_steps=1", "--noserving_export",
      "--verbose=false", f"--cluster_port={consecutive_free_ports(2)}", "--cluster_timeout=120"]))
  result = submit(tmp_path, [str(my_flags), *command[3:], "--train_steps=4"],
                  VIRTUAL_ENV=sys.prefix, CUDA_VISIBLE_DEVICES="")
  assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
  assert result.stdout.startswith(
      f"job 4242: 2 tasks on 127.0.0.1 run {sys.prefix}/bin/python train.py ")
  for task in range(2):
    assert (f"{task}: Input pipeline {task} of 2, 4 examples per replica"
            in result.stderr.splitlines())

  other = model_dir / "workers" / "worker-1"
  assert latest_checkpoint_step(model_dir) == latest_checkpoint_step(other) == 4
  chief, copy = weights(str(model_dir)), weights(str(other))
  assert chief.keys() == copy.keys() and len(chief) > 10
  for name in chief:
    np.testing.assert_array_equal(chief[name], copy[name], err_msg=name)
  assert os.path.exists(model_dir / "metrics.json") and not os.path.exists(other / "workers")

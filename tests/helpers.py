"""What several test files need: running the project in a fresh process, a script's preamble
for two logical CPUs and a tiny model, small synthetic batches, reading saved weights,
waiting for a checkpoint to become the latest before killing a run, reading a fine-tuned
export's verification line, another run's lock, original BERT's record features, what a
module's fixture logged (`Logged`). (No test module imports another: what two share is here,
or in a module of its own such as finetune_files.py.)

Nothing here imports TensorFlow at import time: a subprocess script imports this module before
it splits the CPU into logical devices, which must happen before TensorFlow starts.
"""

import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import h5py
import numpy as np

import processes

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)

# What the console of a command must not show by default (a user's environment, no log level).
NOISE = re.compile(
    r"absl::InitializeLog|oneDNN|TF_ENABLE_ONEDNN_OPTS|cuda|cuInit|cpu_feature_guard"
    r"|shuffle=True|UserWarning|Sharding callback|Assets written|fingerprint"
    r"|signature_serialization|unsupported characters|^[IWE]\d{4} ", re.MULTILINE)


# The environment this test process started with: what libraries write into `os.environ` later
# (torch, once a test imports it, sets TORCHINDUCTOR_CACHE_DIR) reaches no command, and does
# not make every later command differ from the warm Python's and start in a fresh interpreter.
STARTED_WITH = dict(os.environ)


def environment(as_user=False, **variables):
  """A fresh process's environment: the one this test process started with, with this
  checkout's bert_tf and this module importable from any directory and TensorFlow's C++
  logging quiet, or (`as_user`) with TensorFlow's logging as a user has it (no level set);
  `variables` on top."""
  env = {name: value for name, value in STARTED_WITH.items()
         if not (as_user and name == "TF_CPP_MIN_LOG_LEVEL")}
  if not as_user:
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
  env["PYTHONPATH"] = os.pathsep.join(filter(None, [TESTS, ROOT, STARTED_WITH.get("PYTHONPATH")]))
  return {**env, **variables}


# The start of a script that needs two replicas on this machine's CPU and a tiny BERT (one
# layer: the scripts compare updates, not what layers learn) over a vocabulary of 60 ids,
# dropout off (so that runs compare to float32 rounding).
TWO_CPUS_TINY_BERT = r"""
import json
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
import keras
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model

CONFIG = BertConfig.from_preset("bert_tiny", vocab_size=60, max_position_embeddings=16,
                                num_hidden_layers=1, hidden_dropout_prob=0.0,
                                attention_probs_dropout_prob=0.0)
"""
# The tiny train.py run that conftest's `finished_run` makes once for the tests that read a
# finished model_dir: started as a user starts it, it learns its vocabulary (into model_dir),
# holds out a fifth of the documents, logs every 2 steps, checkpoints and evaluates every 4.
TINY_RUN_STEPS = 12
TINY_RUN = ["--config=bert_tiny", "--seq_length=64", "--max_predictions_per_seq=10",
            "--global_batch_size=8", f"--train_steps={TINY_RUN_STEPS}", "--checkpoint_every=4",
            "--log_every=2", "--warmup_steps=2", "--eval_steps=2"]
TINY_RUN_VOCABULARY = "new_vocab.txt"  # in its model_dir


def tiny_run(model_dir, data_dir):
  """The arguments of `TINY_RUN` in `model_dir` (for `run`)."""
  return ["train.py", f"--data_dir={data_dir}",
          f"--vocab_file={os.path.join(model_dir, TINY_RUN_VOCABULARY)}",
          f"--model_dir={model_dir}", "--eval_fraction=0.2", *TINY_RUN]


# bert_tiny with one layer instead of two, sized to conftest's `vocab_file` (which writes it
# beside the vocabulary): for the runs whose tests check the run around the model (resuming,
# failing input, changed settings, clusters), not what two layers learn. A layer less is about
# a fifth less of each run (measured: a RESUMABLE run in a warm process, 8.0-9.0 -> 6.7-6.9
# CPU-seconds).
ONE_LAYER_CONFIG = "bert_tiny_one_layer.json"


def one_layer_config(vocab_file):
  """The path of the one-layer bert_tiny written beside `vocab_file` (conftest's)."""
  return os.path.join(os.path.dirname(vocab_file), ONE_LAYER_CONFIG)


# A tiny run to interrupt and resume: 12 steps, a checkpoint every 2, dropout on (the preset's),
# seed fixed, no serving export (its own tests write and check it); as
# `TrainConfig` fields, and as train.py's flags; the model is `one_layer_config`.
RESUMABLE_STEPS = 12
RESUMABLE_CONFIG = dict(seq_length=64, max_predictions_per_seq=10,
                        global_batch_size=8, train_steps=RESUMABLE_STEPS, checkpoint_every=2,
                        warmup_steps=2, eval_steps=1, verbose=False, seed=3,
                        serving_export=False)
RESUMABLE = [f"--{name}={value}" for name, value in RESUMABLE_CONFIG.items()]


def resumable_run(model_dir, data_dir, vocab_file, *extra):
  """The arguments of `RESUMABLE` in `model_dir` (for `run` or `start`), `extra` after."""
  return ["train.py", f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
          f"--model_dir={model_dir}", f"--config={one_layer_config(vocab_file)}", *RESUMABLE,
          *extra]

# The start of a script for `start_workers`: `train_as_worker(**settings)` trains the one-layer
# bert_tiny (`one_layer_config`) as this process's worker of the cluster, on the data_dir,
# vocab_file and model_dir given as the script's arguments, logging at INFO (where the tests
# read what the run did).
TRAIN_AS_WORKER = r"""
import logging, sys
logging.basicConfig(level=logging.INFO)
from bert_tf.training.trainer import TrainConfig, train
from helpers import one_layer_config
data_dir, vocab_file, model_dir = sys.argv[1:4]

def train_as_worker(**settings):
  train(TrainConfig(data_dir=data_dir, vocab_file=vocab_file, model_dir=model_dir,
                    strategy="multi_worker", config=one_layer_config(vocab_file), warmup_steps=1,
                    verbose=0, **settings))
"""


def run(args, timeout=600, cwd=ROOT, as_user=False, fresh=False, program=sys.executable,
        **variables):
  """`python *args` (or `program *args`) in a new process, in the repository's root unless
  `cwd`, with `environment(as_user, **variables)`; the completed process, its output as text.
  Every test that starts a process starts it here or in `start`: forked from a Python that has
  imported TensorFlow already (`processes.py`), or in a fresh interpreter when `fresh`,
  `as_user` or the variables ask for what happens before TensorFlow is imported."""
  if program != sys.executable:
    return subprocess.run([program, *args], cwd=cwd, env=environment(as_user, **variables),
                          capture_output=True, text=True, timeout=timeout)
  process = start(args, cwd=cwd, as_user=as_user, fresh=fresh, **variables)
  try:
    stdout, stderr = process.communicate(timeout=timeout)
  except subprocess.TimeoutExpired:
    process.kill()
    process.wait()
    raise
  return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def start(args, stdout=subprocess.PIPE, cwd=ROOT, as_user=False, fresh=False, **variables):
  """`python *args` started as `run` does, stderr piped (stdout too unless told); the running
  process (a `subprocess.Popen`, or its likeness from `processes.py`)."""
  return processes.popen(args, cwd, environment(as_user, **variables), environment(),
                         stdout=stdout, fresh=fresh or as_user)


def run_script(script, *args, timeout=900):
  """Runs `script` with `python -c` (`args` its arguments); what it printed as JSON on its
  last line."""
  result = run(["-c", script, *args], timeout=timeout)
  assert result.returncode == 0, result.stderr[-3000:]
  return json.loads(result.stdout.strip().splitlines()[-1])


def masked_slots(rng, counts, seq_length, slots):
  """Masked-LM slots with `counts[row]` real ones in each row (distinct positions after [CLS],
  in order) and the rest padding (position 0, weight 0): (positions, weights)."""
  positions = np.zeros((len(counts), slots), "int32")
  weights = np.zeros((len(counts), slots), "float32")
  for row, count in enumerate(counts):
    positions[row, :count] = np.sort(rng.choice(np.arange(1, seq_length), count, replace=False))
    weights[row, :count] = 1.0
  return positions, weights


def tiny_bert():
  """bert_tiny with one layer, over a vocabulary of 53 ids and 32 positions (dropout as the
  preset's)."""
  from bert_tf.model.bert_config import BertConfig
  return BertConfig.from_preset("bert_tiny", vocab_size=53, max_position_embeddings=32,
                                num_hidden_layers=1)


def small_batch(vocab_size=53, seq_length=16, slots=5):
  """4 examples with 5, 3, 1 and 4 real masked slots: (features, labels, sample weights)."""
  rng = np.random.default_rng(1)
  batch = 4
  features = {
      "token_ids": rng.integers(5, vocab_size, (batch, seq_length)).astype("int32"),
      "segment_ids": np.zeros((batch, seq_length), "int32"),
      "padding_mask": np.ones((batch, seq_length), "int32"),
  }
  features["masked_positions"], weights = masked_slots(rng, [5, 3, 1, 4], seq_length, slots)
  labels = {"mlm": np.where(weights > 0, rng.integers(5, vocab_size, (batch, slots)),
                            0).astype("int32"),
            "nsp": np.array([1, 0, 1, 1], "int32")}
  return features, labels, {"mlm": weights, "nsp": np.ones(batch, "float32")}


def weights(path):
  """The arrays of a Keras weights file (`model.weights.h5`, or the one in the directory
  `path`), by their name in it."""
  if not path.endswith(".h5"):
    path = os.path.join(path, "model.weights.h5")
  values = {}

  def keep(name, item):  # returns None: `visititems` stops at the first other return value
    if isinstance(item, h5py.Dataset):
      values[name] = np.array(item)

  with h5py.File(path, "r") as f:
    f.visititems(keep)
  return values


def free_ports(count):
  """`count` TCP ports free on 127.0.0.1 just now."""
  sockets = [socket.socket() for _ in range(count)]
  for s in sockets:
    s.bind(("127.0.0.1", 0))
  ports = [s.getsockname()[1] for s in sockets]
  for s in sockets:
    s.close()
  return ports


# The end of every worker's script (`start_workers` adds it): once the script is done, the
# process ends at once, without the interpreter's teardown, in which TensorFlow's multi-worker
# runtime waits 7-8 s and then computes for 3 s more (measured: two workers on one core, 11 of
# a run's 44 s). Nothing a test checks happens there; a script that fails exits as Python does.
EXIT_AT_ONCE = """
import os as _os, sys as _sys
_sys.stdout.flush()
_sys.stderr.flush()
_os._exit(0)
"""


def tf_config(addresses, index):
  """The TF_CONFIG of worker `index` of a cluster of workers at `addresses`."""
  return json.dumps({"cluster": {"worker": list(addresses)},
                     "task": {"type": "worker", "index": index}})


def start_workers(script, args, count=2, stdout=subprocess.PIPE):
  """`count` processes running `script` with `args`, one worker each of a cluster on
  127.0.0.1 (TF_CONFIG), on CPU; stderr is piped."""
  addresses = [f"127.0.0.1:{port}" for port in free_ports(count)]
  return [start(["-c", script + EXIT_AT_ONCE, *args], stdout=stdout, CUDA_VISIBLE_DEVICES="",
                TF_CONFIG=tf_config(addresses, index))
          for index in range(count)]


def consecutive_free_ports(count):
  """The first of `count` consecutive TCP ports free on 127.0.0.1 just now."""
  while True:
    first = free_ports(1)[0]
    if first + count <= 65536 and all(_is_free(first + i) for i in range(1, count)):
      return first


def _is_free(port):
  with socket.socket() as s:
    try:
      s.bind(("127.0.0.1", port))
      return True
    except OSError:
      return False


def slurm_step(index, count, node="127.0.0.1"):
  """The variables `srun` gives task `index` of a job step of `count` tasks on one node."""
  return dict(SLURM_PROCID=str(index), SLURM_STEP_NUM_TASKS=str(count),
              SLURM_STEP_NODELIST=node, SLURM_STEP_TASKS_PER_NODE=str(count))


def start_slurm_workers(script, args, count=2, stdout=subprocess.PIPE):
  """`count` processes running `script` with `args` and then the first of `count` free ports,
  each a task of one Slurm job step on 127.0.0.1 (Slurm's variables, no TF_CONFIG), on CPU;
  stderr is piped."""
  port = consecutive_free_ports(count)
  return [start(["-c", script + EXIT_AT_ONCE, *args, str(port)], stdout=stdout,
                CUDA_VISIBLE_DEVICES="", **slurm_step(index, count))
          for index in range(count)]


def finish(processes, timeout=600):
  """Waits for each process, which must succeed; their stderr, in order."""
  outputs = [process.communicate(timeout=timeout)[1] for process in processes]
  for process, stderr in zip(processes, outputs):
    assert process.returncode == 0, stderr[-3000:]
  return outputs


def latest_checkpoint_step(model_dir):
  """The step of the checkpoint that `model_dir`'s `checkpoint` state file names as the latest
  (-1 while there is none)."""
  state = os.path.join(model_dir, "checkpoints", "checkpoint")
  found = os.path.exists(state) and re.search(r'^model_checkpoint_path: "ckpt-(\d+)"',
                                              open(state).read(), re.MULTILINE)
  return int(found.group(1)) if found else -1


def wait_for_checkpoint(model_dirs, step, processes, timeout=300):
  """Waits until the `checkpoint` state file of each of `model_dirs` names `ckpt-{step}` (or a
  later one) as the latest, while `processes` run. A checkpoint's files are written before the
  state file names it, so a kill from then on loses nothing of it; a kill as soon as its files
  exist can leave the previous checkpoint the latest, and the re-run rightly resumes from it."""
  start = time.time()
  while min(latest_checkpoint_step(d) for d in model_dirs) < step:
    for process in processes:
      assert process.poll() is None, process.stderr.read()[-3000:]
    assert time.time() - start < timeout, f"ckpt-{step} never became the latest"
    time.sleep(0.05)


def randomised_model(config, seed=0, stddev=0.2):
  """A pre-training model whose every weight is random (biases and layer norms too), so that a
  weight put in the wrong place or orientation shows in the outputs."""
  from bert_tf.model.pretraining import pretraining_model
  model = pretraining_model(config)
  rng = np.random.default_rng(seed)
  for variable in model.weights:
    variable.assign(rng.normal(0, stddev, variable.shape).astype("float32")
                    + (1.0 if variable.path.endswith("gamma") else 0.0))
  return model


# What a fine-tuned SavedModel's check says (`verified(line, kind)` reads it).
VERIFIED = re.compile(r"^verified: (classify|regress|tag|answer|choose) savedmodel(?: words, "
                      r"word_offsets equal)?, largest output difference (\S+) \((\w+); "
                      r"tolerance 1e-04\)$")


def verified(line, kind):
  """Checks the verification line of a `kind` export; returns the compared output it names."""
  match = VERIFIED.match(line)
  assert match and match[1] == kind, line
  assert float(match[2]) <= 1e-4
  assert ("words" in line) == (kind == "tag")
  return match[3]


def write_lock(model_dir, **changes):
  """A run lock in `model_dir` as another run holds it (its host, an old pid and start, a fresh
  heartbeat), `changes` on top."""
  import tensorflow as tf

  from bert_tf.runtime import run_lock
  record = {"host": socket.gethostname(), "pid": 1, "started": 1_700_000_000.0,
            "heartbeat": time.time(), "token": "other", **changes}
  tf.io.gfile.makedirs(model_dir)
  with tf.io.gfile.GFile(os.path.join(model_dir, run_lock.LOCK_FILE), "w") as f:
    f.write(json.dumps(record))


def original_spec(max_seq_length, max_predictions_per_seq):
  """google-research/bert run_pretraining.py's `name_to_features`, as it is there."""
  import tensorflow as tf
  return {
      "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
      "masked_lm_positions": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
      "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
      "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
      "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
  }


# A second real corpus, of another domain than the built-in one: the docstrings of a few
# standard-library modules about mail and the web (benchmarks/docstrings_corpus.py makes the
# whole library's), about 60 KB, one module a document.
DOCSTRING_MODULES = ("smtplib.py", "imaplib.py", "http/client.py", "email/message.py",
                     "mailbox.py")


def docstring_corpus(directory) -> str:
  """Writes the docstrings of DOCSTRING_MODULES as a corpus file in `directory`; its path."""
  import importlib.util
  import sysconfig
  spec = importlib.util.spec_from_file_location(
      "docstrings_corpus", os.path.join(ROOT, "benchmarks", "docstrings_corpus.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  stdlib = sysconfig.get_paths()["stdlib"]
  path = os.path.join(str(directory), "docstrings.txt")
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join("\n".join(module.module_document(os.path.join(stdlib, name))) + "\n"
                      for name in DOCSTRING_MODULES))
  return path


def write_output_dir(directory, model, config, vocabulary, task):
  """What a fine-tune leaves in its output_dir, as the fine-tuning contract says: task.json
  (`task`), bert_config.json, vocab.txt and the task model's weights."""
  import tensorflow as tf

  from bert_tf import files
  os.makedirs(directory, exist_ok=True)
  files.write_json(os.path.join(directory, "task.json"), task)
  files.write_json(os.path.join(directory, "bert_config.json"), config.to_dict())
  tf.io.gfile.copy(vocabulary.path, os.path.join(directory, "vocab.txt"))
  model.save_weights(os.path.join(directory, "model.weights.h5"))
  return directory


def write_choices(path, count, seed):
  """A multiple-choice task in JSON Lines of `count` rows of two to four endings (so padded
  with absent ones): the right ending repeats a word of its context, the others do not."""
  words = ["function", "class", "return", "value", "object", "method", "debugger", "frame",
           "stack", "command", "line", "breakpoint"]
  generator = np.random.default_rng(seed)
  rows = []
  for _ in range(count):
    context = [str(word) for word in generator.choice(words, 3, replace=False)]
    others = [word for word in words if word not in context]
    endings = [" ".join(generator.choice(others, 2)) for _ in range(generator.integers(2, 5))]
    label = int(generator.integers(len(endings)))
    endings[label] = f"{generator.choice(others)} {generator.choice(context)}"
    rows.append(json.dumps({"context": " ".join(context), "endings": endings, "label": label}))
  path.write_text("\n".join(rows) + "\n", encoding="utf-8")
  return str(path)


class Logged(logging.Handler):
  """What caplog holds, for a module's fixture (caplog is a test's): every record that reaches
  the root logger, bert_tf's from INFO on, while `with Logged() as logged:` runs."""

  def __init__(self):
    super().__init__(logging.NOTSET)
    self.records = []

  def emit(self, record):
    self.records.append(record)

  @property
  def text(self) -> str:
    return "\n".join(record.getMessage() for record in self.records)

  def __enter__(self):
    self.level_before = logging.getLogger("bert_tf").level
    logging.getLogger("bert_tf").setLevel(logging.INFO)
    logging.getLogger().addHandler(self)
    return self

  def __exit__(self, *exception):
    logging.getLogger().removeHandler(self)
    logging.getLogger("bert_tf").setLevel(self.level_before)


def shape_of_no_preset(vocab_size: int):
  """A shape that no preset has: only its model says it."""
  from bert_tf.model.bert_config import BertConfig
  return BertConfig(vocab_size=vocab_size, hidden_size=96, num_hidden_layers=2,
                    num_attention_heads=3, intermediate_size=160, max_position_embeddings=128)


def published_model(vocab_file: str, write_tf1_checkpoint, google_dir: str, hf_dir: str):
  """A small model of `shape_of_no_preset`, written as a
  published BERT is in both layouts: `google_dir` as Google's releases are (bert_config.json,
  vocab.txt, bert_model.ckpt.*), `hf_dir` a Hugging Face directory. Returns its shape."""
  from bert_tf.data.tokenization import Vocabulary
  from bert_tf.interop.huggingface import export_huggingface
  from bert_tf.interop.state import model_state
  from bert_tf.model.pretraining import pretraining_model

  vocabulary = Vocabulary(vocab_file)
  shape = shape_of_no_preset(len(vocabulary))
  model = pretraining_model(shape)
  write_tf1_checkpoint(model_state(model, shape), shape, google_dir)
  shutil.copy(vocab_file, os.path.join(google_dir, "vocab.txt"))
  export_huggingface(model, shape, vocabulary, hf_dir, lower_case=True)
  return shape


# A small Keras model and its `Checkpointer` (3 kept), for the tests of checkpointing and of a
# restore in a fresh process.
def make_checkpointer(directory, seed=0):
  import keras

  from bert_tf.data.data_position import DataPosition
  from bert_tf.runtime import checkpointing
  keras.utils.set_random_seed(seed)
  model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
  model.compile(optimizer=keras.optimizers.Adam(0.1), loss="mse")
  model.optimizer.build(model.trainable_variables)
  return checkpointing.Checkpointer(directory, model, model.optimizer, keep=3,
                                    data_position=DataPosition(1).last_consumed)


def train_and_save(checkpointer, steps):
  """`steps` training steps of the checkpointer's model, each saved."""
  x, y = np.ones((8, 4), "float32"), np.ones((8, 1), "float32")
  for _ in range(steps):
    checkpointer.model.train_on_batch(x, y)
    checkpointer.save()

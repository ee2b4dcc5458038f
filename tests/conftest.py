"""Shared fixtures, made once per `pytest` run (the first test process to need one makes it,
the other waits and reads it): the built-in corpus, a vocabulary learned from it, a finished
tiny run, a tiny encoder and one of a single layer; and, for a module that asks, export
verifications forked from the warm Python."""

import fcntl
import json
import os
import shutil
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _keep_to_this_workers_cpus():
  """Under pytest-xdist, this test process and every process it starts keep to their share of
  the CPUs (worker i of n: every n-th CPU from the i-th), so that TensorFlow, which sizes its
  thread pools by the CPUs it may use, sizes them to that share. Two processes each sizing
  theirs to both of two cores made every test slower than on a core of its own (measured:
  the whole suite 35 -> 33 minutes, its CPU time 12% less). Before anything imports
  TensorFlow."""
  worker = os.environ.get("PYTEST_XDIST_WORKER")
  if worker:
    cpus = sorted(os.sched_getaffinity(0))
    index, count = int(worker.removeprefix("gw")), int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.sched_setaffinity(0, cpus[index::count] or [cpus[index % len(cpus)]])


_keep_to_this_workers_cpus()

import pytest  # noqa: E402

import group_timings  # noqa: E402
import processes  # noqa: E402
from helpers import one_layer_config, run, tiny_run  # noqa: E402


def pytest_configure(config):
  """TensorFlow's graph optimiser off in each process that runs tests, as in the warm Python.
  pytest-xdist's controller, which runs none, does not import TensorFlow at all: its import
  was 3.5 s of the suite's start-up, before the test processes start. With `--record-timings`,
  the process that receives every test's report (the controller, or the only process) records
  the groups' times (`group_timings.Recorder`)."""
  if hasattr(config, "workerinput") or config.getoption("dist", "no") == "no":
    processes.without_graph_optimisation()
  if config.getoption("record_timings") and not hasattr(config, "workerinput"):
    config.pluginmanager.register(group_timings.Recorder(), "group_timings")


def pytest_addoption(parser):
  parser.addoption("--record-timings", action="store_true",
                   help="write each group's seconds to tests/group_timings.json when the run "
                        "ends, for the order in which later runs hand out the groups (run it "
                        "on the whole suite)")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items):
  """Each test in its group (`group_timings.name_groups`) before any plugin (pytest-xdist) reads
  the groups; then, once every plugin has left out what this run does not run, the groups in
  the order `group_timings.longest_first` gives."""
  group_timings.name_groups(items)
  result = yield
  items[:] = group_timings.longest_first(items, group_timings.recorded())
  return result


def pytest_xdist_node_collection_finished(node, ids):
  """Stops a run whose groups did not reach pytest-xdist, rather than let it go on slower:
  pytest 9.2 keeps node ids where pytest-xdist 3.8 can no longer add a test's group to them
  (pytest-xdist issue 1386), and every test then goes to either process alone, its module's
  fixtures (runs trained once for the module) made again in the other."""
  if node.config.getvalue("dist") == "loadgroup" and ids and "@" not in ids[0]:
    pytest.exit("pytest-xdist did not group the tests (pytest 9.2 with pytest-xdist 3.8, "
                "pytest-xdist issue 1386): pip install -e '.[test]' installs versions that do",
                returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture(autouse=True, scope="module")
def keras_state_cleared_after_each_module():
  """Keras's global state cleared once a module's tests are done, as a fresh process has it:
  a test process that kept every model an earlier module built traced later functions several
  times slower (a pairing test took 11 s after test_precision and test_learning, 1 s alone;
  under 3 s with this)."""
  yield
  if "keras" in sys.modules:
    sys.modules["keras"].backend.clear_session()


def made_once(tmp_path_factory, worker_id, name, make):
  """What `make(directory)` returned (JSON), made in `directory` by the first of this run's
  test processes to ask for `name`; the others wait for it and read what it made."""
  root = tmp_path_factory.getbasetemp()
  root = root if worker_id == "master" else root.parent  # the parent: all workers' temp
  directory, made = root / name, root / f"{name}.json"
  with open(root / f"{name}.lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
    if not made.exists():
      directory.mkdir(exist_ok=True)
      made.write_text(json.dumps(make(str(directory))))
    return json.loads(made.read_text())


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory, worker_id):
  """A data directory holding the built-in corpus (Python's language reference)."""
  def make(directory):
    from bert_tf.data import builtin_corpus
    builtin_corpus.corpus_pattern(directory)
    return directory
  return made_once(tmp_path_factory, worker_id, "data", make)


@pytest.fixture(scope="session")
def corpus_pattern(data_dir):
  from bert_tf.data import builtin_corpus
  return builtin_corpus.corpus_pattern(data_dir)


@pytest.fixture(scope="session")
def vocab_file(tmp_path_factory, worker_id, corpus_pattern):
  """A real WordPiece vocabulary (about 3,400 tokens) learned from the built-in corpus; beside
  it, bert_tiny of one layer sized to it (`helpers.one_layer_config`)."""
  def make(directory):
    from bert_tf.data.tokenization import Vocabulary
    from bert_tf.data.vocabulary_learner import build_vocabulary
    from bert_tf.model.bert_config import BertConfig
    path = os.path.join(directory, "vocab.txt")
    build_vocabulary(corpus_pattern, path, vocab_size=8000)
    BertConfig.from_preset("bert_tiny", vocab_size=len(Vocabulary(path)),
                           num_hidden_layers=1).to_json_file(one_layer_config(path))
    return path
  return made_once(tmp_path_factory, worker_id, "vocabulary", make)


def _write_tf1_checkpoint(state, config, directory, extra=()):
  """An original-BERT-format checkpoint (TF1 variable names, `bert_model.ckpt` and
  `bert_config.json` in `directory`) made from a canonical state; returns its variable names."""
  import tensorflow as tf
  variables = {}
  for name, value in state.items():
    if name == "cls.predictions.bias":
      variables["cls/predictions/output_bias"] = value
    elif name.startswith("cls.seq_relationship."):
      variables["cls/seq_relationship/output_" + (
          "weights" if name.endswith("weight") else "bias")] = value
    else:
      parts = name.replace("layer.", "layer_").split(".")
      is_embedding = parts[-2].endswith("_embeddings")
      if is_embedding:
        variables["/".join(parts[:-1])] = value
      elif parts[-2] == "LayerNorm":
        variables["/".join(parts[:-1]) + ("/gamma" if parts[-1] == "weight" else "/beta")] = value
      else:
        variables["/".join(parts[:-1]) + ("/kernel" if parts[-1] == "weight" else "/bias")] = (
            value.T if parts[-1] == "weight" else value)
  variables.update(extra)
  os.makedirs(directory, exist_ok=True)
  with tf.Graph().as_default():
    created = [tf.compat.v1.get_variable(name, initializer=tf.constant(value))
               for name, value in variables.items()]
    saver = tf.compat.v1.train.Saver(created)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      saver.save(session, os.path.join(directory, "bert_model.ckpt"))
  config.to_json_file(os.path.join(directory, "bert_config.json"))
  return sorted(variables)


@pytest.fixture(scope="session")
def write_tf1_checkpoint():
  """`write_tf1_checkpoint(state, config, directory, extra={})`: see `_write_tf1_checkpoint`."""
  return _write_tf1_checkpoint


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory, worker_id, data_dir):
  """`helpers.TINY_RUN` trained to its end in a fresh process with a user's environment: (its
  model_dir, the completed process). Read it; to change a model_dir, change `copy_of` it."""
  def make(model_dir):
    result = run(tiny_run(model_dir, data_dir), timeout=1800, as_user=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return [model_dir, result.args, result.stdout, result.stderr]
  model_dir, args, stdout, stderr = made_once(tmp_path_factory, worker_id, "finished_run", make)
  return model_dir, subprocess.CompletedProcess(args, 0, stdout, stderr)


@pytest.fixture
def copy_of(tmp_path):
  """`copy_of(model_dir)`: a copy of a model_dir in this test's directory, to change."""
  def copy(model_dir):
    return shutil.copytree(model_dir, str(tmp_path / "copy"))
  return copy


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory, worker_id, vocab_file):
  """A train.py model_dir of a BERT of width 32, its weights as initialised: the encoder the
  fine-tuning tests start from (`train.py` would only add training to it)."""
  def make(directory):
    return _initialised_encoder(directory, vocab_file)
  return made_once(tmp_path_factory, worker_id, "encoder", make)


def _initialised_encoder(directory, vocab_file, num_hidden_layers=2):
  import keras

  from bert_tf.data.tokenization import Vocabulary
  from bert_tf.model.bert_config import BertConfig
  from bert_tf.model.pretraining import pretraining_model
  from bert_tf.model_dir import WEIGHTS_FILE
  from bert_tf.training.run_files import write_run_files
  from bert_tf.training.train_settings import TrainConfig
  vocabulary = Vocabulary(vocab_file)
  keras.utils.set_random_seed(0)
  config = BertConfig(vocab_size=len(vocabulary), hidden_size=32,
                      num_hidden_layers=num_hidden_layers,
                      num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
  write_run_files(TrainConfig(model_dir=directory, seq_length=32), config, vocabulary)
  pretraining_model(config).save_weights(os.path.join(directory, WEIGHTS_FILE))
  return directory


@pytest.fixture(scope="session")
def shallow_model_dir(tmp_path_factory, worker_id, vocab_file):
  """`model_dir`'s encoder with one layer instead of two: for the fine-tunes whose tests check
  the machinery around the model (runs, resumes, sweeps), not what two layers learn; a layer
  less is about a quarter less of each run's tracing and export."""
  def make(directory):
    return _initialised_encoder(directory, vocab_file, num_hidden_layers=1)
  return made_once(tmp_path_factory, worker_id, "shallow_encoder", make)


@pytest.fixture(scope="module")
def warm_verification():
  """While this module's tests run, an export's verification (`serving/verification.py`'s
  `run_process`) loads the SavedModel in a process forked from the warm Python (`helpers.run`:
  TensorFlow, tensorflow-text and Keras imported, nothing of bert_tf) instead of a fresh
  interpreter: the same command, without importing TensorFlow again."""
  from bert_tf.serving import verification

  def forked(command, **_):  # `subprocess.run`'s call of `python -c ...`; output as text
    assert command[0] == sys.executable, command
    return run(command[1:], timeout=600)

  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(verification, "run_process", forked)
    yield


@pytest.fixture(scope="session")
def hf_export_of_finished_run(tmp_path_factory, worker_id, finished_run):
  """`python -m bert_tf.export --format=hf` of `finished_run`'s model_dir, run once (it verifies
  the export: test_train.py reads what it wrote, test_export_verification.py what it said):
  (its output directory, the completed process). Read it, do not change it."""
  def make(directory):
    output = os.path.join(directory, "hf")
    result = run(["-m", "bert_tf.export", f"--model_dir={finished_run[0]}", "--format=hf",
                  f"--output={output}"])
    assert result.returncode == 0, result.stderr[-3000:]
    return [output, result.args, result.stdout, result.stderr]
  output, args, stdout, stderr = made_once(tmp_path_factory, worker_id, "hf_export", make)
  return output, subprocess.CompletedProcess(args, 0, stdout, stderr)

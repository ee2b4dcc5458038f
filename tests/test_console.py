"""The console's pieces: who asks for debug, the start-up filter, our log lines and the in-place
line. (train.py's console as a whole: test_watching.py.)"""

import logging
import os

import pytest

from bert_tf import console, settings
from bert_tf.errors import UserError
from helpers import run

STARTUP_LINES = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n",
    "I0000 00:00:1796086497.473981    5727 port.cc:153] oneDNN custom operations are on. You "
    "may see slightly different numerical results due to floating-point round-off errors from "
    "different computation orders. To turn them off, set the environment variable "
    "`TF_ENABLE_ONEDNN_OPTS=0`.\n",
    "I0000 00:00:1796086497.474361    5727 cudart_stub.cc:31] Could not find cuda drivers on "
    "your machine, GPU will not be used.\n",
    "I0000 00:00:1796086497.688666    5727 cpu_feature_guard.cc:227] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.\n",
    "To enable the following instructions: AVX2 AVX512F AVX512_VNNI AVX512_BF16 FMA, in other "
    "operations, rebuild TensorFlow with the appropriate compiler flags.\n",
    "E0000 00:00:1796086503.410772    5727 cuda_platform.cc:52] failed call to cuInit: "
    "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n",
]


@pytest.mark.parametrize("argv, debug", [
    (["train.py"], False),
    (["train.py", "--verbosity=debug"], True),
    (["train.py", "--verbosity", "DEBUG"], True),
    (["train.py", "-v", "1"], True),
    (["train.py", "-v=2"], True),
    (["train.py", "--verbosity=info"], False),
    (["train.py", "--verbosity=0"], False),
    (["train.py", "-v"], False),
    (["train.py", "--verbose=1"], False),
])
def test_asks_for_debug(argv, debug):
  assert console.asks_for_debug(argv) is debug


def test_startup_lines_are_filtered_at_the_file_descriptor_and_the_rest_kept(capfd):
  real_error = "Traceback: something really went wrong\n"
  with console._filtered_stderr(console.STARTUP_NOISE):
    for line in STARTUP_LINES[:3] + [real_error] + STARTUP_LINES[3:]:
      os.write(2, line.encode())  # as C++ code writes, below Python's sys.stderr
  assert capfd.readouterr().err == real_error


@pytest.fixture
def configured():
  """console.configure(info), Python's logging as it was afterwards."""
  import warnings

  from absl import logging as absl_logging
  ours, tensorflow = logging.getLogger("bert_tf"), logging.getLogger("tensorflow")
  saved = (ours.handlers, ours.propagate, ours.level, tensorflow.level,
           absl_logging.get_verbosity())
  with warnings.catch_warnings():
    console.configure(verbosity=0)
    yield
  ours.handlers, ours.propagate = saved[:2]
  ours.setLevel(saved[2])  # setLevel, not assignment: it clears the loggers' caches
  tensorflow.setLevel(saved[3])
  absl_logging.set_verbosity(saved[4])


def test_log_lines_are_plain_and_clear_of_the_progress_line(capsys, configured):
  log = logging.getLogger("bert_tf")
  console.status("step 1/2 | loss: 1.0000")
  log.info("checkpoint at step 1")
  log.warning("something to know")
  console.status("step 2/2 | loss: 0.5000")
  console.status("")
  captured = capsys.readouterr()
  # Each log line (on stderr) is written between a clearing and a redrawing of the line.
  assert captured.out == ("step 1/2 | loss: 1.0000" "\r\033[K"
                          "step 1/2 | loss: 1.0000" "\r\033[K"
                          "step 1/2 | loss: 1.0000" "\r\033[K" "step 2/2 | loss: 0.5000\n")
  assert captured.err == "checkpoint at step 1\nsomething to know\n"
  assert logging.getLogger("tensorflow").level == logging.WARNING


@pytest.mark.parametrize("raised,line,exit_status", [
    (UserError("no file matches 'corpus/*.txt'"), "error: no file matches 'corpus/*.txt'", 2),
    (KeyboardInterrupt(), "interrupted", 130)])
def test_a_command_ends_with_one_line_and_its_status(capsys, configured, raised, line,
                                                     exit_status):
  with pytest.raises(SystemExit) as stopped, console.errors_in_one_line():
    raise raised
  assert stopped.value.code == exit_status
  assert capsys.readouterr().err == line + "\n"


def test_debug_shows_the_traceback_before_the_line(capsys, configured):
  console.configure(verbosity=settings.VERBOSITY["debug"])
  with pytest.raises(SystemExit), console.errors_in_one_line():
    raise UserError("the vocabulary has 10 tokens, the model 53")
  err = capsys.readouterr().err
  assert err.startswith("Traceback") and err.endswith("error: the vocabulary has 10 tokens, "
                                                      "the model 53\n")


@pytest.mark.parametrize("command, message", [
    (["train.py", "--train_stpes=10"],
     "error: Unknown command line flag 'train_stpes'. Did you mean: train_steps ?"),
    (["train.py", "--train_steps=abc"],
     "error: flag --train_steps=abc: invalid literal for int() with base 10: 'abc'"),
    (["train.py", "--flagfile=/nonexistent.flags"],
     "error: Unable to open flagfile: [Errno 2] No such file or directory: "
     "'/nonexistent.flags'"),
    (["train.py", "--train_steps=5", "extra"], "error: unexpected arguments: extra"),
    (["-m", "bert_tf.export", "--bogus"], "error: Unknown command line flag 'bogus'"),
])
@pytest.mark.e2e
def test_a_flag_mistake_is_one_line_and_exit_status_2(command, message):
  result = run(command, timeout=120)
  assert (result.returncode, result.stderr.strip().splitlines()) == (2, [message])


@pytest.mark.e2e
def test_an_export_of_a_model_dir_that_is_not_there_is_its_one_line():
  """Started as a user starts it: the error alone, not the line saying what is exported first."""
  result = run(["-m", "bert_tf.export", "--model_dir=/nonexistent/run", "--format=hf",
                "--output=/nonexistent/hf"], timeout=120, as_user=True)
  assert (result.returncode, result.stderr.strip().splitlines()) == (
      2, ["error: /nonexistent/run is not found: it takes a finished train.py model_dir"])


def test_help_lists_the_settings():
  result = run(["train.py", "--help"], timeout=120)
  assert "--train_steps: Train until this optimizer update" in result.stdout


def test_a_count_of_one_is_said_in_the_singular():
  """`1 epoch`, `1 step`, `1 file` where a command says a count (`console.counted`): the
  fine-tune's plan and the training summary of a one-step run among them."""
  from bert_tf.training.watching.report import summary
  assert [console.counted(n, "epoch") for n in (0, 1, 3)] == ["0 epochs", "1 epoch", "3 epochs"]
  figures = {"steps": 1, "examples_per_second": 8.0, "mlm_accuracy": 0.1, "mlm_loss": 6.0,
             "most_frequent_token_accuracy": 0.05, "nsp_accuracy": 0.5, "nsp_loss": 0.7}
  assert summary(figures).startswith("Trained 1 step at 8 examples/s.\n")
  assert summary({**figures, "steps": 12}).startswith("Trained 12 steps at")


def test_an_mlm_only_summary_says_nothing_of_nsp():
  from bert_tf.training.watching.report import summary
  figures = {"steps": 3, "examples_per_second": 8.0, "mlm_accuracy": 0.1, "mlm_loss": 6.0,
             "most_frequent_token_accuracy": 0.05, "nsp_accuracy": 0.0, "nsp_loss": 0.0,
             "eval_mlm_accuracy": 0.1, "eval_mlm_loss": 6.1, "eval_nsp_accuracy": 0.0,
             "eval_nsp_loss": 0.0}
  assert "NSP" in summary(figures)
  assert "NSP" not in summary(figures, nsp=False)
  assert "Held out: MLM accuracy 0.100, MLM loss 6.100." in summary(figures, nsp=False)

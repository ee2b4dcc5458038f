"""Which commands the suite forks from its warm Python: those whose environment differs from
the warm Python's only in variables read after start-up; and no command sees what a library
wrote into this test process's environment. The test processes and the warm Python's commands
run with TensorFlow's graph optimiser off; a command started as a user starts it, with it on."""

import os

import pytest
import tensorflow as tf

import helpers
import processes


def test_only_start_up_variables_send_a_command_to_a_fresh_interpreter():
  warm = {"PATH": os.environ.get("PATH", ""), "TF_CPP_MIN_LOG_LEVEL": "2"}
  assert processes.can_be_warm(dict(warm), warm)
  assert processes.can_be_warm({**warm, "TF_CONFIG": "{}", "CUDA_VISIBLE_DEVICES": ""}, warm)
  assert not processes.can_be_warm({**warm, "LANG": "tr_TR.UTF-8"}, warm)
  assert not processes.can_be_warm({k: v for k, v in warm.items()
                                    if k != "TF_CPP_MIN_LOG_LEVEL"}, warm)


def test_a_variable_a_library_sets_later_reaches_no_command(monkeypatch):
  before = helpers.environment()
  monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/inductor")  # as importing torch does
  after = helpers.environment()
  assert "TORCHINDUCTOR_CACHE_DIR" not in after
  assert processes.can_be_warm(after, before)
  assert helpers.environment(LANG="tr_TR.UTF-8")["LANG"] == "tr_TR.UTF-8"


OPTIMISER_OFF = ("import tensorflow as tf; "
                 "print(tf.config.optimizer.get_experimental_options().get("
                 "'disable_meta_optimizer', False))")


@pytest.mark.e2e
def test_the_graph_optimiser_is_off_in_the_suite_and_on_for_a_user():
  assert tf.config.optimizer.get_experimental_options()["disable_meta_optimizer"]
  warm, as_user = (helpers.run(["-c", OPTIMISER_OFF], as_user=as_user) for as_user in (False, True))
  assert (warm.stdout.strip(), as_user.stdout.strip()) == ("True", "False"), (warm, as_user)


# Ends as argv[1] says: at its last line ("end"), or by SystemExit with a status or a message;
# before that, a thread still running and an exit handler registered, its last line unflushed.
EXITS = r"""
import atexit, sys, threading, time
atexit.register(lambda: print("exit handler", flush=True))
threading.Thread(target=lambda: (time.sleep(0.2), print(" thread joined", flush=True))).start()
print("last line", end="")
if sys.argv[1] != "end":
  sys.exit(int(sys.argv[1]) if sys.argv[1].isdigit() else sys.argv[1])
"""


@pytest.mark.e2e
def test_a_forked_command_ends_as_an_interpreter_ends_it():
  """Its thread joined, its exit handler run, its output flushed, SystemExit's status (a
  message: printed, then 1), as in a fresh interpreter: the warm Python skips the modules'
  teardown alone (`warm_python.end`)."""
  for argument, status, stderr in (("end", 0, ""), ("3", 3, ""), ("a message", 1, "a message\n")):
    warm, fresh = (helpers.run(["-c", EXITS, argument], fresh=fresh) for fresh in (False, True))
    for ended in (warm, fresh):
      assert (ended.returncode, ended.stdout, ended.stderr) == (
          status, "last line thread joined\nexit handler\n", stderr), (argument, ended)

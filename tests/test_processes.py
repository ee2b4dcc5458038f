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

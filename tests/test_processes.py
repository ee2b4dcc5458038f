"""Which commands the suite forks from its warm Python: those whose environment differs from
the warm Python's only in variables read after start-up; and no command sees what a library
wrote into this test process's environment."""

import os

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

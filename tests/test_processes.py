"""Which commands the suite forks from its warm Python: those whose environment differs from
the warm Python's only in variables read after start-up."""

import os

import processes


def test_only_start_up_variables_send_a_command_to_a_fresh_interpreter():
  warm = {"PATH": os.environ.get("PATH", ""), "TF_CPP_MIN_LOG_LEVEL": "2"}
  assert processes.can_be_warm(dict(warm), warm)
  assert processes.can_be_warm({**warm, "TF_CONFIG": "{}", "CUDA_VISIBLE_DEVICES": ""}, warm)
  # torch sets this in the test process once a test imports it; no command reads it.
  assert processes.can_be_warm({**warm, "TORCHINDUCTOR_CACHE_DIR": "/tmp/inductor"}, warm)
  assert not processes.can_be_warm({**warm, "LANG": "tr_TR.UTF-8"}, warm)
  assert not processes.can_be_warm({k: v for k, v in warm.items()
                                    if k != "TF_CPP_MIN_LOG_LEVEL"}, warm)

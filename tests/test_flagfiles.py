"""Every flagfile under configs/ parses into a run configuration, and a bare `python train.py`
reads the quickstart's."""

import glob
import json
import os

from helpers import ROOT, run

SCRIPT = r"""
import dataclasses, glob, json, sys
from absl import flags
import train
from bert_tf import settings
from bert_tf.training.train_settings import TrainConfig

settings.define_flags(TrainConfig)  # as train.py's command line does

def parse(argv):
  flags.FLAGS.unparse_flags()
  flags.FLAGS(argv)
  return dataclasses.asdict(settings.from_flags(TrainConfig))

configs = {path: parse(["train.py", f"--flagfile={path}"]) for path in sys.argv[1:]}
configs["bare"] = parse(train.command_line(["train.py"]))
print(json.dumps(configs))
"""


def test_flagfiles_parse_and_bare_train_py_is_the_quickstart():
  paths = sorted(glob.glob(os.path.join(ROOT, "configs", "*.flags")))
  result = run(["-c", SCRIPT, *paths], timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  configs = json.loads(result.stdout.strip().splitlines()[-1])
  quickstart = configs[os.path.join(ROOT, "configs", "quickstart.flags")]
  assert configs.pop("bare") == quickstart
  assert quickstart["masked_lm_prob"] == 0.4 and quickstart["dropout"] == 0
  assert len(configs) == len(paths) >= 5
  for path, config in configs.items():
    assert config["max_predictions_per_seq"] >= config["masked_lm_prob"] * config["seq_length"]
    if "phase2" in path:
      assert config["init_checkpoint"], path

"""The README's Keras example runs as written (in a fresh directory, as a new user would)."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme_example() -> str:
  readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
  match = re.search(r"<!-- keras-example -->\s*```python\n(.*?)```", readme, re.DOTALL)
  assert match, "README.md has no <!-- keras-example --> python block"
  return match.group(1)


def test_keras_example_runs(tmp_path):
  result = subprocess.run([sys.executable, "-c", readme_example()], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert result.returncode == 0, result.stderr[-3000:]
  assert (tmp_path / "data" / "vocab.txt").exists()
  assert (tmp_path / "runs" / "keras_example" / "export" / "saved_model.pb").exists()
  assert "mlm_accuracy" in result.stdout

"""README.md and docs/ say what the code does: the Keras example runs as written, every shell
command's flags parse with the program's own flags, every docs/ page is reachable and every
relative link resolves."""

import ast
import glob
import json
import os
import re
import sys

import pytest

from helpers import ROOT, run
from journeys import code_blocks, flag_value, read, shell_commands

PAGES = ["README.md", *sorted(os.path.relpath(path, ROOT)
                               for path in glob.glob(os.path.join(ROOT, "docs", "*.md")))]
# Commands that set up the environment; `pip install` is checked against setup.py's extras.
SETUP_COMMANDS = {"python3.11 -m venv .venv", ". .venv/bin/activate"}
# Parses each command's flags as the program would (absl.app.run replaced by the parse), every
# program in one process so that TensorFlow is imported once; prints the errors as JSON.
PARSE_SCRIPT = r"""
import json, runpy, sys
from absl import app, flags

def parse_only(main, argv=None, flags_parser=None):
  flags.FLAGS(argv or sys.argv)

app.run = parse_only
absl_flags = set(flags.FLAGS)
errors = []
for command in json.loads(sys.argv[1]):
  sys.argv = list(command)
  try:
    if command[0].endswith(".py"):
      runpy.run_path(command[0], run_name="__main__")
    else:
      runpy.run_module(command[0], run_name="__main__", alter_sys=True)
  except Exception as e:
    errors.append(f"{' '.join(command)}: {type(e).__name__}: {e}")
  for name in set(flags.FLAGS) - absl_flags:
    delattr(flags.FLAGS, name)
print(json.dumps(errors))
"""


def readme_example() -> str:
  match = re.search(r"<!-- keras-example -->\s*```python\n(.*?)```", read("README.md"), re.DOTALL)
  assert match, "README.md has no <!-- keras-example --> python block"
  return match.group(1)


def program_argv(block_commands: list[list[str]], command: list[str]) -> list[str]:
  """`python train.py ARGS` -> [train.py, ARGS]; `python -m M ARGS` -> [M, ARGS]. A
  `--flagfile=MODEL_DIR/flags.txt` that an earlier train.py of the block writes stands for that
  command's flags."""
  argv = command[1:] if command[1] != "-m" else command[2:]
  expanded = [argv[0]]
  for word in argv[1:]:
    flagfile = flag_value([word], "flagfile")
    if flagfile and not os.path.exists(os.path.join(ROOT, flagfile)):
      writers = [c for c in block_commands
                 if c[1:2] == ["train.py"]
                 and flagfile == f"{flag_value(c, 'model_dir')}/flags.txt"]
      assert writers, f"{flagfile} is neither in the repository nor written by the block"
      expanded += writers[0][2:]
    else:
      expanded.append(word)
  return expanded


@pytest.mark.e2e
def test_keras_example_runs(tmp_path):
  result = run(["-c", readme_example()], cwd=tmp_path)
  assert result.returncode == 0, result.stderr[-3000:]
  assert (tmp_path / "data" / "vocab.txt").exists()
  assert (tmp_path / "runs" / "keras_example" / "export" / "saved_model.pb").exists()
  assert "mlm_accuracy" in result.stdout


def test_readme_is_short_and_links_every_docs_page():
  readme = read("README.md")
  assert len(readme.splitlines()) <= 280  # the journeys' commands and what they print
  assert len(PAGES) >= 7  # README.md and the six docs/ pages
  for page in PAGES[1:]:
    assert f"]({page})" in readme or f"]({page}#" in readme, f"README.md does not link {page}"


def anchors(page: str) -> set[str]:
  """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
  headings = re.findall(r"^#+ (.*)$", read(page), re.MULTILINE)
  return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_every_relative_link_resolves():
  checked = 0
  for page in PAGES:
    prose = re.sub(r"```.*?```|`[^`]*`", "", read(page), flags=re.DOTALL)
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
      if re.match(r"[a-z]+:", target):
        continue
      path, _, anchor = target.partition("#")
      resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
      assert os.path.exists(os.path.join(ROOT, resolved)), f"{page}: {target} does not exist"
      if anchor:
        assert anchor in anchors(resolved), f"{page}: {target} names no heading"
      checked += 1
  assert checked >= 12


def test_python_blocks_compile():
  blocks = [(page, block) for page in PAGES for block in code_blocks(page, "python")]
  assert len(blocks) >= 2
  for page, block in blocks:
    ast.parse(block, filename=page)


@pytest.mark.e2e
def test_shell_commands_parse():
  """Every command in a sh block of README.md and docs/ names files that exist and flags that
  its program accepts, with values it accepts (flagfiles are read, enums checked)."""
  programs = []
  for page in PAGES:
    for block in code_blocks(page, "sh"):
      block_commands = shell_commands(block)
      for command in block_commands:
        text = " ".join(command)
        if text in SETUP_COMMANDS:
          continue
        if command[0] == "pip":
          assert command[1:3] == ["install", "-e"], text
          extras = re.search(r"\.\[(\w+)\]", command[3]).group(1)
          assert f'"{extras}":' in read("setup.py"), text
        elif command == ["pytest"]:
          assert os.path.exists(os.path.join(ROOT, "pytest.ini"))
        elif command[0] == "python":
          if command[1] != "-m":
            assert os.path.exists(os.path.join(ROOT, command[1])), text
          if command[1].startswith("examples/"):
            continue  # no flags to parse: test_journeys runs README's, test_portable_export all
          programs.append(program_argv(block_commands, command))
        elif command[0] in ("bash", "sbatch"):  # a script of the repository, then its arguments
          assert os.path.exists(os.path.join(ROOT, command[1])), text
        else:  # a program the dependencies install (tensorboard, saved_model_cli, ...)
          assert os.path.exists(os.path.join(os.path.dirname(sys.executable), command[0])), (
              f"{page}: {text}: neither a command this test knows nor an installed program")
  assert len(programs) >= 9
  result = run(["-c", PARSE_SCRIPT, json.dumps(programs)], timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def documented_commands() -> list[tuple[str, list[str]]]:
  """(page, argv) of every command in a sh block of README.md and docs/."""
  return [(page, command) for page in PAGES for block in code_blocks(page, "sh")
          for command in shell_commands(block)]


def flagfile_model_dirs() -> dict[str, str]:
  """{configs/NAME.flags: the --model_dir it names} of the repository's flagfiles."""
  found = {}
  for path in glob.glob(os.path.join(ROOT, "configs", "*.flags")):
    words = [line.strip() for line in open(path, encoding="utf-8")]
    if model_dir := flag_value(words, "model_dir"):
      found[os.path.relpath(path, ROOT)] = model_dir
  return found


def written_model_dir(command: list[str]) -> str | None:
  """Where a documented `python train.py` command writes: its --model_dir, else its flagfile's
  (train.py's default, runs/quickstart, is the quickstart's, not another run's place)."""
  return flag_value(command, "model_dir") or flagfile_model_dirs().get(
      flag_value(command, "flagfile"))


def test_every_documented_train_command_names_where_it_writes():
  """A train.py command of the docs without --model_dir would write into the quickstart's
  runs/quickstart (and, after the quickstart, be refused as a re-run of another run)."""
  unnamed = [f"{page}: {' '.join(command)}" for page, command in documented_commands()
             if command[:2] == ["python", "train.py"] and not written_model_dir(command)]
  assert not unnamed, unnamed


def test_every_run_a_documented_command_reads_is_one_a_documented_command_writes():
  """The model_dir of a documented export, fine-tune or audit (a run under runs/) is written by
  a documented train.py or fine-tune: a user following the docs has it."""
  commands = documented_commands()
  written = {written_model_dir(c) for _, c in commands if c[:2] == ["python", "train.py"]}
  written |= {flag_value(c, "output_dir") for _, c in commands if c[2:3] == ["bert_tf.finetune"]}
  read = {(page, flag_value(c, "model_dir")) for page, c in commands
          if c[2:3] in (["bert_tf.export"], ["bert_tf.finetune"], ["bert_tf.finetune.glue"])}
  missing = [f"{page}: {model_dir}" for page, model_dir in sorted(read)
             if model_dir and model_dir.startswith("runs/") and model_dir not in written]
  assert not missing, missing


def test_a_documented_variant_of_the_quickstart_trains_in_a_model_dir_of_its_own():
  """The quickstart's flagfile with flags of its own (in a page's prose, not the figures of
  docs/measured*.md) names another --model_dir: in the quickstart's finished runs/quickstart
  it would train nothing, only say what changed."""
  variants = [(page, command) for page in PAGES if not page.startswith("docs/measured")
              for command in re.findall(r"`(python train\.py --flagfile=configs/quickstart\.flags"
                                        r" [^`]+)`",
                                        re.sub(r"```.*?```", "", read(page), flags=re.DOTALL)
                                        .replace("\n", " "))]
  assert variants
  assert not [variant for variant in variants if "--model_dir=" not in variant[1]], variants

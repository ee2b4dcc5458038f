"""The documented commands, read from the doc files and run as printed (issue #52's journeys).

A doc marks a command it promises works with a comment before its ```sh block, and, when it
shows what the command prints, a second comment before that sample's block:

    <!-- journey: NAME -->
    ```sh
    python train.py --flagfile=configs/quickstart.flags
    ```

    <!-- journey: NAME prints -->
    ```text
    step 2,000/2,000 | 268 examples/s | ...
    ```

A journey test reads the block each time it runs, so a command edited in the doc is the
command tested; a marker or block that is gone fails loudly (`JourneyMissing`), naming the doc
and the marker. Markers rather than a block's position: they survive edits around them.

What the harness changes in a documented command, and nothing else:
- the working directory: `checkout(directory)` makes one that stands for the user's clone
  (links to every top-level file and folder of this checkout but `data/` and `runs/`, which
  the commands write and so are this directory's own);
- `python` is this interpreter (`helpers.run`: forked from the warm Python unless `fresh` or
  `as_user`);
- with `flags`, a small flagfile for size is written into the working directory and
  `--flagfile=journey.flags` is appended after the command's own flags: absl reads flags in
  order and the later value of a flag wins, so the flagfile's settings (a tiny model, few
  steps) override the command's and leave the rest as documented;
- another program (`sbatch deploy/slurm.sbatch ...`, `bash ...`) runs from the PATH of the
  environment given: `run(argv, workdir, PATH=f"{stand_ins}:{os.environ['PATH']}")` puts a
  stand-in `sbatch` or `srun` first.

A sample output is compared by shape (`assert_prints`): each of its lines must match a line the
command printed, in order within stdout and within stderr, its words and punctuation as they
are and its values free: numbers, quoted texts, lists of `word score` pairs. A sample line
`...` stands for lines left out.

Use (tests/test_journeys.py is the example):

    argv = journeys.command("README.md", "quickstart", "python train.py")
    workdir = journeys.checkout(tmp_path)
    result = journeys.run(argv, workdir, flags=["--train_steps=12"])
    journeys.assert_prints(journeys.printed("README.md", "quickstart"), result)

`commands(doc, name)` gives every command of a block (for a block of several steps), and
`shell_commands(block)` splits any block the same way (tests/test_readme.py parses every sh
block of the docs with it). README.md marks its commands `quickstart`, `finetune`, `export` and
`example`, docs/finetuning.md its `glue` and `own_files` (tests/test_journeys.py runs them,
of `own_files` its MRPC command); a journey of another doc's command adds its marker there.
"""

import os
import re
import shlex
import subprocess

from helpers import ROOT
from helpers import run as run_python

FLAGFILE = "journey.flags"  # written into the working directory by `run(..., flags=...)`
# What a run writes in the user's clone: the working directory's own, not links to ours.
WRITTEN = {"data", "runs"}


class JourneyMissing(AssertionError):
  """A marked command or sample is no longer in its doc: the doc changed without its journey."""


def read(doc: str) -> str:
  return open(os.path.join(ROOT, doc), encoding="utf-8").read()


def code_blocks(doc: str, language: str) -> list[str]:
  """The doc's fenced blocks of `language` (the text between the fences)."""
  return re.findall(rf"^```{language}\n(.*?)^```", read(doc), re.DOTALL | re.MULTILINE)


def _marked_block(doc: str, marker: str) -> str:
  match = re.search(rf"^<!-- journey: {re.escape(marker)} -->\n```\w*\n(.*?)^```", read(doc),
                    re.DOTALL | re.MULTILINE)
  if not match:
    raise JourneyMissing(f"{doc} has no fenced block after <!-- journey: {marker} -->: the "
                         f"documented journey changed without its test (tests/journeys.py)")
  return match.group(1)


def shell_commands(block: str) -> list[list[str]]:
  """A sh block's commands as argv lists: `\\` continuations joined, comments dropped, `&&`
  split into its commands."""
  commands = []
  for line in block.replace("\\\n", " ").splitlines():
    words = shlex.split(line, comments=True)
    while words:
      end = words.index("&&") if "&&" in words else len(words)
      commands.append(words[:end])
      words = words[end + 1:]
  return commands


def commands(doc: str, name: str) -> list[list[str]]:
  """Every command of the sh block marked `<!-- journey: NAME -->` in `doc`."""
  found = shell_commands(_marked_block(doc, name))
  if not found:
    raise JourneyMissing(f"{doc}: the block of <!-- journey: {name} --> holds no command")
  return found


def command(doc: str, name: str, starts_with: str) -> list[str]:
  """The one command of the block marked NAME whose words begin with `starts_with` (`python
  train.py`, `python -m bert_tf.export`)."""
  start = starts_with.split()
  found = [argv for argv in commands(doc, name) if argv[:len(start)] == start]
  if len(found) != 1:
    raise JourneyMissing(f"{doc}: the block of <!-- journey: {name} --> has {len(found)} "
                         f"commands starting `{starts_with}`, not one")
  return found[0]


def flag_value(argv: list[str], name: str) -> str | None:
  """The value of `--name=` in `argv` (the last one given), or None."""
  values = [word.split("=", 1)[1] for word in argv if word.startswith(f"--{name}=")]
  return values[-1] if values else None


def printed(doc: str, name: str) -> list[str]:
  """The lines of the sample output marked `<!-- journey: NAME prints -->` in `doc`."""
  return _marked_block(doc, f"{name} prints").splitlines()


def checkout(directory) -> str:
  """`directory` made to stand for the user's clone: a link to each of this checkout's
  top-level files and folders (train.py, configs/, examples/, ...) but the hidden ones and
  those a run writes (data/, runs/), which start empty there. Returns its path."""
  directory = str(directory)
  for name in os.listdir(ROOT):
    if not name.startswith(".") and name not in WRITTEN:
      os.symlink(os.path.join(ROOT, name), os.path.join(directory, name))
  return directory


def run(argv: list[str], workdir, flags=(), timeout=900, **options):
  """Runs a documented command as printed in `workdir`, `--flagfile=journey.flags` appended
  (holding `flags`, one a line) when there are `flags`; `options` go to `helpers.run`
  (`fresh`, `as_user`, environment variables). The completed process, its output as text."""
  argv = list(argv)
  if flags:
    with open(os.path.join(str(workdir), FLAGFILE), "w", encoding="utf-8") as f:
      f.write("".join(f"{flag}\n" for flag in flags))
    argv.append(f"--flagfile={FLAGFILE}")
  if argv[0] == "python":
    return run_python(argv[1:], timeout=timeout, cwd=str(workdir), **options)
  return run_python(argv[1:], timeout=timeout, cwd=str(workdir), program=argv[0], **options)


# A sample line's values: quoted text, lists of `word number` pairs (a fill-mask's candidates),
# numbers (with thousands separators, a fraction, an exponent, a percent sign).
_QUOTED = r"'[^']*'|\"[^\"]*\""
_NUMBER = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[+-]?\d+)?%?"
_PAIRS = rf"\S+ {_NUMBER}(?:, \S+ {_NUMBER})+"
_VALUE = re.compile(rf"{_QUOTED}|{_PAIRS}|{_NUMBER}")
_PATTERN_OF = {"'": r"'.*'", '"': r'".*"'}


def shape(line: str) -> re.Pattern:
  """A sample line as a pattern of the lines of its shape: its words and punctuation as they
  are, each value (number, quoted text, list of candidates with their scores) any value."""
  parts, end = [], 0
  for match in _VALUE.finditer(line):
    parts.append(re.escape(line[end:match.start()]))
    value = match.group()
    parts.append(_PATTERN_OF.get(value[0]) or (
        rf"\S+ {_NUMBER}(?:, \S+ {_NUMBER})*" if " " in value else _NUMBER))
    end = match.end()
  parts.append(re.escape(line[end:]))
  return re.compile("".join(parts))


def assert_prints(sample: list[str], result: subprocess.CompletedProcess) -> None:
  """Every line of `sample` (a doc's sample output, what a terminal shows of both streams; a
  line `...` stands for lines left out) has the shape of a line that `result` printed, in the
  sample's order within each stream (the order between the two is lost once captured)."""
  streams = {"stdout": result.stdout.splitlines(), "stderr": result.stderr.splitlines()}
  positions = {name: 0 for name in streams}
  for expected in sample:
    if expected.strip() == "...":
      continue
    pattern = shape(expected)
    for name, lines in streams.items():
      found = next((i for i in range(positions[name], len(lines))
                    if pattern.fullmatch(lines[i])), None)
      if found is not None:
        positions[name] = found + 1
        break
    else:
      raise AssertionError(
          f"the sample line {expected!r} has no line of its shape in what the command printed "
          f"(after the lines matched before it):\n{result.stdout[-2000:]}\n"
          f"{result.stderr[-2000:]}")


def completed(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
  """`result` if its command exited 0; else fails with its stderr's end."""
  assert result.returncode == 0, f"{' '.join(map(str, result.args))}:\n{result.stderr[-3000:]}"
  return result

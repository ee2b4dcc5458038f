"""An output directory that a command replaces whole (`python -m bert_tf.export --output`,
`python -m bert_tf.prepare --output`), kept apart from what the command reads and from the
working directory: `--output=runs/mine` for `--model_dir=runs/mine`, `--output=corpus` for
`--input_files='corpus/*.txt'` or `--output=.` would otherwise delete the run, the corpus or the
user's checkout once the new directory is written. Checked with the flags, before anything is
read or written; no TensorFlow import."""

import glob
import os

from bert_tf.errors import UserError


def _inside(path: str, directory: str) -> bool:
  """Whether `path` is `directory` or lies under it (local paths resolved, links followed; a
  URL such as gs://... compared by its text)."""
  if "://" in path or "://" in directory:
    path, directory = path.rstrip("/"), directory.rstrip("/")
    return path == directory or path.startswith(directory + "/")
  path, directory = os.path.realpath(path), os.path.realpath(directory)
  return os.path.commonpath([path, directory]) == directory


def check_apart(output: str, inputs: dict[str, str]) -> None:
  """A one-line UserError when replacing `output` would remove the working directory or one of
  `inputs` ({"--flag": a path or a comma list of paths and globs it reads}); nothing to check
  without an output."""
  if not output:
    return
  if _inside(os.getcwd(), output):
    raise UserError(f"--output={output} would replace the current directory with what it "
                    "writes: give a directory of its own (runs/NAME)")
  for flag, value in inputs.items():
    for item in filter(None, (part.strip() for part in (value or "").split(","))):
      paths = [item] if "://" in item else [item, *glob.glob(item)]
      if any(_inside(path, output) for path in paths):
        raise UserError(f"--output={output} would replace {flag} {item} with what it writes: "
                        "give a directory of its own (runs/NAME)")

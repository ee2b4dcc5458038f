"""A second real corpus that every Python 3.11 installation carries: the docstrings of the
standard library's modules (their own, their classes' and their functions'), read from the
library's source with `ast`. Each module is one document of the corpus format; its docstrings'
prose is split into sentences as the built-in corpus's is (`builtin_corpus.topic_sentences`).
Modules are dealt to a training and a held-out set by a hash of their name, so the held-out
text is never trained on and the split is the same on every machine.

    python benchmarks/docstrings_corpus.py --output=data/docstrings
"""

import argparse
import ast
import hashlib
import os
import sys
import sysconfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bert_tf.data.builtin_corpus import topic_sentences  # noqa: E402

# Test suites, the IDE, GUI demos and installed packages: not the library's own prose.
_LEFT_OUT = {"test", "tests", "idlelib", "site-packages", "dist-packages", "turtledemo",
             "__pycache__", "lib2to3", "ensurepip"}
HELD_OUT_SHARE = 10  # one module in this many is held out


def _modules(stdlib: str):
  """(module name, its source path) of every module of the standard library, sorted."""
  found = []
  for directory, subdirectories, names in os.walk(stdlib):
    subdirectories[:] = sorted(d for d in subdirectories if d not in _LEFT_OUT)
    for name in sorted(names):
      if name.endswith(".py"):
        path = os.path.join(directory, name)
        found.append((os.path.relpath(path, stdlib)[:-3].replace(os.sep, "."), path))
  return sorted(found)


def module_document(path: str) -> list[str]:
  """The sentences of a module's docstrings, in the order they appear."""
  try:
    with open(path, encoding="utf-8") as f:
      tree = ast.parse(f.read())
  except (SyntaxError, UnicodeDecodeError, ValueError):
    return []
  sentences = []
  for node in ast.walk(tree):
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
      docstring = ast.get_docstring(node)
      if docstring:
        sentences += topic_sentences(docstring)
  return sentences


def is_held_out(module: str) -> bool:
  return int(hashlib.sha256(module.encode()).hexdigest(), 16) % HELD_OUT_SHARE == 0


def write_corpus(output: str, num_files: int = 4) -> tuple[str, str]:
  """Writes `output/train-*.txt` and `output/heldout.txt` (once: written, they are left as
they are); returns their patterns."""
  patterns = os.path.join(output, "train-*.txt"), os.path.join(output, "heldout.txt")
  if os.path.exists(patterns[1]):
    return patterns
  os.makedirs(output, exist_ok=True)
  train, held_out = [], []
  for module, path in _modules(sysconfig.get_paths()["stdlib"]):
    sentences = module_document(path)
    if len(sentences) >= 2:
      (held_out if is_held_out(module) else train).append("\n".join(sentences) + "\n")
  for i in range(num_files):
    with open(os.path.join(output, f"train-{i}.txt"), "w", encoding="utf-8") as f:
      f.write("\n".join(train[i::num_files]))
  with open(patterns[1], "w", encoding="utf-8") as f:
    f.write("\n".join(held_out))
  return patterns


if __name__ == "__main__":
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--output", default="data/docstrings")
  patterns = write_corpus(parser.parse_args().output)
  print("wrote", *patterns)

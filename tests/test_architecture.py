"""The package's layers: data and settings, then model and interop, then export, then the
runtime, then fine-tuning, then pre-training, then the commands. No module imports from a layer
above its own; of pre-training's modules only the probe imports fine-tuning's; and only
`bert_tf/model/keras_internals.py` touches Keras's internals."""

import ast
import os

import pytest

from helpers import ROOT, run

PACKAGE = os.path.join(ROOT, "bert_tf")
INTERNALS = "bert_tf.model.keras_internals"

# Modules by their name's start, most specific first; the commands are the top layer.
LAYERS = (
    ("bert_tf.vocab", 6), ("bert_tf.audit", 6), ("bert_tf.prepare", 6), ("bert_tf.flags_doc", 6),
    ("bert_tf.training", 5),
    ("bert_tf.finetune", 4),
    ("bert_tf.runtime", 3),
    ("bert_tf.export", 2),
    ("bert_tf.model", 1), ("bert_tf.interop", 1),
    ("bert_tf", 0),  # bert_tf.data, settings, errors, files, console, model_dir
)


def _modules() -> dict:
  modules = {}
  for directory, _, names in os.walk(PACKAGE):
    for name in names:
      if name.endswith(".py"):
        path = os.path.join(directory, name)
        module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
        modules[module.removesuffix(".__init__")] = path
  return modules


def _layer(module: str) -> int:
  if module.endswith(".__main__"):
    return 6
  return next(layer for start, layer in LAYERS
              if module == start or module.startswith(start + "."))


def _imported(tree: ast.Module) -> set:
  names = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and node.module:
      names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    elif isinstance(node, ast.Import):
      names |= {alias.name for alias in node.names}
  return names


MODULES = _modules()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_runs_up_the_layers(module):
  with open(MODULES[module], encoding="utf-8") as f:
    imported = _imported(ast.parse(f.read())) & set(MODULES)
  above = sorted(name for name in imported if _layer(name) > _layer(module))
  assert not above, f"{module} (layer {_layer(module)}) imports {above}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("bert_tf.training")))
def test_only_the_probe_reaches_into_fine_tuning(module):
  with open(MODULES[module], encoding="utf-8") as f:
    imported = _imported(ast.parse(f.read()))
  finetune = sorted(name for name in imported if name.startswith("bert_tf.finetune"))
  assert not finetune or module == "bert_tf.training.watching.probe", f"{module} imports {finetune}"


# Names with a leading underscore that their library documents as public.
DOCUMENTED = {"os._exit"}


def _private_uses(tree: ast.Module) -> list:
  """`x._name` for a private name the module does not define itself (as a method or a
  `self._name` attribute), on anything but self, cls or super(): another library's private
  attribute."""
  own = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)} | {
      node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
      and isinstance(node.value, ast.Name) and node.value.id == "self"}
  uses = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not (
        node.attr.startswith("__")) and node.attr not in own:
      owner = node.value
      if (isinstance(owner, ast.Call) and getattr(owner.func, "id", "") == "super"
          or ast.unparse(node) in DOCUMENTED):
        continue
      uses.append(f"{ast.unparse(node)} (line {node.lineno})")
  return uses


@pytest.mark.parametrize("module", sorted(set(MODULES) - {INTERNALS}))
def test_only_the_internals_module_touches_keras_internals(module):
  with open(MODULES[module], encoding="utf-8") as f:
    text = f.read()
  assert "keras.src" not in text
  uses = _private_uses(ast.parse(text))
  assert not uses, f"{module} uses private attributes: {uses}"


@pytest.mark.e2e
def test_an_untested_keras_is_one_line():
  script = ("from bert_tf.model import keras_internals\n"
            "keras_internals.check_keras_version('3.16.0')\n")
  result = run(["-c", script], timeout=120, TF_CPP_MIN_LOG_LEVEL="3")
  assert result.returncode == 1
  assert result.stderr.strip().splitlines()[-1] == (
      "error: bert_tf's training step was tested on Keras 3.15.x, not Keras 3.16.0: "
      "pip install 'keras~=3.15.0'")
  assert "Traceback" not in result.stderr

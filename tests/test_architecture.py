"""The package's layers: data and settings, then model and interop, then serving (what a served
model is and how an export is checked), then the runtime, then fine-tuning, then pre-training
and the export formats (which write pre-trained and fine-tuned models alike), then the
commands. No module imports from a layer above its own;
of pre-training's modules only the probe imports fine-tuning's; and only
`bert_tf/model/keras_internals.py` touches Keras's internals. No modules import each other in a
circle, and no test module imports another. Functions stay small: none of the package longer
than 60 lines, none of `bert_tf/data` with more than 10 parameters (the readers take an input
plan, not the settings flattened into keywords). A fine-tuning kind is a folder of
`bert_tf/finetune/kinds/` and an export format one module of `bert_tf/export/formats/`, each
imported by its registry, and nothing outside a format's module branches on its name."""

import ast
import os

import pytest

from helpers import ROOT, run

PACKAGE = os.path.join(ROOT, "bert_tf")
INTERNALS = "bert_tf.model.keras_internals"

# Modules by their name's start, most specific first; the commands are the top layer.
LAYERS = (
    ("bert_tf.vocab", 6), ("bert_tf.audit", 6), ("bert_tf.prepare", 6), ("bert_tf.flags_doc", 6),
    ("bert_tf.export.__main__", 6),
    ("bert_tf.training", 5), ("bert_tf.export", 5),  # the export formats
    ("bert_tf.finetune", 4),
    ("bert_tf.runtime", 3),
    ("bert_tf.serving", 2),
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


def _modules_imported(module: str) -> set:
  """The package's modules that `module` imports, anywhere in it (inside a function too): for
  `from a import b`, the module a.b if there is one, else a."""
  with open(MODULES[module], encoding="utf-8") as f:
    tree = ast.parse(f.read())
  names = set()
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and node.module:
      names |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in MODULES
                else node.module for alias in node.names}
    elif isinstance(node, ast.Import):
      names |= {alias.name for alias in node.names}
  return names & set(MODULES)


def _circle_through(module: str, imports: dict) -> list:
  """The modules of a way of imports from `module` back to itself, [] if there is none."""
  ways, seen = [[module]], set()
  while ways:
    way = ways.pop()
    for name in sorted(imports[way[-1]]):
      if name == module:
        return way + [module]
      if name not in seen:
        seen.add(name)
        ways.append(way + [name])
  return []


def test_no_modules_import_each_other_in_a_circle():
  """Two modules that need each other are one piece split in two, or a piece in the wrong
  place: a shared piece goes where it belongs (an import inside a function does not count as
  out of the circle)."""
  imports = {module: _modules_imported(module) for module in MODULES}
  circles = [way for way in (_circle_through(module, imports) for module in MODULES) if way]
  assert not circles, "circles of imports: " + "; ".join(" -> ".join(way) for way in circles)


def test_no_test_module_imports_another():
  """What test modules share lives in modules that are not tests (helpers.py, finetune_files.py):
  a test module keeps what its own tests need, and one that imported it would break when it
  changes, and import everything it imports."""
  tests = os.path.join(ROOT, "tests")
  for name in sorted(os.listdir(tests)):
    if name.endswith(".py"):
      with open(os.path.join(tests, name), encoding="utf-8") as f:
        imported = _imported(ast.parse(f.read()))
      tests_imported = sorted(n for n in imported if n.startswith("test_"))
      assert not tests_imported, f"tests/{name} imports {tests_imported}"


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


MAX_LINES, MAX_DATA_PARAMETERS = 60, 10


def _functions(module: str) -> list:
  """(name, parameters, lines) of every function and method of `module` (`_counted`)."""
  with open(MODULES[module], encoding="utf-8") as f:
    return _counted(ast.parse(f.read()))


def _counted(tree: ast.Module) -> list:
  """(name, parameters, lines) of every function and method of `tree`: the parameters counted
  as written (`*args` and `**options` one each), a method's `self` or `cls` not."""
  found = []
  for node in ast.walk(tree):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
      arguments = node.args
      names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                               *filter(None, (arguments.vararg, arguments.kwarg)))]
      if names and names[0] in ("self", "cls"):
        names = names[1:]
      found.append((node.name, len(names), node.end_lineno - node.lineno + 1))
  return found


def test_the_counts_of_parameters_and_lines():
  """What the two checks below count, on a function and a method written for the purpose."""
  body = "\n".join(f"  x{i} = {i}" for i in range(60))
  source = (f"def long(a, b, /, c, *d, e, f=1, **g):\n{body}\n"
            "class C:\n  def method(self, a):\n    return a\n")
  assert _counted(ast.parse(source)) == [("long", 7, 61), ("method", 1, 2)]


def test_no_function_is_longer_than_a_screen():
  """A function of more than 60 lines does more than one thing: its parts get names."""
  long = [f"{module}.{name}: {lines} lines" for module in sorted(MODULES)
          for name, _, lines in _functions(module) if lines > MAX_LINES]
  assert not long, long


def test_no_data_function_takes_more_than_ten_parameters():
  """The input pipeline's settings travel as one plan (`bert_tf/data/input_plan.py`), not
  flattened into keywords and rebuilt on the other side."""
  many = [f"{module}.{name}: {count} parameters" for module in sorted(MODULES)
          if module.startswith("bert_tf.data.")
          for name, count, _ in _functions(module) if count > MAX_DATA_PARAMETERS]
  assert not many, many


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


def _text(path: str) -> str:
  """The file's text, "" for none."""
  if not os.path.isfile(path):
    return ""
  with open(path, encoding="utf-8") as f:
    return f.read()


def test_kinds_are_imported_not_looked_up_by_name():
  """Fine-tuning finds a kind through `kinds/registry.py`'s imports, never by a name given to
  importlib at run time, which would hide the tie from the import graph and the no-circle test:
  no module of bert_tf/finetune imports importlib, and the registry imports every kind's
  package (each folder of kinds/ whose __init__.py defines KIND)."""
  looked_up = sorted(module for module in MODULES if module.startswith("bert_tf.finetune")
                     and "importlib" in _imported(ast.parse(_text(MODULES[module]))))
  assert not looked_up, f"modules that look a module up by name: {looked_up}"
  kinds = os.path.join(PACKAGE, "finetune", "kinds")
  packages = {f"bert_tf.finetune.kinds.{name}" for name in os.listdir(kinds)
              if "\nKIND = " in _text(os.path.join(kinds, name, "__init__.py"))}
  assert len(packages) == 5
  assert packages <= _modules_imported("bert_tf.finetune.kinds.registry")


FORMATS_DIR = os.path.join(PACKAGE, "export", "formats")
FORMAT_NAMES = ("savedmodel", "hf", "keras_hub", "litert", "onnx")


def _format_name_branches(tree: ast.Module) -> list:
  """Where a format's name is compared with (`==`, `!=`, `in`) or is a dict's key: a branch on
  the format that belongs in the format's module."""
  def named(node) -> bool:
    return isinstance(node, ast.Constant) and node.value in FORMAT_NAMES

  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Compare):
      sides = [node.left, *node.comparators]
      if any(named(side) for side in sides) or any(
          named(element) for side in sides if isinstance(side, (ast.Tuple, ast.List, ast.Set))
          for element in side.elts):
        found.append(f"{ast.unparse(node)} (line {node.lineno})")
    elif isinstance(node, ast.Dict) and any(named(key) for key in node.keys):
      found.append(f"a dict keyed by format names (line {node.lineno})")
    elif isinstance(node, ast.Subscript) and named(node.slice):
      found.append(f"{ast.unparse(node)} (line {node.lineno})")
  return found


@pytest.mark.parametrize("module", sorted(
    name for name, path in MODULES.items() if not path.startswith(FORMATS_DIR + os.sep)))
def test_no_module_outside_the_formats_branches_on_a_format_name(module):
  with open(MODULES[module], encoding="utf-8") as f:
    branches = _format_name_branches(ast.parse(f.read()))
  assert not branches, f"{module} branches on a format's name: {branches}"


def test_the_check_sees_a_format_name_branch():
  tree = ast.parse('if export_format == "onnx":\n  pass\nx = {"hf": 1}\ny = T["litert"]\n'
                   'z = f in ("savedmodel", "x")\n')
  assert len(_format_name_branches(tree)) == 4


def test_every_format_is_a_module_the_registry_imports():
  from bert_tf.export import formats

  assert list(formats.FORMATS) == list(FORMAT_NAMES)
  with open(os.path.join(FORMATS_DIR, "__init__.py"), encoding="utf-8") as f:
    imported = _imported(ast.parse(f.read()))
  for name, export_format in formats.FORMATS.items():
    assert f"bert_tf.export.formats.{name}" in imported, f"formats/__init__.py imports no {name}"
    assert getattr(formats, name).FORMAT is export_format
  defining = set()
  for file_name in os.listdir(FORMATS_DIR):
    if file_name.endswith(".py"):
      with open(os.path.join(FORMATS_DIR, file_name), encoding="utf-8") as f:
        if "\nFORMAT = " in f.read():
          defining.add(file_name.removesuffix(".py"))
  assert defining == set(FORMAT_NAMES), f"modules defining a FORMAT: {sorted(defining)}"

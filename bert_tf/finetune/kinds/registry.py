"""The registry of task kinds: each kind's package imported, its `KIND` (its registry entry: a
subclass of the protocol, `base.TaskKind`) under its name, in `bert_tf/task_kinds.py`'s order;
`kind_named(name)` is the entry of a name, checked to have every part of `TaskKind`. Kinds are
imported here, not looked up by name, so that the import graph (and tests/test_architecture.py)
sees every tie."""

from bert_tf.errors import UserError
from bert_tf.finetune.kinds import answer, choose, classify, regress, tag
from bert_tf.finetune.kinds.base import missing_parts
from bert_tf.task_kinds import NAMES

KINDS = {module.KIND.name: module.KIND for module in (classify, regress, tag, answer, choose)}


def kind_named(name: str) -> type:
  """The `TaskKind` subclass of the kind `name`; a one-line UserError for none, a TypeError
  for a kind that leaves out a part of the protocol."""
  if name not in KINDS:
    raise UserError(f"unknown task {name!r}: use one of {', '.join(NAMES)}")
  found = KINDS[name]
  missing = missing_parts(found)
  if missing or found.name != name:
    raise TypeError(f"the task kind {name} ({found.__module__}) is incomplete: it has no "
                    f"{', '.join(missing) or 'name ' + repr(name)}")
  return found


def all_kinds() -> dict[str, type]:
  """{name: kind} of every kind, in `NAMES`'s order."""
  return {name: kind_named(name) for name in NAMES}

"""The task kinds of fine-tuning, one module each (`classify`, `regress`, `tag`, `answer`,
`choose`), whose `KIND` is a `base.TaskKind`: everything the kind is, from reading its files
to its export's check and its Hugging Face class. `bert_tf/task_kinds.py` names them;
`kind(name)` is the kind of a name, checked to have every part of `TaskKind`.

Importing this package loads no TensorFlow: a kind's module is imported when it is asked for.
"""

import importlib

from bert_tf.errors import UserError
from bert_tf.task_kinds import NAMES


def kind(name: str) -> type:
  """The `TaskKind` subclass of the kind `name`; a one-line UserError for none, a TypeError
  for a kind's module that leaves out a part of the protocol."""
  if name not in NAMES:
    raise UserError(f"unknown task {name!r}: use one of {', '.join(NAMES)}")
  from bert_tf.finetune.kinds.base import missing_parts
  found = importlib.import_module(f"{__name__}.{name}").KIND
  missing = missing_parts(found)
  if missing or found.name != name:
    raise TypeError(f"the task kind {name} ({found.__module__}) is incomplete: it has no "
                    f"{', '.join(missing) or 'name ' + repr(name)}")
  return found


def all_kinds() -> dict[str, type]:
  """{name: kind} of every kind, in `NAMES`'s order."""
  return {name: kind(name) for name in NAMES}

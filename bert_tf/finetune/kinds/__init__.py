"""The task kinds of fine-tuning, one package each (`classify`, `regress`, `tag`, `answer`,
`choose`), whose `KIND` is a `base.TaskKind`: everything the kind is, from reading its files
to its export's check and its Hugging Face class. `bert_tf/task_kinds.py` names them;
`registry.py` imports them, and its `kind_named(name)` is the kind of a name.

Importing this package loads no TensorFlow (`registry` loads every kind).
"""

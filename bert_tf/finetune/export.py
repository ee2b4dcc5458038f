"""A fine-tuned model as a SavedModel that takes raw text, serving its task kind's signature
(`kinds/<kind>/` says what it takes and gives: `classify`, `score`, `tag`, `answer`), made by
the kind's `serving`; what every kind's export shares (checking a batch, a signature on named
batches of strings, saving atomically with the kind's assets) is `kinds/signatures.py`.

Tokenized inside the graph as in training; loading needs only `import tensorflow_text` first.
A batch that is empty or whose inputs differ in size is an `InvalidArgumentError` naming it.
"""

import keras

from bert_tf.data.tokenization import Vocabulary
from bert_tf.finetune.kinds.registry import kind_named
from bert_tf.finetune.kinds.signatures import save


def export_task(model: keras.Model, task, vocabulary: Vocabulary, directory: str) -> str:
  """Writes the SavedModel of a fine-tuned model of any kind to `directory` atomically; `task`
  is the output_dir's `TaskRecord`. Returns `directory`."""
  task_kind = kind_named(task.task)
  return save(task_kind.serving(model, task, vocabulary), task_kind.signature, directory)

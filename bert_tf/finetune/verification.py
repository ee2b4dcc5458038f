"""A fine-tuned model's SavedModel checks itself as the pre-training model's does
(`serving/verification.py`, docs/serving.md#verified-exports): loaded in a fresh process with
tensorflow and tensorflow-text only, its task's signature is run on texts with accents, CJK,
numbers and a text longer than the sequence, and its outputs are compared with the Keras task
model's on the pre-training tokenizer's ids of the same texts, by the kind's `reference` (in
`kinds/<kind>/`).

Floats (probabilities, scores) are compared within the SavedModel's tolerance. A choice (a
class, a tag, an answer's span) is compared by what the Keras model thinks of it: the score it
gives the export's choice against the score of its own best choice (a class's probability, a
tag's logit, a span's start + end logit), so that two choices the Keras model scores alike
within the tolerance both pass, and a wrong one fails by how much worse it is. The tagger's
words and their character offsets are the tokenizer's, compared exactly. What the kinds'
references share (the texts, the score of a choice) is `kinds/references.py`.
"""

import keras

from bert_tf.data.tokenization import Vocabulary
from bert_tf.finetune.kinds.registry import kind_named
from bert_tf.serving.tolerances import SAVEDMODEL_TOLERANCE
from bert_tf.serving.verification import saved_model_outputs, verify


def verify_task_export(directory: str, model: keras.Model, task,
                       vocabulary: Vocabulary) -> str:
  """Checks the SavedModel that `export.export_task` wrote to `directory` from `model`, of
  `task` (the output_dir's `TaskRecord`) by its kind's `reference`; returns the line saying
  so, or raises a one-line UserError."""
  task_kind = kind_named(task.task)
  reference = task_kind.reference(model, task, vocabulary)
  name = f"{task.task} savedmodel"
  (outputs,) = saved_model_outputs(directory, [(task_kind.signature, reference.inputs)], name)
  expected, got = reference.compared(outputs, name)
  return verify(name, lambda: expected, lambda: got, SAVEDMODEL_TOLERANCE)

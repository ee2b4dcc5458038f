"""A fine-tuned model as `python -m bert_tf.finetune` left it in its output_dir: task.json (the
task's kind and settings), bert_config.json, vocab.txt and model.weights.h5 (the whole task
model's weights, its head built by `finetune.model` / `finetune.heads`), and its export:
`savedmodel` (the signature of its task) or `hf` (the transformers class of its task's kind)."""

import dataclasses
import os

import keras
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.export.portable import PortableModel
from bert_tf.finetune.export import export_task
from bert_tf.finetune.huggingface_verification import verify_task_huggingface
from bert_tf.finetune.kinds.registry import kind
from bert_tf.finetune.output_dir import CONFIG_FILE, TASK_FILE, VOCAB_FILE, WEIGHTS_FILE
from bert_tf.finetune.task_record import TaskRecord, read_task
from bert_tf.finetune.verification import verify_task_export
from bert_tf.interop.huggingface import export_huggingface
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model


@dataclasses.dataclass
class Finetuned:
  model: keras.Model
  config: BertConfig
  vocabulary: Vocabulary
  task: TaskRecord


def is_finetuned(path: str) -> bool:
  """Whether `path` is a fine-tune's output_dir: it has task.json."""
  return tf.io.gfile.exists(os.path.join(path, TASK_FILE))


def load_finetuned(path: str) -> Finetuned:
  """The fine-tuned model of the output_dir `path`; a one-line UserError for a file it lacks
  or a task.json of no known kind."""
  def file(name: str) -> str:
    found = os.path.join(path, name)
    if not tf.io.gfile.exists(found):
      raise UserError(f"{path} has {TASK_FILE} but no {name}: is it a finished fine-tune's "
                      "output_dir?")
    return found

  file(TASK_FILE)  # there, else the line above
  task = read_task(path)
  config = BertConfig.from_json_file(file(CONFIG_FILE))
  vocabulary = Vocabulary(file(VOCAB_FILE))
  model = kind(task.task).head(pretraining_model(config).get_layer("bert_encoder"),
                               len(task.labels), config.initializer_range)
  model.load_weights(file(WEIGHTS_FILE))
  return Finetuned(model, config, vocabulary, task)


def export_finetuned(finetuned: Finetuned, export_format: str, output: str) -> str:
  """Writes a fine-tuned model as `savedmodel` (its task's signature) or `hf` (transformers'
  class for its task) to `output`, atomically."""
  if export_format == "savedmodel":
    return export_task(finetuned.model, finetuned.task, finetuned.vocabulary, output)
  if export_format == "hf":
    task = finetuned.task
    return export_huggingface(finetuned.model, finetuned.config, finetuned.vocabulary, output,
                              lower_case=task.lower_case,
                              head=kind(task.task).huggingface_head(task))
  raise UserError(f"a fine-tuned model exports as savedmodel or hf, not {export_format!r}")


def verify_finetuned(finetuned: Finetuned, export_format: str, output: str) -> str:
  """Checks the `savedmodel` (`finetune/verification.py`) or `hf`
  (`finetune/huggingface_verification.py`) export in `output` against `finetuned`; returns the
  line saying so, or raises UserError."""
  verify = verify_task_export if export_format == "savedmodel" else verify_task_huggingface
  return verify(output, finetuned.model, finetuned.task, finetuned.vocabulary)


def portable_finetuned(finetuned: Finetuned, seq_length: int = 0) -> PortableModel:
  """The task model of `finetuned` on ids, for its LiteRT or ONNX export, its outputs as its
  kind declares them (`TaskKind.portable_outputs`); `seq_length` 0: the fine-tune's."""
  task = finetuned.task
  task_kind = kind(task.task)
  return PortableModel(finetuned.model, task.task, task_kind.portable_outputs,
                       task_kind.portable_shapes, task_kind.portable_task(task),
                       finetuned.vocabulary.path, task.lower_case,
                       seq_length or task.seq_length, task_kind.portable_input_shape)

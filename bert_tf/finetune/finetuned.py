"""A fine-tuned model as `python -m bert_tf.finetune` left it in its output_dir: task.json (the
task's kind and settings), bert_config.json, vocab.txt and model.weights.h5 (the whole task
model's weights, its head built by its kind's `head`), which the export
formats write (`export/formats/`: `savedmodel`, the signature of its task; `hf`, the
transformers class of its task's kind) and, on ids, `portable_finetuned`."""

import dataclasses
import os

import keras
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.finetune.kinds.registry import kind_named
from bert_tf.finetune.output_dir import CONFIG_FILE, TASK_FILE, VOCAB_FILE, WEIGHTS_FILE
from bert_tf.finetune.task_record import TaskRecord, read_task
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from bert_tf.serving.portable import PortableModel


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
  model = kind_named(task.task).head(pretraining_model(config).get_layer("bert_encoder"),
                               len(task.labels), config.initializer_range)
  model.load_weights(file(WEIGHTS_FILE))
  return Finetuned(model, config, vocabulary, task)


def portable_finetuned(finetuned: Finetuned, seq_length: int = 0) -> PortableModel:
  """The task model of `finetuned` on ids, for its LiteRT or ONNX export, its outputs as its
  kind declares them (`TaskKind.portable_outputs`); `seq_length` 0: the fine-tune's."""
  task = finetuned.task
  task_kind = kind_named(task.task)
  return PortableModel(finetuned.model, task.task, task_kind.portable_outputs,
                       task_kind.portable_shapes, task_kind.portable_task(task),
                       finetuned.vocabulary.path, task.lower_case,
                       seq_length or task.seq_length, task_kind.portable_input_shape)

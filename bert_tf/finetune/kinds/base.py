"""`TaskKind`: the whole of what a fine-tuning task kind is, declared once, so that a run, its
export, its checks, its Hugging Face export and the probe tell the same story for every kind
and a kind that leaves a part out fails `missing_parts` (and the registry) rather than falling
into another kind's branch. Each kind is a package of `kinds/` (`classify/`, ...) whose
`KIND` is its subclass, its registry entry; `bert_tf/task_kinds.py` names them.

What a new kind must write, as class attributes:

- `name`: `--task`'s value, the name of its package, task.json's `task`;
- `ranking`: the dev figures (metrics.json's names) that order epochs, the first deciding;
- `probe_figure`: the figure pre-training's probe reports, `dev_<probe_figure>` of `evaluate`;
- `signature`: the name of its serving SavedModel's signature;
- `reference`: the export's check (`finetune/verification.py`), a class made from (model,
  task, vocabulary): the inputs its signature is run on (`.inputs`) and `.compared(outputs,
  name)`, the (expected, got) results of the Keras model and of the loaded export;

without its files (from a fine-tuned model and its `TaskRecord`):

- `serving(model, task, vocabulary)`: the `Serving` the export saves: a `tf.Module` holding
  the model and its tokenizer, the signature's function, its assets;
- `huggingface_head(task)`: the transformers class, head layer and config entries its Hugging
  Face export has (`interop.huggingface.TaskHead`);

and, made from the `FinetuneConfig` (its files resolved, `train_file` and `dev_file`):

- `read()`: reads and checks its files, a `UserError` for a mistake before anything trains,
  setting `train` and `dev` (each with a `len`), and `labels` and `pair` where not the
  defaults (none; single texts);
- `encode(pretrained)`: its files as the encoder's features, once the vocabulary is known;
- `train_batches(batch_size, order)`: the training rows an epoch's order names, in batches;
- `evaluate(model)`: (dev figures under their metrics.json names, what the best epoch writes
  besides: answer's predictions, else None).

The rest has a default here, a kind of classes' (classify's): a kind writes a part only where
it differs.

- `head(encoder, num_labels, initializer_range)`: the task model on the encoder, the encoder's
  features (`token_ids`, `segment_ids`, `padding_mask`) in, its logits the one output; BERT's
  classification head on the pooled `[CLS]` output by default (`model.classifier_model`);
- `loss()`: what training minimises; cross-entropy of the logits against label ids by default;
- `labelled`: whether its model has an output per label (`labels`: classes or tags); yes by
  default;
- `summary(figures)`: the dev figures in one line; the `ranking`'s figures by default;
- `portable_shapes` (an attribute), `portable_outputs(logits)`, `portable_logits(outputs)` and
  `portable_task(task)`: its LiteRT and ONNX export (`serving/portable.py`, on the ids inputs
  `input_ids`, `token_type_ids`, `attention_mask`, int32 `[batch, seq_length]`): its named
  outputs' shapes (dimensions `batch`, `seq_length`, `labels` or a number; a kind whose inputs
  have another axis, such as `[batch, endings, seq_length]`, names it in its outputs' shapes and
  in `portable_input_shape`), the function from the head's logits to those float32 outputs, its
  inverse (the logits `evaluate` reads, from a converted model's outputs: how the dev figure
  of a converted model is its `evaluate`'s, `finetune/portable_dev.py`), and what portable.json
  carries of its `TaskRecord` (what post-processing needs); by default the logits and their
  softmax, [batch, labels] each, and the labels and whether an example is a pair;
- `rank`, `train_rows`, `noted` (metrics.json's extra entries), `task_settings` (task.json's),
  `write_outputs` (the output_dir's extra files), `one_example`, `head_logits` and
  `transformers_logits` (one example as the head takes it and the logits the Hugging Face check
  compares), `for_keras` (what `task_model` adds to a Keras model), `to_predict`,
  `signature_inputs` and `predictions` (--predict_file's rows, as the signature takes them and
  as predictions.tsv writes them) and `probe_seq_length`.
"""

import abc
import dataclasses

import keras
import numpy as np
import tensorflow as tf

from bert_tf.data import builtin_tasks
from bert_tf.finetune import data, losses
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.glue import reading as glue_reading
from bert_tf.finetune.model import classifier_model

DEV_BATCH = 64
# The attributes every kind must set (None in `TaskKind`), beside its abstract methods.
ATTRIBUTES = ("name", "ranking", "probe_figure", "signature", "reference")


@dataclasses.dataclass
class Serving:
  """What a kind's SavedModel is: `module` (saved, holding the model and its tokenizer),
  `function` (the signature, a `tf.function` on batches of strings) and `assets` (text files
  in assets/, {name: lines})."""

  module: tf.Module
  function: object
  assets: dict


class TaskKind(abc.ABC):
  """A task kind; see the module's docstring for its parts."""

  name: str = None
  ranking: tuple[str, ...] = None
  probe_figure: str = None
  signature: str = None
  reference: type = None  # the export's check (`references.py`'s classes)
  labels: list[str] = []
  pair = False
  labelled = True
  # The LiteRT and ONNX model's outputs: {output name: shape}.
  portable_shapes: dict[str, list] = {"logits": ["batch", "labels"],
                                      "probabilities": ["batch", "labels"]}
  # The LiteRT and ONNX model's ids inputs: [batch, seq_length], unless the kind's features
  # have another axis (choose's endings).
  portable_input_shape = ("batch", "seq_length")
  probe_seq_length = 64  # the probe's texts are cut here (or at --seq_length, if shorter)

  def __init__(self, config: FinetuneConfig):
    self.config = config
    # A built-in task's name stands for its files (`builtin_tasks`).
    self.train_file, self.dev_file = (
        builtin_tasks.resolve(path, config.data_dir, split, self.name)
        for path, split in ((config.train_file, "train"), (config.dev_file, "dev")))
    self.read()

  # === Without files ===

  @classmethod
  @abc.abstractmethod
  def serving(cls, model: keras.Model, task, vocabulary) -> Serving:
    """The SavedModel of `model` for `task` (a `TaskRecord`), on raw text."""

  @classmethod
  @abc.abstractmethod
  def huggingface_head(cls, task):
    """`interop.huggingface.TaskHead` of the kind's transformers class for `task`."""

  @staticmethod
  def head(encoder: keras.Model, num_labels: int, initializer_range: float) -> keras.Model:
    """The task model: features -> the kind's logits; BERT's classification head, unless the
    kind says."""
    return classifier_model(encoder, num_labels, initializer_range=initializer_range)

  @staticmethod
  def loss() -> keras.losses.Loss:
    """What training minimises, on the head's logits: cross-entropy of the logits against
    label ids, unless the kind says."""
    return losses.classification_loss()

  @classmethod
  def summary(cls, figures: dict) -> str:
    """`evaluate`'s figures in one line: the `ranking`'s, unless the kind says."""
    return "dev " + ", ".join(f"{name.removeprefix('dev_').replace('_', ' ')} "
                              f"{figures[name]:.4f}" for name in cls.ranking)

  @staticmethod
  def portable_outputs(logits: tf.Tensor) -> dict:
    """The LiteRT/ONNX model's outputs, float32, from the head's logits: `portable_shapes`;
    the logits and their softmax, unless the kind says."""
    return softmax_outputs(logits)

  @staticmethod
  def portable_logits(outputs: dict) -> np.ndarray:
    """The head's logits from a converted model's `portable_outputs` (numpy)."""
    return outputs["logits"]

  @staticmethod
  def portable_task(task) -> dict:
    """portable.json's entries of `task` (a `TaskRecord`): what post-processing needs; the
    labels (in the order of the logits) and whether an example is a pair (how to tokenize
    it), unless the kind says."""
    return {"labels": task.labels, "pair": task.pair}

  @staticmethod
  def one_example(inputs: dict) -> dict:
    """A batch of one pair's features ([1, seq], numpy or torch) as the head takes one
    example: as they are, unless the kind's inputs have another shape."""
    return inputs

  @staticmethod
  def head_logits(model: keras.Model, inputs: dict) -> np.ndarray:
    """The head's logits of one example as the Hugging Face check compares them: [outputs],
    or [tokens, outputs] for a kind with an output per token."""
    return keras.ops.convert_to_numpy(model(inputs, training=False))[0]

  @staticmethod
  def transformers_logits(outputs) -> np.ndarray:
    """The same logits of transformers' class's `outputs` on one example."""
    return outputs.logits[0].numpy()

  @classmethod
  def for_keras(cls, model: keras.Model, vocabulary, *, lower_case: bool,
                seq_length: int) -> None:
    """What `tasks.task_model` adds to a compiled model beside its vocabulary and case:
    nothing, unless the kind says."""
    return

  @classmethod
  def to_predict(cls, config: FinetuneConfig) -> tuple[list[str], tuple]:
    """(indices, columns) of --predict_file, read before anything trains: a TSV file's text
    columns (--text_columns) and its `index` column, or the rows' numbers."""
    return glue_reading.read_test(config.predict_file, data.column_names(config.text_columns),
                                  header=not config.no_header)

  @classmethod
  def signature_inputs(cls, task, columns: tuple) -> dict:
    """A batch of `to_predict`'s columns as the serving signature's inputs: `text`, or
    `text_a` and `text_b` for a task of pairs."""
    names = ("text_a", "text_b") if task.pair else ("text",)
    return {name: tf.constant(column) for name, column in zip(names, columns)}

  @staticmethod
  def predictions(outputs: dict) -> list:
    """The signature's outputs on a batch as each row's prediction: its label."""
    return [label.decode() for label in outputs["label"].numpy()]

  # === With files ===

  @abc.abstractmethod
  def read(self) -> None:
    """Reads and checks `train_file` and `dev_file`: sets `train`, `dev`, `labels`, `pair`."""

  @abc.abstractmethod
  def encode(self, pretrained) -> None:
    """The files as features, by `pretrained`'s vocabulary and case."""

  @abc.abstractmethod
  def train_batches(self, batch_size: int, order: np.ndarray) -> tf.data.Dataset:
    """The training rows `order` names, in batches of (features, targets)."""

  @abc.abstractmethod
  def evaluate(self, model: keras.Model) -> tuple[dict, object]:
    """(the dev figures, what the best epoch writes besides or None)."""

  def rank(self, figures: dict) -> tuple:
    """An epoch's figures as a key: the epoch kept has the greatest."""
    return tuple(figures[name] for name in self.ranking)

  @property
  def train_rows(self) -> int:
    """The training rows an epoch goes through (a long context is several)."""
    return len(self.train)

  def noted(self) -> dict:
    """What metrics.json notes besides the figures."""
    return {}

  def task_settings(self) -> dict:
    """task.json's entries of this kind (`TaskRecord`'s fields), beside the common ones."""
    return {}

  def write_outputs(self, model: keras.Model, directory: str, outputs) -> None:
    """Writes what this kind adds to the output_dir (nothing, unless the kind says);
    `outputs` are the best epoch's."""
    return


def missing_parts(kind: type) -> list[str]:
  """The parts of `TaskKind` that the class `kind` leaves out: an attribute it does not set,
  an abstract method it does not define."""
  def left_out(name: str) -> bool:
    part = getattr(kind, name, None)
    return part is None or getattr(part, "__isabstractmethod__", False)

  return [name for name in (*ATTRIBUTES, *sorted(TaskKind.__abstractmethods__))
          if left_out(name)]


def softmax_outputs(logits: tf.Tensor) -> dict:
  """A portable model's outputs where the head scores alternatives (classes, endings): the
  logits and their softmax, float32."""
  logits = tf.cast(logits, tf.float32)
  return {"logits": logits, "probabilities": tf.nn.softmax(logits)}


def predicted_classes(model: keras.Model, dataset: tf.data.Dataset) -> tuple:
  """(label ids, predicted ids) of `dataset`'s examples, dropout off: the class (or ending)
  of the greatest logit."""
  labels, predictions = [], []
  for features, label in dataset:
    labels.append(label.numpy())
    predictions.append(np.argmax(model(features, training=False).numpy(), axis=-1))
  return np.concatenate(labels), np.concatenate(predictions)


def without_pooler_training(encoder: keras.Model) -> keras.Model:
  """`encoder` with its pooler (the dense layer on `[CLS]`) kept as it is: a head on every
  token does not read it, so it would have no gradient."""
  encoder.get_layer("pooled_dense").trainable = False
  return encoder

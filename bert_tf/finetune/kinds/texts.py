"""What the kinds on texts or pairs of texts in TSV files (classify, regress) share: reading
their files, by the column flags, a built-in task's own columns or a GLUE task's layout (one
dev set or several: MNLI's matched and mismatched), a GLUE task's own figures on every dev set
(its score ranking epochs first), their serving signature's inputs (`text`, or `text_a` and
`text_b`) and the export check's texts."""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.data import builtin_tasks
from bert_tf.data.tokenization import Vocabulary
from bert_tf.finetune import data
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.glue import reading as glue_reading
from bert_tf.finetune.glue import scoring as glue_scoring
from bert_tf.finetune.glue import tasks as glue_tasks
from bert_tf.finetune.kinds.base import TaskKind
from bert_tf.finetune.kinds.references import TEXTS
from bert_tf.finetune.kinds.signatures import signature
from bert_tf.serving.verification import EXAMPLES, model_inputs, pair_ids, text_ids


def text_examples(config: FinetuneConfig, given: str, path: str) -> data.Examples:
  """The examples of the TSV file `path` (`given`, as the flag names it): a built-in task's by
  its own columns (`builtin_tasks.columns`), any other file by the column flags."""
  builtin = builtin_tasks.columns(given)
  if builtin:
    return data.read_examples(path, *builtin, header=True)
  return data.read_examples(path, data.column_names(config.text_columns), config.label_column,
                            header=not config.no_header)


def text_splits(config: FinetuneConfig, train_file: str, dev_file: str) -> tuple:
  """(GLUE task or None, training set, {dev set's name: examples}) of a TSV task: a GLUE
  task's files as it ships them (`--glue_task`; MNLI has two dev sets), else `train_file`
  and `dev_file` (the one dev set named ""), by their columns (`text_examples`)."""
  if config.glue_task:
    glue = glue_tasks.glue_task(config.glue_task)
    return (glue, *glue_reading.read_splits(glue, config.glue_dir))
  train, dev = (text_examples(config, given, path) for given, path in
                ((config.train_file, train_file), (config.dev_file, dev_file)))
  return None, train, {"": dev}


def text_signature(outputs, pair: bool):
  """`outputs(text=...)`, or `outputs(text_a=..., text_b=...)` for pairs, as a signature."""
  return signature(outputs, *(("text_a", "text_b") if pair else ("text",)))


class TextTask(TaskKind):
  """What classification and regression share (see the module's docstring)."""

  def read(self) -> None:
    self.glue, self.train, self.dev_sets = text_splits(self.config, self.train_file,
                                                       self.dev_file)
    self.dev = next(iter(self.dev_sets.values()))  # the kind's own figures are the first's
    self.pair = len(self.train.texts) == 2
    if self.glue:
      self.ranking = (f"dev_{glue_tasks.SCORE}", *self.ranking)

  def encode_texts(self, pretrained) -> None:
    self.text_encoder = data.text_encoder(
        pretrained.vocabulary, lower_case=pretrained.lower_case, seq_length=self.config.seq_length)

  def glue_figures(self, predictions: dict[str, list]) -> dict:
    """The GLUE task's dev figures (`glue.scoring.dev_figures`) of `predictions`, label names
    or numbers by dev set; none for a task that is not GLUE's."""
    if self.glue is None:
      return {}
    return glue_scoring.dev_figures(
        self.glue, {name: dev.labels for name, dev in self.dev_sets.items()}, predictions)

  @staticmethod
  def glue_summary(figures: dict) -> str:
    score = figures.get(f"dev_{glue_tasks.SCORE}")
    return "" if score is None else f"; GLUE score {score:.4f}"

  @classmethod
  def for_keras(cls, model: keras.Model, vocabulary, *, lower_case: bool,
                seq_length: int) -> None:
    """`model.text_features(texts)` (or `(texts_a, texts_b)`): raw strings as the input."""
    text_encoder = data.text_encoder(vocabulary, lower_case=lower_case, seq_length=seq_length)
    model.text_features = lambda *texts: text_encoder.features(
        *[tf.constant(list(t), tf.string) for t in texts])


class TextReference:
  """The export check's texts (pairs when the task has pairs) and the Keras model's outputs on
  each, a batch of one of the pre-training tokenizer's ids."""

  def __init__(self, model: keras.Model, task, vocabulary: Vocabulary):
    self.labels = task.labels
    tokenizer = vocabulary.tokenizer(task.lower_case)
    examples = list(EXAMPLES) if task.pair else [(text, "") for text in TEXTS]
    self.inputs = ({"text_a": [a for a, _ in examples], "text_b": [b for _, b in examples]}
                   if task.pair else {"text": [a for a, _ in examples]})
    self.outputs = np.concatenate([
        keras.ops.convert_to_numpy(model(model_inputs(*pair_ids(
            vocabulary, text_ids(tokenizer, a), text_ids(tokenizer, b), task.seq_length)),
            training=False)) for a, b in examples]).astype(np.float64)

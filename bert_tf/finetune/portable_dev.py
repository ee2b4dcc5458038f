"""The dev figure of a LiteRT or ONNX export beside the Keras model's, on a fine-tune's dev file:
what quantizing its weights cost (`python -m bert_tf.export --dev_file`). The dev file is read,
checked and scored by the fine-tune's kind as its training scores an epoch (`TaskKind.evaluate`),
the converted model standing in for the Keras model (`Converted`): it runs in its runtime, on
the pre-training tokenizer's ids, so the figures differ by the model alone."""

import types

import numpy as np
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.kinds.registry import kind_named
from bert_tf.finetune.task_record import TaskRecord
from bert_tf.serving.portable import INPUTS, PortableModel

BATCH = 32
FEATURES = ("token_ids", "segment_ids", "padding_mask")  # the Keras model's names of INPUTS


class Converted:
  """Stands for the Keras task model where its kind scores one (`evaluate` calls it, or its
  `predict`): `run` (a converted model: {input name: int32 array} -> {output name: array}) on
  the features' ids, batch by batch, its outputs turned back into the head's logits by
  `logits_of` (`TaskKind.portable_logits`)."""

  def __init__(self, run, logits_of):
    self.run, self.logits_of = run, logits_of

  def predict(self, features: dict, batch_size: int = BATCH, verbose: int = 0) -> np.ndarray:
    inputs = {name: np.asarray(features[ours], np.int32) for name, ours in zip(INPUTS, FEATURES)}
    batches = [self.run({name: value[i:i + batch_size] for name, value in inputs.items()})
               for i in range(0, len(inputs["input_ids"]), batch_size)]
    return self.logits_of({name: np.concatenate([np.asarray(batch[name]) for batch in batches])
                           for name in batches[0]})

  def __call__(self, features: dict, training: bool = False) -> tf.Tensor:
    return tf.constant(self.predict(features))


class PortableDev:
  """A fine-tune's dev file as its kind reads and encodes it, by the fine-tune's labels, pair,
  case and the export's sequence length."""

  def __init__(self, task: TaskRecord, portable: PortableModel, dev_file: str, *, data_dir: str,
               text_columns: str, label_column: str, header: bool):
    # The kind reads a training file too: the dev file stands for it (its labels are checked
    # against the fine-tune's below, and the fine-tune's are used).
    config = FinetuneConfig(
        task=task.task, train_file=dev_file, dev_file=dev_file, data_dir=data_dir,
        text_columns=text_columns, label_column=label_column, no_header=not header,
        seq_length=portable.seq_length,
        **{name: getattr(task, name) for name in (
            "max_query_length", "doc_stride", "max_answer_length", "n_best_size",
            "null_score_diff_threshold", "version_2_with_negative") if getattr(task, name)
           is not None})
    self.kind = kind_named(task.task)(config)
    if self.kind.pair != task.pair:
      raise UserError(f"--dev_file {dev_file}: the fine-tune takes "
                      f"{'pairs of texts' if task.pair else 'one text'}, the file does not")
    unknown = sorted(set(self.kind.labels) - set(task.labels))
    if unknown:
      raise UserError(f"--dev_file {dev_file} has labels the fine-tune has not: "
                      f"{', '.join(map(repr, unknown[:5]))}")
    self.kind.labels = task.labels
    self.kind.encode(types.SimpleNamespace(vocabulary=Vocabulary(portable.vocab_file),
                                           lower_case=portable.lower_case))
    self.figure_name = self.kind.ranking[0]

  @property
  def texts(self) -> list[str]:
    """The dev file's first texts, for the export's check of its tokenizer: a kind on texts
    in TSV files (classify, regress) has them as they are; the others none."""
    examples = getattr(self.kind.dev, "texts", None)
    return list(examples[0]) if examples else []

  def figure(self, model) -> float:
    """The kind's first dev figure of `model`: the Keras model or a `Converted`."""
    return self.kind.evaluate(model)[0][self.figure_name]

  def line(self, portable: PortableModel, runtime_run, export_name: str) -> str:
    """The dev figure of the export (`runtime_run`) beside the Keras model's, in a line."""
    keras_figure = self.figure(portable.model)
    figure = self.figure(Converted(runtime_run, self.kind.portable_logits))
    return (f"dev: {export_name} {self.figure_name} {figure:.4f}, the Keras model's "
            f"{keras_figure:.4f} ({len(self.kind.dev)} examples)")

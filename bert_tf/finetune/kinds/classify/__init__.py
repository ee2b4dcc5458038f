"""classify: a class per text or pair of texts (TSV; a GLUE classification task), BERT's
classification head on the pooled [CLS] output, cross-entropy; ranked by dev accuracy, then
macro F1 (a GLUE task's score first). Served as `classify(text)` or `classify(text_a, text_b)`
-> `probabilities` [batch, classes] (float32, in the order of `assets/classes.txt`) and `label`
[batch] (the most probable class's name); exported as `BertForSequenceClassification`."""

import os

import keras
import numpy as np
import tensorflow as tf

from bert_tf import files
from bert_tf.finetune import data
from bert_tf.finetune.data import TextEncoder
from bert_tf.finetune.kinds.base import DEV_BATCH, Serving, predicted_classes
from bert_tf.finetune.kinds.classify.metrics import macro_f1
from bert_tf.finetune.kinds.references import chosen_score
from bert_tf.finetune.kinds.signatures import checked_batch, save
from bert_tf.finetune.kinds.texts import TextReference, TextTask, text_signature
from bert_tf.finetune.metrics import accuracy
from bert_tf.finetune.output_dir import CLASSES_FILE
from bert_tf.interop.huggingface import TaskHead, label_names
from bert_tf.serving.numpy_bert import softmax
from bert_tf.serving.verification import Results


class ClassifierModule(tf.Module):
  """Tokenizer + classifier + class names, with the `classify` outputs."""

  def __init__(self, model: keras.Model, text_encoder: TextEncoder, classes: list[str]):
    super().__init__(name="bert_classifier_serving")
    self.model = model
    self.text_encoder = text_encoder
    self.classes = tf.constant(classes)

  def probabilities(self, *texts) -> tf.Tensor:
    logits = self.model(self.text_encoder.features(*texts), training=False)
    return tf.nn.softmax(tf.cast(logits, tf.float32))

  def outputs(self, **texts) -> dict:
    probabilities = self.probabilities(*checked_batch(**texts))
    return {"probabilities": probabilities,
            "label": tf.gather(self.classes, tf.argmax(probabilities, axis=-1))}


def classifier_serving(model: keras.Model, text_encoder: TextEncoder, classes: list[str], *,
                       pair: bool) -> Serving:
  module = ClassifierModule(model, text_encoder, classes)
  return Serving(module, text_signature(module.outputs, pair), {"classes.txt": classes})


def export_classifier(model: keras.Model, text_encoder: TextEncoder, classes: list[str],
                      directory: str, *, pair: bool) -> str:
  """Writes the `classify` SavedModel to `directory` atomically; returns `directory`."""
  return save(classifier_serving(model, text_encoder, classes, pair=pair), Classify.signature,
              directory)


class ClassifyReference(TextReference):
  """The classes' probabilities; the label by the probability of the export's."""

  def compared(self, outputs: dict, name: str) -> tuple[Results, Results]:
    probabilities = softmax(self.outputs)
    return ({"probabilities": probabilities, "label": probabilities.max(axis=-1)},
            {"probabilities": np.array(outputs["probabilities"]),
             "label": np.array([chosen_score(row, self.labels, label)
                                for row, label in zip(probabilities, outputs["label"])])})


class Classify(TextTask):
  """A class per text or pair (see the module's docstring)."""

  name = "classify"
  ranking = ("dev_accuracy", "dev_macro_f1")
  probe_figure = "accuracy"
  signature = "classify"
  reference = ClassifyReference

  def read(self) -> None:
    super().read()
    self.labels = data.task_classes(self.train, *self.dev_sets.values())

  def encode(self, pretrained) -> None:
    self.encode_texts(pretrained)
    self.dev_batches = {name: self._dataset(dev, batch_size=DEV_BATCH)
                        for name, dev in self.dev_sets.items()}

  def _dataset(self, examples: data.Examples, **options) -> tf.data.Dataset:
    return data.dataset(examples, self.labels, self.text_encoder, **options)

  def train_batches(self, batch_size: int, order: np.ndarray) -> tf.data.Dataset:
    return self._dataset(self.train, batch_size=batch_size, order=order)

  def evaluate(self, model: keras.Model) -> tuple[dict, None]:
    classes = {name: predicted_classes(model, batches)
               for name, batches in self.dev_batches.items()}
    labels, predictions = next(iter(classes.values()))
    return {"dev_accuracy": accuracy(labels, predictions),
            "dev_macro_f1": macro_f1(labels, predictions),
            **self.glue_figures({name: [self.labels[i] for i in predicted]
                                 for name, (_, predicted) in classes.items()})}, None

  @classmethod
  def summary(cls, figures: dict) -> str:
    return (f"dev accuracy {figures['dev_accuracy']:.4f}, macro F1 "
            f"{figures['dev_macro_f1']:.4f}" + cls.glue_summary(figures))

  def noted(self) -> dict:
    return {"classes": self.labels}

  def write_outputs(self, model: keras.Model, directory: str, outputs) -> None:
    files.write_json(os.path.join(directory, CLASSES_FILE), {"classes": self.labels})

  @classmethod
  def serving(cls, model: keras.Model, task, vocabulary) -> Serving:
    encoder = data.text_encoder(vocabulary, lower_case=task.lower_case,
                                seq_length=task.seq_length, pad_to_longest=True)
    return classifier_serving(model, encoder, task.labels, pair=task.pair)

  @classmethod
  def huggingface_head(cls, task) -> TaskHead:
    return TaskHead("BertForSequenceClassification", "classifier", pooler=True, config={
        **label_names(task.labels), "problem_type": "single_label_classification"})


KIND = Classify

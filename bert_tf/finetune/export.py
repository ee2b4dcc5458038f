"""The fine-tuned classifier as a SavedModel that classifies raw text: `classify(text)`, or
`classify(text_a, text_b)` for a task of pairs -> `probabilities` [batch, classes] (float32, in
the order of `assets/classes.txt`) and `label` [batch] (the most probable class's name).
Tokenized inside the graph as in training; loading needs only `import tensorflow_text` first."""

import os

import keras
import tensorflow as tf

from bert_tf import files
from bert_tf.finetune.data import TextEncoder


class ClassifierModule(tf.Module):
  """Tokenizer + classifier + class names, with the `classify` function."""

  def __init__(self, model: keras.Model, text_encoder: TextEncoder, classes: list[str]):
    super().__init__(name="bert_classifier_serving")
    self.model = model
    self.text_encoder = text_encoder
    self.classes = tf.constant(classes)

  def probabilities(self, *texts) -> tf.Tensor:
    logits = self.model(self.text_encoder.features(*texts), training=False)
    return tf.nn.softmax(tf.cast(logits, tf.float32))

  def outputs(self, *texts) -> dict:
    probabilities = self.probabilities(*texts)
    return {"probabilities": probabilities,
            "label": tf.gather(self.classes, tf.argmax(probabilities, axis=-1))}


def export_classifier(model: keras.Model, text_encoder: TextEncoder, classes: list[str],
                      directory: str, *, pair: bool) -> str:
  """Writes the `classify` SavedModel to `directory` atomically; returns `directory`."""
  module = ClassifierModule(model, text_encoder, classes)
  if pair:
    signature = tf.function(module.outputs, input_signature=[
        tf.TensorSpec([None], tf.string, name="text_a"),
        tf.TensorSpec([None], tf.string, name="text_b")])
  else:
    signature = tf.function(lambda text: module.outputs(text), input_signature=[
        tf.TensorSpec([None], tf.string, name="text")])
  temporary = files.temporary_directory(directory)
  tf.saved_model.save(module, temporary, signatures={"classify": signature})
  tf.io.gfile.makedirs(os.path.join(temporary, "assets"))
  files.write_text(os.path.join(temporary, "assets", "classes.txt"),
                   "".join(name + "\n" for name in classes))
  files.replace_directory(temporary, directory)
  return directory

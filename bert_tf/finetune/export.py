"""A fine-tuned model as a SavedModel that takes raw text, one signature per task kind:

- `classify(text)` or `classify(text_a, text_b)` -> `probabilities` [batch, classes] (float32,
  in the order of `assets/classes.txt`) and `label` [batch] (the most probable class's name);
- `score(text)` or `score(text_a, text_b)` -> `score` [batch] float32 (regression);
- `tag(text)` -> every word as the tokenizer splits the text, with its tag and character
  offsets (`served_tags`);
- `answer(question, context)` -> the answer cut from the context, any context length
  (`served_answers`).

Tokenized inside the graph as in training; loading needs only `import tensorflow_text` first.
A batch that is empty or whose inputs differ in size is an `InvalidArgumentError` naming it.
"""

import os

import keras
import tensorflow as tf

from bert_tf import files
from bert_tf.data.tokenization import Vocabulary
from bert_tf.export.savedmodel import serving_function
from bert_tf.finetune.data import TextEncoder, text_encoder
from bert_tf.finetune.served_answers import AnswerFinder
from bert_tf.finetune.served_tags import WordTagger

SIGNATURES = {"classify": "classify", "regress": "score", "tag": "tag", "answer": "answer"}


def checked_batch(**texts) -> list[tf.Tensor]:
  """The texts, once the batch is known to be non-empty and the same size in every input."""
  names = list(texts)
  first = texts[names[0]]
  checks = [tf.debugging.assert_positive(tf.size(first),
                                         message=f"{names[0]}: the batch is empty")]
  for name in names[1:]:
    checks.append(tf.debugging.assert_equal(
        tf.size(texts[name]), tf.size(first),
        message=f"{name} and {names[0]} hold different numbers of texts"))
  with tf.control_dependencies(checks):
    return [tf.identity(text) for text in texts.values()]


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

  def outputs(self, **texts) -> dict:
    probabilities = self.probabilities(*checked_batch(**texts))
    return {"probabilities": probabilities,
            "label": tf.gather(self.classes, tf.argmax(probabilities, axis=-1))}


class RegressorModule(tf.Module):
  """Tokenizer + regression model, with the `score` function."""

  def __init__(self, model: keras.Model, text_encoder: TextEncoder):
    super().__init__(name="bert_regressor_serving")
    self.model = model
    self.text_encoder = text_encoder

  def outputs(self, **texts) -> dict:
    features = self.text_encoder.features(*checked_batch(**texts))
    return {"score": tf.cast(self.model(features, training=False), tf.float32)[:, 0]}


def _signature(function, *names: str):
  """`function(**{name: strings})` as a signature taking a batch of strings per name."""
  return serving_function(*names)(lambda *texts: function(**dict(zip(names, texts))))


def _text_signature(outputs, pair: bool):
  """`outputs(text=...)`, or `outputs(text_a=..., text_b=...)` for pairs, as a signature."""
  return _signature(outputs, *(("text_a", "text_b") if pair else ("text",)))


def _save(module: tf.Module, signatures: dict, directory: str, assets: dict) -> str:
  """Saves `module` with `signatures` and the text files `assets` to `directory`
  atomically."""
  temporary = files.temporary_directory(directory)
  tf.saved_model.save(module, temporary, signatures=signatures)
  tf.io.gfile.makedirs(os.path.join(temporary, "assets"))
  for name, lines in assets.items():
    files.write_text(os.path.join(temporary, "assets", name), "".join(f"{x}\n" for x in lines))
  files.replace_directory(temporary, directory)
  return directory


def export_classifier(model: keras.Model, text_encoder: TextEncoder, classes: list[str],
                      directory: str, *, pair: bool) -> str:
  """Writes the `classify` SavedModel to `directory` atomically; returns `directory`."""
  module = ClassifierModule(model, text_encoder, classes)
  return _save(module, {"classify": _text_signature(module.outputs, pair)}, directory,
               {"classes.txt": classes})


def export_task(model: keras.Model, task: dict, vocabulary: Vocabulary, directory: str) -> str:
  """Writes the SavedModel of a fine-tuned model of any kind to `directory` atomically;
  `task` is the output_dir's task.json (its kind, labels, pair, seq_length, lower_case and,
  for answers, the window and answer settings). Returns `directory`."""
  kind = task["task"]
  if kind not in SIGNATURES:
    raise ValueError(f"unknown task kind {kind!r}")
  if kind in ("classify", "regress"):
    encoder = text_encoder(vocabulary, lower_case=task["lower_case"],
                           seq_length=task["seq_length"])
    if kind == "classify":
      return export_classifier(model, encoder, task["labels"], directory, pair=task["pair"])
    module = RegressorModule(model, encoder)
    return _save(module, {"score": _text_signature(module.outputs, task["pair"])}, directory,
                 {})
  if kind == "tag":
    module = WordTagger(model, vocabulary, task)
    signature = _signature(lambda **text: module.outputs(*checked_batch(**text)), "text")
    return _save(module, {"tag": signature}, directory, {"tags.txt": task["labels"]})
  module = AnswerFinder(model, vocabulary, task)
  signature = _signature(lambda **texts: module.outputs(*checked_batch(**texts)), "question",
                         "context")
  return _save(module, {"answer": signature}, directory, {})

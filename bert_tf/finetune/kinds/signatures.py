"""What every kind's SavedModel shares (`export.py` runs the kind's `serving` through it):
checking a batch, a signature on named batches of strings, saving atomically with the kind's
assets. A helper below the kinds: it imports none of them."""

import os

import tensorflow as tf

from bert_tf import files
from bert_tf.serving.savedmodel import serving_function


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


def signature(function, *names: str):
  """`function(**{name: strings})` as a signature taking a batch of strings per name."""
  return serving_function(*names)(lambda *texts: function(**dict(zip(names, texts))))


def save(serving, signature_name: str, directory: str) -> str:
  """Saves a kind's `Serving` (its module, with its function as the signature
  `signature_name`, and its assets) to `directory` atomically; returns `directory`."""
  temporary = files.temporary_directory(directory)
  tf.saved_model.save(serving.module, temporary, signatures={signature_name: serving.function})
  tf.io.gfile.makedirs(os.path.join(temporary, "assets"))
  for name, lines in serving.assets.items():
    files.write_text(os.path.join(temporary, "assets", name), "".join(f"{x}\n" for x in lines))
  files.replace_directory(temporary, directory)
  return directory

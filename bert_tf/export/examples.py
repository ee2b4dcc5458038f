"""What the quickstart prints at the end: the export answering corpus examples as a server.

The examples come from the user's own corpus: a sentence and the one after it (IsNext), the
same sentence and one from another document (NotNext), and a sentence with a word masked.
"""

import tensorflow as tf
import tensorflow_text  # noqa: F401  Registers the tokenizer ops the SavedModel uses.

from bert_tf.data import corpus


def corpus_examples(file_patterns, input_format: str, data_dir: str):
  """(first, following, unrelated, masked sentence, masked word) from the corpus."""
  path = corpus.list_files(file_patterns, data_dir)[0]
  documents = corpus.documents_from_text(tf.io.read_file(path), input_format).to_list()
  documents = [[s.decode("utf-8") for s in d] for d in documents]
  first_document = next(d for d in documents if len(d) >= 2)
  other_document = next(d for d in documents if d is not first_document)
  first, following = first_document[0], first_document[1]
  words = following.split()
  position = next((i for i, w in enumerate(words) if i >= 2 and w.isalpha() and len(w) > 3),
                  len(words) // 2)
  masked_word = words[position]
  words[position] = "[MASK]"
  return first, following, other_document[0], " ".join(words), masked_word


def show_predictions(export_dir: str, file_patterns, input_format: str,
                     data_dir: str) -> str:
  """Loads the SavedModel as a server would and shows its answers to corpus examples."""
  first, following, unrelated, masked, masked_word = corpus_examples(
      file_patterns, input_format, data_dir)
  served = tf.saved_model.load(export_dir)
  filled = served.signatures["fill_mask"](text=tf.constant([masked]))
  tokens = [t.decode("utf-8") for t in filled["tokens"][0, 0].numpy()]
  probabilities = filled["probabilities"][0, 0].numpy()
  is_next = served.signatures["is_next"](
      text_a=tf.constant([first, first]), text_b=tf.constant([following, unrelated]))
  probability = is_next["probability"].numpy()
  return "\n".join([
      f"The SavedModel in {export_dir}, loaded as a server would:",
      f"fill_mask: {masked!r}  (the word was {masked_word!r})",
      "  " + ", ".join(f"{t} {p:.2f}" for t, p in zip(tokens, probabilities)),
      f"is_next: {first!r}",
      f"  followed by {following!r}: P(IsNext) = {probability[0]:.2f}",
      f"  followed by {unrelated!r} (another document): P(IsNext) = {probability[1]:.2f}",
  ])

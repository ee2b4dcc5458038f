"""What the quickstart prints at the end: the export answering corpus examples as a server.

The examples come from the user's own corpus: a sentence and the one after it (IsNext), the
same sentence and one from another document (NotNext), a sentence with a word masked, and the
corpus's most frequent phrase with its last word masked. A small model trained briefly cannot
yet fill a word it has seen a few times, but should fill the phrase it has seen most.
"""

import collections
import dataclasses

import tensorflow as tf
import tensorflow_text  # noqa: F401  Registers the tokenizer ops the SavedModel uses.

from bert_tf.data import corpus, pieces

PHRASE_WORDS = 3
# Examples come from the start of the first file (up to a document boundary), however large.
EXAMPLE_BYTES = 4 << 20


@dataclasses.dataclass(frozen=True)
class MaskedSentence:
  text: str  # with "[MASK]" in place of `word`
  word: str


def mask_word(sentence: str, position: int) -> MaskedSentence:
  words = sentence.split()
  word, words[position] = words[position], "[MASK]"
  return MaskedSentence(" ".join(words), word)


def most_frequent_phrase(sentences: list[str]) -> MaskedSentence | None:
  """The first sentence holding the most frequent run of `PHRASE_WORDS` alphabetic words
  that ends in a word of four letters or more (case-insensitive), that word masked."""
  counts = collections.Counter()
  first_seen = {}
  for index, sentence in enumerate(sentences):
    words = sentence.split()
    for start in range(len(words) - PHRASE_WORDS + 1):
      phrase = words[start:start + PHRASE_WORDS]
      if all(w.isalpha() for w in phrase) and len(phrase[-1]) >= 4:
        key = tuple(w.lower() for w in phrase)
        counts[key] += 1
        first_seen.setdefault(key, (index, start + PHRASE_WORDS - 1))
  if not counts:
    return None
  index, position = first_seen[counts.most_common(1)[0][0]]
  return mask_word(sentences[index], position)


def corpus_examples(file_patterns, input_format: str, data_dir: str):
  """(first, following, unrelated, [masked sentences]) from the corpus's first file."""
  prefix = pieces.prefix_range(corpus.list_files(file_patterns, data_dir)[0], EXAMPLE_BYTES)
  documents = corpus.read_ranges([prefix], input_format)
  documents = [[s.decode("utf-8") for s in d] for d in documents.as_numpy_iterator()]
  first_document = next(d for d in documents if len(d) >= 2)
  other_document = next(d for d in documents if d is not first_document)
  first, following = first_document[0], first_document[1]
  words = following.split()
  position = next((i for i, w in enumerate(words) if i >= 2 and w.isalpha() and len(w) > 3),
                  len(words) // 2)
  masked = [mask_word(following, position)]
  phrase = most_frequent_phrase([s for d in documents for s in d])
  if phrase is not None:
    masked.append(phrase)
  return first, following, other_document[0], masked


def show_predictions(export_dir: str, file_patterns, input_format: str,
                     data_dir: str) -> str:
  """Loads the SavedModel as a server would and shows its answers to corpus examples."""
  first, following, unrelated, masked = corpus_examples(file_patterns, input_format, data_dir)
  served = tf.saved_model.load(export_dir)
  filled = served.signatures["fill_mask"](text=tf.constant([m.text for m in masked]))
  lines = [f"The SavedModel in {export_dir}, loaded as a server would:"]
  for example, tokens, probabilities in zip(
      masked, filled["tokens"][:, 0].numpy(), filled["probabilities"][:, 0].numpy()):
    lines += [f"fill_mask: {example.text!r}  (the word was {example.word!r})",
              "  " + ", ".join(f"{t.decode('utf-8')} {p:.2f}"
                               for t, p in zip(tokens, probabilities))]
  is_next = served.signatures["is_next"](
      text_a=tf.constant([first, first]), text_b=tf.constant([following, unrelated]))
  probability = is_next["probability"].numpy()
  return "\n".join(lines + [
      f"is_next: {first!r}",
      f"  followed by {following!r}: P(IsNext) = {probability[0]:.2f}",
      f"  followed by {unrelated!r} (another document): P(IsNext) = {probability[1]:.2f}",
  ])

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


@dataclasses.dataclass(frozen=True)
class CorpusExamples:
  """What a corpus offers to show: each part is left out (None, []) when it offers none (a
  corpus of one document has no unrelated sentence, one of one-line documents no pair)."""

  first: str | None  # a sentence followed by `following` in its document
  following: str | None
  unrelated: str | None  # the first sentence of another document
  masked: list[MaskedSentence]


def corpus_examples(file_patterns, input_format: str, data_dir: str) -> CorpusExamples:
  """The examples of the corpus's first file."""
  prefix = pieces.prefix_range(corpus.list_files(file_patterns, data_dir)[0], EXAMPLE_BYTES)
  documents = corpus.read_ranges([prefix], input_format)
  documents = [[s.decode("utf-8") for s in d] for d in documents.as_numpy_iterator()]
  paired = next((d for d in documents if len(d) >= 2), None)
  first, following = (paired[0], paired[1]) if paired else (None, None)
  unrelated = next((d[0] for d in documents if d is not paired and d), None)
  masked = []
  if following:
    words = following.split()
    masked.append(mask_word(following, next(
        (i for i, w in enumerate(words) if i >= 2 and w.isalpha() and len(w) > 3),
        len(words) // 2)))
  phrase = most_frequent_phrase([s for d in documents for s in d])
  if phrase is not None:
    masked.append(phrase)
  return CorpusExamples(first, following, unrelated if paired else None, masked)


def show_predictions(export_dir: str, file_patterns, input_format: str,
                     data_dir: str) -> str:
  """Loads the SavedModel as a server would and shows its answers to corpus examples."""
  examples = corpus_examples(file_patterns, input_format, data_dir)
  served = tf.saved_model.load(export_dir)
  lines = [f"The SavedModel in {export_dir}, loaded as a server would:"]
  if examples.masked:
    filled = served.signatures["fill_mask"](text=tf.constant([m.text for m in examples.masked]))
    for example, tokens, probabilities in zip(
        examples.masked, filled["tokens"][:, 0].numpy(), filled["probabilities"][:, 0].numpy()):
      lines += [f"fill_mask: {example.text!r}  (the word was {example.word!r})",
                "  " + ", ".join(f"{t.decode('utf-8')} {p:.2f}"
                                 for t, p in zip(tokens, probabilities))]
  if examples.first:
    seconds = [examples.following] + ([examples.unrelated] if examples.unrelated else [])
    probability = served.signatures["is_next"](
        text_a=tf.constant([examples.first] * len(seconds)),
        text_b=tf.constant(seconds))["probability"].numpy()
    lines += [f"is_next: {examples.first!r}",
              f"  followed by {examples.following!r}: P(IsNext) = {probability[0]:.2f}"]
    if examples.unrelated:
      lines.append(f"  followed by {examples.unrelated!r} (another document): P(IsNext) = "
                   f"{probability[1]:.2f}")
  if len(lines) == 1:
    lines.append("  (the corpus's first file has no sentence to show it)")
  return "\n".join(lines)

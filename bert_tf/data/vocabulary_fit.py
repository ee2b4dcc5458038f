"""How well a vocabulary fits a corpus: on a sample of it, how many WordPieces a word takes, how
many words are cut into two or three or more pieces or become `[UNK]`, and which frequent words
are cut, as the model's own tokenizer (`tokenization.BertTokenizer`) cuts them.

Counted per word occurrence, words as the tokenizer splits the text (whitespace, punctuation,
CJK characters), so a figure is the share of the running text. `python -m bert_tf.vocab
--report` prints it beside the same figures for a vocabulary learned from the corpus;
`--add_vocabulary` (`vocabulary_growth`) picks the words it adds from the same counts.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from bert_tf.data import corpus_sample
from bert_tf.data.tokenization import UNK, Vocabulary

# The sample the figures are measured on: about 1.3 million words of English, in which a word
# that is a thousandth of the text is seen over a thousand times.
REPORT_SAMPLE_BYTES = 8 << 20
CUT_WORDS_SHOWN = 20


@dataclasses.dataclass(frozen=True)
class WordCounts:
  """Each distinct word of a text and how a vocabulary cuts it: `counts[word]` occurrences,
  `pieces[word]` WordPieces. A word is its pieces joined (the text as the tokenizer normalised
  it); every word the vocabulary cannot spell counts under `[UNK]`, of one piece."""

  counts: dict
  pieces: dict

  @property
  def words(self) -> int:
    return sum(self.counts.values())

  def cut_words(self, limit: int, min_count: int = 1) -> list[str]:
    """The `limit` most frequent words cut into two or more pieces and seen at least
    `min_count` times; ties in the order of the words."""
    cut = [w for w, n in self.counts.items() if self.pieces[w] >= 2 and n >= min_count]
    return sorted(cut, key=lambda w: (-self.counts[w], w))[:limit]


class _WordCounter(tf.Module):
  """Tokenizes a batch of sentences and gives its distinct words with their counts."""

  def __init__(self, vocabulary: Vocabulary, lower_case: bool):
    super().__init__()
    self.tokenizer = vocabulary.tokenizer(lower_case)
    self.continues = tf.constant(vocabulary.continuation_flags())
    self.piece_text = tf.constant([t[2:] if t.startswith("##") else t for t in vocabulary.tokens])

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def __call__(self, sentences):
    ids = self.tokenizer.tokenize(sentences).flat_values  # [tokens]
    starts_word = tf.logical_not(tf.gather(self.continues, ids))
    word_of_piece = tf.cumsum(tf.cast(starts_word, tf.int64)) - 1  # [tokens]
    words = tf.RaggedTensor.from_value_rowids(tf.gather(self.piece_text, ids), word_of_piece)
    distinct, index, counts = tf.unique_with_counts(tf.strings.reduce_join(words, axis=1))
    pieces = tf.math.unsorted_segment_max(words.row_lengths(), index, tf.size(distinct))
    return distinct, counts, pieces


def count_words(sentences: tf.data.Dataset, vocabulary: Vocabulary,
                lower_case: bool) -> WordCounts:
  """The words of `sentences` (batches of strings) as `vocabulary` cuts them."""
  counter = _WordCounter(vocabulary, lower_case)
  counts, pieces = {}, {}
  for batch in sentences:
    distinct, occurrences, piece_counts = (t.numpy() for t in counter(batch))
    for word, n, p in zip(distinct.tolist(), occurrences.tolist(), piece_counts.tolist()):
      word = word.decode("utf-8")
      counts[word] = counts.get(word, 0) + n
      pieces[word] = p
  return WordCounts(counts, pieces)


def sample_sentences(file_patterns, input_format: str, data_dir: str = "data",
                     max_bytes: int = REPORT_SAMPLE_BYTES) -> tuple[tf.data.Dataset, dict]:
  """(the sentences of the report's sample, what the sample is: bytes and files)."""
  ranges, file_count = corpus_sample.sample_ranges(file_patterns, max_bytes, data_dir)
  return (corpus_sample.sentences(ranges, input_format),
          {"bytes": sum(r.length for r in ranges), "files": file_count})


def piece_ids(words: list[str], vocabulary: Vocabulary, lower_case: bool) -> list[list[int]]:
  """The ids of each word's WordPieces under `vocabulary`."""
  if not words:
    return []
  return vocabulary.tokenizer(lower_case).tokenize(tf.constant(words)).to_list()


def pieces_of(words: list[str], vocabulary: Vocabulary, lower_case: bool) -> list[list[str]]:
  """Each word's WordPieces under `vocabulary`."""
  return [[vocabulary.tokens[i] for i in row]
          for row in piece_ids(words, vocabulary, lower_case)]


def figures(words: WordCounts, vocabulary: Vocabulary, lower_case: bool,
            shown: int = CUT_WORDS_SHOWN) -> dict:
  """The fit of `vocabulary` to the counted text, as JSON-ready figures."""
  counts = np.array(list(words.counts.values()), np.int64)
  pieces = np.array([words.pieces[w] for w in words.counts], np.int64)
  total = max(int(counts.sum()), 1)
  cut = words.cut_words(shown)
  return {
      "vocab_file": vocabulary.path, "tokens": len(vocabulary), "words": int(counts.sum()),
      "pieces_per_word": float((counts * pieces).sum() / total),
      "cut_2": float(counts[pieces >= 2].sum() / total),
      "cut_3": float(counts[pieces >= 3].sum() / total),
      "unk": words.counts.get(UNK, 0) / total,
      "cut_words": [{"word": w, "count": words.counts[w], "pieces": p}
                    for w, p in zip(cut, pieces_of(cut, vocabulary, lower_case))]}


def table(columns: list[tuple[str, dict]]) -> str:
  """The figures of several vocabularies side by side, then each one's most frequent cut
  words with their pieces: what `--report` prints."""
  rows = (("tokens", lambda f: f"{f['tokens']:,}"),
          ("words in the sample", lambda f: f"{f['words']:,}"),
          ("WordPieces per word", lambda f: f"{f['pieces_per_word']:.3f}"),
          ("words cut into >= 2 pieces", lambda f: f"{f['cut_2']:.1%}"),
          ("words cut into >= 3 pieces", lambda f: f"{f['cut_3']:.1%}"),
          ("[UNK] words", lambda f: f"{f['unk']:.2%}"))
  width = max(28, *(len(name) + 2 for name, _ in columns))
  lines = ["".ljust(28) + "".join(name.ljust(width) for name, _ in columns)]
  lines += [label.ljust(28) + "".join(show(f).ljust(width) for _, f in columns)
            for label, show in rows]
  for name, f in columns:
    lines.append(f"Most frequent words cut by {name} (occurrences, pieces):")
    lines += [f"  {c['word']:<24} {c['count']:>9,}  {' '.join(c['pieces'])}"
              for c in f["cut_words"]] or ["  (none)"]
  return "\n".join(line.rstrip() for line in lines)

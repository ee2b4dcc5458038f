"""The examples the quickstart prints: the most frequent phrase with its last word masked."""

import pytest

from bert_tf.serving.examples import (
  CorpusExamples,
  MaskedSentence,
  corpus_examples,
  most_frequent_phrase,
)


def test_most_frequent_phrase_masks_its_last_word_in_the_first_sentence_holding_it():
  sentences = ["Changed in version 3.8: the order was fixed.",
               "See the module for details.",
               "New in version 3.6.",
               "changed in version 3.9: names are checked.",
               "Changed in version 3.10: more."]
  assert most_frequent_phrase(sentences) == MaskedSentence(
      "Changed in [MASK] 3.8: the order was fixed.", "version")


def test_phrases_need_alphabetic_words_and_a_long_last_word():
  assert most_frequent_phrase(["a b c", "a b c", "x = 1 + 2"]) is None
  assert most_frequent_phrase(["one two three", "x y z"]) == MaskedSentence(
      "one two [MASK]", "three")


def test_builtin_corpus_examples(data_dir):
  examples = corpus_examples("builtin", "sentence_per_line", data_dir)
  first, following, unrelated, masked = (examples.first, examples.following,
                                         examples.unrelated, examples.masked)
  assert first and following and unrelated and first != unrelated
  assert [m.text.count("[MASK]") for m in masked] == [1, 1]
  assert masked[1] == MaskedSentence(masked[1].text, "version")
  assert masked[1].text.startswith("Changed in [MASK] 3.")


@pytest.mark.parametrize("text,expected", [
    ("Only one document here.\nIts second sentence follows.\n",
     CorpusExamples("Only one document here.", "Its second sentence follows.", None,
                    [MaskedSentence("Its second [MASK] follows.", "sentence"),
                     MaskedSentence("Only one [MASK] here.", "document")])),
    ("One line.\n\nAnother line.\n", CorpusExamples(None, None, None, [])),
])
def test_a_corpus_offering_less_shows_less(tmp_path, text, expected):
  path = tmp_path / "small.txt"
  path.write_text(text)
  assert corpus_examples(str(path), "sentence_per_line", str(tmp_path)) == expected

"""How well a vocabulary fits a corpus (`bert_tf.data.vocabulary_fit`, `python -m bert_tf.vocab
--report`), on real text: the built-in corpus and the standard library's docstrings."""

import json
import logging

import pytest
import tensorflow as tf

from bert_tf import vocab
from bert_tf.data import vocabulary_fit
from bert_tf.data.tokenization import Vocabulary
from helpers import docstring_corpus


def test_the_counts_are_the_tokenizers_words_and_pieces(vocab_file, tmp_path):
  """Every word and piece of the text is counted once, as the model's tokenizer gives them;
  a cut word's pieces spell it."""
  corpus = docstring_corpus(tmp_path)
  sentences = [line for line in open(corpus, encoding="utf-8").read().splitlines() if line]
  vocabulary = Vocabulary(vocab_file)
  counted = vocabulary_fit.count_words(
      tf.data.Dataset.from_tensor_slices(sentences).batch(64), vocabulary, True)
  ids = vocabulary.tokenizer(True).tokenize(tf.constant(sentences)).flat_values.numpy()
  continues = [vocabulary.tokens[i].startswith("##") for i in ids]
  assert counted.words == continues.count(False)
  assert sum(n * counted.pieces[w] for w, n in counted.counts.items()) == len(ids)
  figures = vocabulary_fit.figures(counted, vocabulary, True, shown=5)
  assert figures["pieces_per_word"] == pytest.approx(len(ids) / counted.words)
  assert 0 < figures["cut_3"] < figures["cut_2"] < 1
  assert 0 <= figures["unk"] < 0.05
  for cut in figures["cut_words"]:
    assert len(cut["pieces"]) >= 2
    assert "".join(p.removeprefix("##") for p in cut["pieces"]) == cut["word"]
  counts = [cut["count"] for cut in figures["cut_words"]]
  assert counts == sorted(counts, reverse=True) and len(counts) == 5


def test_report_beside_a_vocabulary_learned_from_the_corpus(vocab_file, tmp_path, caplog):
  """The built-in corpus's vocabulary on the docstrings: the one learned from them cuts fewer
  words; the table shows both, and the JSON holds the same figures. The report says it learns
  one, and names no file it wrote (the learned vocabulary's is temporary, gone at the end)."""
  corpus = docstring_corpus(tmp_path)
  config = vocab.VocabCommandConfig(input_files=corpus, vocab_file=vocab_file, report=True)
  with caplog.at_level(logging.INFO, logger="bert_tf"):
    result = vocab.report(config)
  said = [record.getMessage() for record in caplog.records]
  assert [line for line in said if line.startswith("Learning a ")] and not [
      line for line in said if line.startswith("Wrote ")], said
  ours, learned = (result["vocabularies"][name] for name in (vocab_file, vocab.LEARNED))
  assert ours["words"] == learned["words"] > 5000
  assert learned["pieces_per_word"] < ours["pieces_per_word"]
  assert learned["cut_2"] < ours["cut_2"]
  assert ours["cut_words"] and ours["cut_words"][0]["word"] not in ("", "[UNK]")
  assert result["sample"]["files"] == 1
  json.dumps(result)
  table = vocabulary_fit.table(list(result["vocabularies"].items()))
  assert f"{ours['pieces_per_word']:.3f}" in table and "words cut into >= 3 pieces" in table
  assert f"Most frequent words cut by {vocab.LEARNED}" in table


"""Tokens with their character offsets in the original text: the ids are the pre-training
tokenizer's, and each token's slice of the original text is the text it was made from, through
lower-casing, accent stripping and deleted characters."""

import pytest
import tensorflow as tf

from bert_tf.data.token_offsets import tokenize_with_offsets
from bert_tf.data.tokenization import Vocabulary

TEXTS = ["Héllo, Wörld! The ΟΔΟΣ café\u200b is naïve.", "", "İstanbul ﬁne…  x\ty",
         "  leading and trailing  ", "Python's debugger\u00ad breakpoints"]


@pytest.fixture(scope="module")
def vocabulary(vocab_file):
  return Vocabulary(vocab_file)


@pytest.mark.parametrize("lower_case", [True, False])
def test_ids_are_the_tokenizers_and_slices_are_the_tokens_text(vocabulary, lower_case):
  tokenizer = vocabulary.tokenizer(lower_case)
  ids, starts, ends = tokenize_with_offsets(tokenizer, tf.constant(TEXTS))
  assert ids.to_list() == tokenizer.tokenize(tf.constant(TEXTS)).to_list()
  for text, row_ids, row_starts, row_ends in zip(TEXTS, ids.to_list(), starts.to_list(),
                                                 ends.to_list()):
    for token_id, start, end in zip(row_ids, row_starts, row_ends):
      piece = text[start:end]
      token = vocabulary.tokens[token_id]
      normalised = tokenizer.normalizer.normalize(tf.constant(piece)).numpy().decode()
      assert token == "[UNK]" or normalised == token.removeprefix("##"), (piece, token)


def spans(vocabulary, text):
  ids, starts, ends = tokenize_with_offsets(vocabulary.tokenizer(True), tf.constant([text]))
  return [(text[s:e], vocabulary.tokens[i])
          for i, s, e in zip(ids[0].numpy(), starts[0].numpy(), ends[0].numpy())]


def test_a_word_and_its_pieces_keep_the_text_as_written(vocabulary):
  assert spans(vocabulary, "Its Café  Müller") == [
      ("Its", "its"), ("C", "c"), ("a", "##a"), ("f", "##f"), ("é", "##e"),
      ("Mül", "mul"), ("l", "##l"), ("e", "##e"), ("r", "##r")]
  # A deleted character (zero-width space, soft hyphen) inside a word is inside its token's
  # span; one at a word's end is in no span.
  assert spans(vocabulary, "class\u200b de\u00adf") == [("class", "class"), ("de\u00adf", "def")]


def test_every_code_point_normalises_as_it_does_alone(vocabulary):
  """The offsets rest on the text normalised whole being the characters normalised one by one;
  the function checks it, so tokenizing every code point between neighbours (and a final
  sigma) must not fail. Latin, Greek, Cyrillic, combining marks, ligatures, full-width forms
  and a sample of the astral planes."""
  code_points = [*range(0x3000), *range(0xFB00, 0x10000), *range(0x1D400, 0x1D800),
                 *range(0xE0000, 0xE0080), 0x10FFFF]
  characters = [chr(c) for c in code_points if not 0xD800 <= c <= 0xDFFF]
  texts = ["".join(characters[i:i + 64]) + " ΑΣ Σ" for i in range(0, len(characters), 64)]
  ids, starts, ends = tokenize_with_offsets(vocabulary.tokenizer(True), tf.constant(texts))
  assert ids.to_list() == vocabulary.tokenizer(True).tokenize(tf.constant(texts)).to_list()
  assert all(0 <= s < e <= len(t) for t, row_s, row_e in zip(texts, starts.to_list(),
                                                              ends.to_list())
             for s, e in zip(row_s, row_e))


def test_the_same_in_a_graph_as_a_serving_signature_runs_it(vocabulary):
  tokenizer = vocabulary.tokenizer(True)
  in_graph = tf.function(lambda text: tokenize_with_offsets(tokenizer, text), autograph=False,
                         input_signature=[tf.TensorSpec([None], tf.string)])
  eager = tokenize_with_offsets(tokenizer, tf.constant(TEXTS))
  for got, expected in zip(in_graph(tf.constant(TEXTS)), eager):
    assert got.to_list() == expected.to_list()

"""The vocabulary file and the in-graph WordPiece tokenizer (SPEC §2)."""

import pytest
import tensorflow as tf

from bert_tf.data import tokenization
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError

TOKENS = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",  # 0-4
    "[unused0]", "[unused3]", "the", "cafe", "un",  # 5-9
    "##aff", "##able", ",", "!", "hello",  # 10-14
    "world", "a", "b", "##b", "x",  # 15-19
    "##x", "Hello", "Café", ".", "一",  # 20-24
]


def _vocab_file(tmp_path, tokens, name="vocab.txt", newline="\n") -> str:
  path = tmp_path / name
  path.write_bytes("".join(t + newline for t in tokens).encode("utf-8"))
  return str(path)


@pytest.fixture
def vocabulary(tmp_path):
  return Vocabulary(_vocab_file(tmp_path, TOKENS))


def _tokenize(vocabulary, texts, lower_case=True):
  return vocabulary.tokenizer(lower_case).tokenize(tf.constant(texts)).to_list()


# Vocabulary

def test_vocabulary_ids_are_line_numbers(vocabulary):
  assert len(vocabulary) == len(TOKENS)
  assert vocabulary.tokens == TOKENS
  assert (vocabulary.pad_id, vocabulary.unk_id, vocabulary.cls_id, vocabulary.sep_id,
          vocabulary.mask_id) == (0, 1, 2, 3, 4)


def test_vocabulary_crlf_file(tmp_path):
  vocabulary = Vocabulary(_vocab_file(tmp_path, TOKENS, newline="\r\n"))
  assert vocabulary.tokens == TOKENS


def test_vocabulary_special_tokens_anywhere_after_pad(tmp_path):
  tokens = ["[PAD]", "the", "[MASK]", "a", "[SEP]", "[CLS]", "[UNK]"]
  vocabulary = Vocabulary(_vocab_file(tmp_path, tokens))
  assert (vocabulary.pad_id, vocabulary.unk_id, vocabulary.cls_id, vocabulary.sep_id,
          vocabulary.mask_id) == (0, 6, 5, 4, 2)


def test_vocabulary_missing_file(tmp_path):
  path = str(tmp_path / "nowhere" / "vocab.txt")
  with pytest.raises(UserError, match="not found") as error:
    Vocabulary(path)
  assert path in str(error.value)


def test_vocabulary_missing_special_tokens(tmp_path):
  path = _vocab_file(tmp_path, ["[PAD]", "[UNK]", "[SEP]", "the", "a"])
  with pytest.raises(UserError) as error:
    Vocabulary(path)
  message = str(error.value)
  assert "[CLS]" in message and "[MASK]" in message
  assert "[PAD]" not in message.split("lacks")[1]
  assert "[UNK]" not in message and "[SEP]" not in message


def test_vocabulary_pad_not_first(tmp_path):
  path = _vocab_file(tmp_path, ["[UNK]", "[PAD]", "[CLS]", "[SEP]", "[MASK]", "the"])
  with pytest.raises(UserError, match=r"\[PAD\].*first"):
    Vocabulary(path)


def test_replacement_ids_exclude_bracketed_tokens(vocabulary):
  ids = vocabulary.replacement_ids()
  assert ids == [i for i in range(len(TOKENS)) if i not in (0, 1, 2, 3, 4, 5, 6)]
  assert all(not (TOKENS[i].startswith("[") and TOKENS[i].endswith("]")) for i in ids)
  assert 6 not in ids  # [unused3]


def test_replacement_ids_keep_brackets_that_are_not_reserved(tmp_path):
  tokens = list(tokenization.SPECIAL_TOKENS) + ["[", "]", "[]", "##]", "[a", "[unused99]"]
  ids = Vocabulary(_vocab_file(tmp_path, tokens)).replacement_ids()
  assert [tokens[i] for i in ids] == ["[", "]", "[]", "##]", "[a"]


def test_replacement_ids_none_left(tmp_path):
  tokens = list(tokenization.SPECIAL_TOKENS) + ["[unused0]"]
  with pytest.raises(UserError, match="no ordinary tokens"):
    Vocabulary(_vocab_file(tmp_path, tokens)).replacement_ids()


def test_continuation_flags(vocabulary):
  flags = vocabulary.continuation_flags()
  assert len(flags) == len(TOKENS)
  assert [i for i, f in enumerate(flags) if f] == [10, 11, 18, 20]


def test_real_vocabulary(vocab_file):
  vocabulary = Vocabulary(vocab_file)
  assert vocabulary.tokens[:5] == list(tokenization.SPECIAL_TOKENS)
  assert 1000 < len(vocabulary) <= 8000
  assert len(set(vocabulary.tokens)) == len(vocabulary)
  replacement = vocabulary.replacement_ids()
  assert not set(replacement) & {0, 1, 2, 3, 4}
  # Any word can be spelled: every letter has a continuation piece.
  assert all(f"##{letter}" in vocabulary.tokens for letter in "abcdefghijklmnopqrstuvwxyz")
  assert sum(vocabulary.continuation_flags()) > 50


# Tokenizer

def test_lower_case_accents_punctuation_pieces(vocabulary):
  assert _tokenize(vocabulary, ["The Café, unaffable!", "HELLO world!!"]) == [
      [7, 8, 12, 9, 10, 11, 13], [14, 15, 13, 13]]


def test_cased_keeps_case_and_accents(vocabulary):
  assert _tokenize(vocabulary, ["Hello Café hello the The"], lower_case=False) == [
      [21, 22, 14, 7, 1]]


def test_pieces_and_unknown_words(vocabulary):
  # "xxxx" = x ##x ##x ##x; "bb" = b ##b; "zzz" has no pieces at all; "ab" = a ##b.
  assert _tokenize(vocabulary, ["xxxx bb zzz ab"]) == [[19, 20, 20, 20, 17, 18, 1, 16, 18]]


def test_partial_match_is_unknown_word(vocabulary):
  # WordPiece gives the whole word [UNK] when its tail has no piece, not a prefix + [UNK].
  assert _tokenize(vocabulary, ["helloq cafe"]) == [[1, 8]]


def test_whitespace_and_control_characters(vocabulary):
  assert _tokenize(vocabulary, ["hello\tworld\x00\x07 \u00a0the\r\n\u200b,"]) == [
      [14, 15, 7, 12]]


def test_cjk_characters_split(vocabulary):
  assert _tokenize(vocabulary, ["a一b", "一一"]) == [[16, 24, 17], [24, 24]]


def test_empty_and_blank_sentences(vocabulary):
  assert _tokenize(vocabulary, ["", " \t ", "\x00"]) == [[], [], []]


def test_word_over_200_bytes_is_unknown(vocabulary):
  limit = tokenization.MAX_BYTES_PER_WORD
  assert limit == 200
  at_limit, over_limit = _tokenize(vocabulary, ["x" * limit, "x" * (limit + 1)])
  assert at_limit == [19] + [20] * (limit - 1)
  assert over_limit == [1]


def test_long_word_does_not_affect_its_neighbours(vocabulary):
  assert _tokenize(vocabulary, ["hello " + "x" * 500 + " world."]) == [[14, 1, 15, 23]]


def test_tokenizer_runs_in_a_tf_function(vocabulary):
  tokenizer = vocabulary.tokenizer(True)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
  def tokenize(texts):
    return tokenizer.tokenize(texts)

  tokens = tokenize(tf.constant(["The world.", "cafe"]))
  assert tokens.dtype == tf.int32
  assert tokens.to_list() == [[7, 15, 23], [8]]


def test_real_vocabulary_tokenizes_corpus_text(vocab_file):
  vocabulary = Vocabulary(vocab_file)
  text = "The for statement is used to iterate over the elements of a sequence."
  ids = _tokenize(vocabulary, [text])[0]
  assert vocabulary.unk_id not in ids
  words = [vocabulary.tokens[i] for i in ids]
  assert words[:3] == ["the", "for", "statement"] and words[-1] == "."
  assert "".join(w[2:] if w.startswith("##") else " " + w for w in words).strip() == (
      text.lower().replace(".", " ."))

"""The vocabulary file and the in-graph WordPiece tokenizer (docs/design.md#tokenization)."""

import unicodedata

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


def test_vocabulary_with_a_token_twice(tmp_path):
  path = _vocab_file(tmp_path, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "the"])
  with pytest.raises(UserError, match="lists tokens more than once .each needs one id.: 'the'"):
    Vocabulary(path)


def test_vocabulary_that_is_a_directory(tmp_path):
  with pytest.raises(UserError, match="is a directory: name its vocab.txt"):
    Vocabulary(str(tmp_path))


def test_replacement_ids_exclude_bracketed_tokens(vocabulary):
  ids = vocabulary.replacement_ids()
  assert ids == [i for i in range(len(TOKENS)) if i not in (0, 1, 2, 3, 4, 5, 6)]
  assert all(not (TOKENS[i].startswith("[") and TOKENS[i].endswith("]")) for i in ids)
  assert 6 not in ids  # [unused3]


def test_replacement_ids_keep_brackets_that_are_not_reserved(tmp_path):
  tokens = list(tokenization.REQUIRED_TOKENS) + ["[", "]", "[]", "##]", "[a", "[unused99]"]
  ids = Vocabulary(_vocab_file(tmp_path, tokens)).replacement_ids()
  assert [tokens[i] for i in ids] == ["[", "]", "[]", "##]", "[a"]


def test_replacement_ids_none_left(tmp_path):
  tokens = list(tokenization.REQUIRED_TOKENS) + ["[unused0]"]
  with pytest.raises(UserError, match="no ordinary tokens"):
    Vocabulary(_vocab_file(tmp_path, tokens)).replacement_ids()


def test_continuation_flags(vocabulary):
  flags = vocabulary.continuation_flags()
  assert len(flags) == len(TOKENS)
  assert [i for i, f in enumerate(flags) if f] == [10, 11, 18, 20]


def test_real_vocabulary(vocab_file):
  vocabulary = Vocabulary(vocab_file)
  assert vocabulary.tokens[:5] == list(tokenization.REQUIRED_TOKENS)
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


# Parity with original BERT on all of Unicode. transformers' slow tokenizer
# (`BertTokenizerLegacy`) is original BERT's `FullTokenizer` with three departures, which the
# tests below state: it composes NFC first (visible cased only), deletes private-use characters
# (original BERT keeps them), and makes words over 100 characters [UNK] (original BERT: 200).

def _original_split_classes(characters) -> list[int]:
  """How original BERT's BasicTokenizer splits "a{ch}a": 2 words (whitespace), 3 (punctuation,
  CJK) or 1; `str.split()` also splits at the line and paragraph separators."""
  from transformers.models.bert.tokenization_bert_legacy import BasicTokenizer
  from transformers.tokenization_python import _is_punctuation, _is_whitespace
  is_chinese = BasicTokenizer()._is_chinese_char
  return [2 if _is_whitespace(ch) or ch.isspace() else
          3 if _is_punctuation(ch) or is_chinese(ord(ch)) else 1 for ch in characters]


def test_splitting_matches_original_on_every_code_point(tmp_path):
  # Cased, so that the normaliser only deletes: every code point it keeps between two letters.
  from bert_tf.data import normalization
  vocabulary = Vocabulary(_vocab_file(tmp_path, list(tokenization.REQUIRED_TOKENS) + ["a", "##a"]))
  characters = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF
                and not normalization.is_deleted(chr(c)) and chr(c) != "a"]
  words = vocabulary.tokenizer(lower_case=False).tokenize(
      tf.constant([f"a{ch}a" for ch in characters])).row_lengths().numpy()
  differences = [hex(ord(ch)) for ch, n, theirs in zip(
      characters, words, _original_split_classes(characters)) if n != theirs]
  assert differences == []


def _unicode_sample() -> list[str]:
  """Texts over a few assigned characters of every 128-code-point range of Unicode (every
  block: letters, marks, digits, punctuation, symbols, compatibility and full-width forms,
  ligatures, CJK, Hangul, Arabic, Indic, Thai, emoji, ...), alone, in words, upper-cased and
  around capital sigmas; private-use characters left out (see above)."""
  texts = ["ellipsis… Straße ΟΔΥΣΣΕΎΣ ﬁne ﬂow ＡＢＣ １２３ ½ ⅓ ² ① Ⅲ İstanbul",
           "zero\u200bwidth soft\u00adhyphen \ufeffbom e\u0301 Ⅻ ǅ ẞ Ω K Å",
           "中文字符和日本語のテキスト 한국어 텍스트 العربية हिन्दी ภาษาไทย 😀👍🏽 ❤️"]
  for start in range(0, 0x110000, 128):
    assigned = [chr(c) for c in range(start, start + 128) if not 0xD800 <= c <= 0xDFFF
                and unicodedata.category(chr(c)) not in ("Cn", "Co")]
    if not assigned:
      continue
    chars = assigned[::max(1, len(assigned) // 4)][:4]
    word = "".join(chars)
    texts += [" ".join(chars), f"x{word}y", word.upper(), f"A{chars[0]}Σ{chars[-1]}b {word}Σ."]
  return texts


@pytest.mark.parametrize("lower_case", [True, False])
def test_matches_transformers_slow_tokenizer_on_a_unicode_sample(lower_case, tmp_path):
  from transformers.models.bert.tokenization_bert_legacy import BasicTokenizer, BertTokenizerLegacy
  texts = _unicode_sample()
  if not lower_case:  # transformers composes NFC first; original BERT does not (tested below)
    texts = [unicodedata.normalize("NFC", t) for t in texts]
  # Every character the reference produces is a token, alone and as a ## piece, so that no
  # difference hides behind [UNK].
  basic = BasicTokenizer(do_lower_case=lower_case)
  characters = sorted({ch for text in texts for word in basic.tokenize(text) for ch in word})
  tokens = list(tokenization.REQUIRED_TOKENS) + characters + ["##" + ch for ch in characters]
  path = _vocab_file(tmp_path, tokens)
  theirs = BertTokenizerLegacy(path, do_lower_case=lower_case)
  ours = Vocabulary(path).tokenizer(lower_case).tokenize(tf.constant(texts)).to_list()
  differences = [(text, ids, theirs.encode(text, add_special_tokens=False))
                 for text, ids in zip(texts, ours)
                 if ids != theirs.encode(text, add_special_tokens=False)]
  assert len(texts) > 3000 and differences == []
  assert theirs.unk_token_id not in sum(ours, [])


def test_cased_keeps_decomposed_and_private_use_characters_as_original_bert(tmp_path):
  # Original BERT neither composes NFC nor deletes private use (Co) characters.
  tokens = list(tokenization.REQUIRED_TOKENS) + ["e", "##\u0301", "a", "##\ue000", "##b",
                                                 "\u2126", "\u03a9"]
  vocabulary = Vocabulary(_vocab_file(tmp_path, tokens))
  assert _tokenize(vocabulary, ["e\u0301 a\ue000b \u2126"], lower_case=False) == [
      [5, 6, 7, 8, 9, 10]]


def test_word_length_limit_counts_bytes_after_normalisation(tmp_path):
  # A word is [UNK] above 200 bytes of UTF-8 after normalisation; original BERT counts 200
  # characters, transformers 100.
  tokens = list(tokenization.REQUIRED_TOKENS) + ["e", "##e", "é", "##é"]  # ids 5-8
  vocabulary = Vocabulary(_vocab_file(tmp_path, tokens))
  limit = tokenization.MAX_BYTES_PER_WORD
  # Uncased, É (2 bytes) becomes e (1 byte): 200 of them are still a word, as in original BERT.
  assert _tokenize(vocabulary, ["É" * limit, "É" * (limit + 1)]) == [
      [5] + [6] * (limit - 1), [1]]
  # Cased, é stays 2 bytes: 101 of them are [UNK] here (and in transformers), not in original.
  assert _tokenize(vocabulary, ["é" * (limit // 2), "é" * (limit // 2 + 1)],
                   lower_case=False) == [[7] + [8] * (limit // 2 - 1), [1]]

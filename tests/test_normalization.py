"""Original BERT's normalisation in the graph, on every code point (docs/design.md#tokenization)."""

import functools
import sys
import unicodedata

import pytest
import tensorflow as tf

from bert_tf.data.normalization import BertNormalizer
from helpers import run

ALL_CHARACTERS = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]


def _deleted_by_original_bert(ch: str) -> bool:
  category = unicodedata.category(ch)
  return ch == "\ufffd" or category in ("Cf", "Cn") or (category == "Cc" and ch not in "\t\n\r")


@functools.cache
def _deletions() -> tuple[dict, dict]:
  """str.translate tables: what the clean-up deletes, and the non-spacing marks (Mn)."""
  return ({ord(ch): None for ch in ALL_CHARACTERS if _deleted_by_original_bert(ch)},
          {ord(ch): None for ch in ALL_CHARACTERS if unicodedata.category(ch) == "Mn"})


def original_bert(text: str, lower_case: bool) -> str:
  """google-research/bert's clean-up, lower-casing and accent stripping, with Python's own
  functions (plus the deletion of unassigned code points, which transformers also does)."""
  cleanup, marks = _deletions()
  text = text.translate(cleanup)
  if lower_case:
    text = unicodedata.normalize("NFD", text.lower()).translate(marks)
  return text


def _normalize(texts, lower_case):
  return [t.decode("utf-8") for t in
          BertNormalizer(lower_case).normalize(tf.constant(texts)).numpy().tolist()]


def _differences(template: str, lower_case: bool, characters=ALL_CHARACTERS) -> list:
  """Characters c for which template.format(c) normalises differently from original BERT; all
  of them in one string, one per line (newlines separate: not cased, not case-ignorable)."""
  characters = [ch for ch in characters if ch != "\n"]
  text = "\n".join(template.format(c=ch) for ch in characters)
  ours, theirs = _normalize([text], lower_case)[0], original_bert(text, lower_case)
  if ours == theirs:
    return []
  return [hex(ord(ch)) for ch, a, b in zip(characters, ours.split("\n"), theirs.split("\n"))
          if a != b][:20]


@pytest.mark.parametrize("lower_case", [True, False])
def test_every_code_point(lower_case):
  assert _differences("{c}", lower_case) == []


def test_final_sigma_context_on_every_code_point():
  # Python's Final_Sigma: Σ lowers to ς after a cased letter (through case-ignorable
  # characters) and not before one. Every assigned character (private use aside) in each
  # position of that context:
  assigned = [ch for ch in ALL_CHARACTERS if unicodedata.category(ch) not in ("Cn", "Co")]
  templates = ["{c}\u03a3", "\u0391{c}\u03a3", "\u0391\u03a3{c}", "\u0391\u03a3{c}\u0391",
               "{c}\u03a3{c}"]
  assert {t: _differences(t, True, assigned) for t in templates} == {t: [] for t in templates}


def test_examples_from_the_issue():
  texts = ["ellipsis…", "Straße", "ΟΔΥΣΣΕΎΣ", "ﬁne ﬂow", "ＡＢＣ １２３", "½ ⅓ ² ① Ⅲ", "İstanbul",
           "Ⱟ"]
  assert _normalize(texts, lower_case=True) == [
      "ellipsis…", "straße", "οδυσσευς", "ﬁne ﬂow", "ａｂｃ １２３", "½ ⅓ ² ① ⅲ", "istanbul",
      "\u2c5f"]
  assert _normalize(["ΣΑΣ Σ ΑΣ. ΑΣ\u0301 ʰΣ"], lower_case=True) == ["σας σ ας. ας ʰσ"]


@pytest.mark.parametrize("lower_case", [True, False])
def test_deleted_and_kept_characters(lower_case):
  deleted = "\x00\x07\x1f\x7f\x85\u00ad\u200b\u200d\u2060\ufeff\ufffd\u0378\U000e0001"
  kept = "\t\n\r \u00a0\u2028\ue000\U000f0000"  # whitespace, private use
  assert _normalize([f"zero{deleted}width{kept}"], lower_case) == [f"zerowidth{kept}"]


@pytest.mark.parametrize("lower_case", [True, False])
def test_every_ascii_string_of_two_characters(lower_case):
  # ASCII strings take a short way when lower-casing: each alone, every pair.
  texts = [chr(a) + chr(b) for a in range(128) for b in range(128)]
  assert _normalize(texts, lower_case) == [original_bert(t, lower_case) for t in texts]


@pytest.mark.parametrize("lower_case", [True, False])
def test_invalid_utf8_bytes_deleted(lower_case):
  texts = [b"caf\xc3 \xff\xfeAb \xed\xa0\x80X \xce\xa3\xff", b"\xf4\x90\x80\x80Z", b"\xc0\xafq"]
  assert _normalize(texts, lower_case) == [
      original_bert(t.decode("utf-8", errors="ignore"), lower_case) for t in texts]


def test_batch_shape_and_rows_without_fixes_kept():
  # One row needs a lower-casing TensorFlow lacks (Ⱟ, Unicode 14); the others must not move.
  texts = tf.constant([["Ⱟa", "Bb"], ["", "Éé Ⱟ"]])
  normalized = BertNormalizer(True).normalize(texts)
  assert normalized.shape == (2, 2)
  assert [[t.decode() for t in row] for row in normalized.numpy().tolist()] == [
      ["\u2c5fa", "bb"], ["", "ee \u2c5f"]]


def test_runs_in_a_tf_function():
  normalizer = BertNormalizer(True)
  normalize = tf.function(normalizer.normalize,
                          input_signature=[tf.TensorSpec([None], tf.string)])
  assert normalize(tf.constant(["Café Ⱟ"])).numpy().tolist() == ["cafe \u2c5f".encode()]


_LOCALE_CHECK = """
import unicodedata
from tests.test_normalization import ALL_CHARACTERS, _normalize, original_bert
texts = [ch + " I" + ch + "\u0307 " + ch + "\u0301" for ch in ALL_CHARACTERS if ch.lower() != ch]
texts += ["IJ I\u0307 J\u0301 \u012e\u0301 \u00cc\u00cd\u0128 \u0130 \u03a3\u0399\u03a3"]
print([t for t, n in zip(texts, _normalize(texts, True)) if n != original_bert(t, True)])
"""


@pytest.mark.e2e
def test_locale_does_not_change_lower_casing():
  # ICU's lower-casing follows the process's locale (Turkish: I -> ı; Lithuanian adds dots
  # above, which accent stripping removes); the output must not. Every character that has a
  # lower case, in a process under a Turkish locale.
  result = run(["-c", _LOCALE_CHECK], LC_ALL="tr_TR.UTF-8", LANG="tr_TR.UTF-8")
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.strip().splitlines()[-1] == "[]"

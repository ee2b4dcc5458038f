"""Original BERT's text normalisation, in the graph (docs/design.md#tokenization).

google-research/bert `tokenization.py` (`BasicTokenizer`) deletes NUL, U+FFFD, control (`Cc`
other than tab, newline, carriage return) and format (`Cf`) characters; when lower-casing, it
applies Python's `str.lower()` (with its final-sigma rule and `İ`), then NFD, then deletes
non-spacing marks (`Mn`). It does not fold compatibility forms: `…`, `ß`, `ﬁ`, `Ａ`, `½` stay.

Every table here is computed, once per process, from the running Python's `unicodedata` and
`str.lower()`, the very functions original BERT calls, so the graph follows them on every code
point. One departure: code points unassigned in that Unicode version (`Cn`) are deleted, as
transformers does; original BERT keeps them, with a result that depends on the Python it runs
on (TensorFlow's ICU knows newer characters: it would split or decompose some of them).
"""

import functools
import sys
import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text

_CAPITAL_SIGMA, _SMALL_SIGMA, _FINAL_SIGMA = "\u03a3", "\u03c3", "\u03c2"
_ASCII = "[\\x00-\\x7f]*"  # a full match: a string of ASCII characters only


def _character_class(code_points) -> str:
  """An RE2 character class matching exactly `code_points` (sorted ranges)."""
  ranges = []
  for code_point in sorted(code_points):
    if ranges and ranges[-1][1] == code_point - 1:
      ranges[-1][1] = code_point
    else:
      ranges.append([code_point, code_point])
  return "[" + "".join(f"\\x{{{a:x}}}" if a == b else f"\\x{{{a:x}}}-\\x{{{b:x}}}"
                       for a, b in ranges) + "]"


def is_deleted(character: str) -> bool:
  """Whether original BERT's clean-up deletes the character (or it is unassigned: `Cn`)."""
  category = unicodedata.category(character)
  return (character == "\ufffd" or category in ("Cf", "Cn") or
          (category == "Cc" and character not in "\t\n\r"))


@functools.cache
def code_point_classes() -> dict:
  """The character classes, and the letters whose lower case is checked against TensorFlow's,
  from this Python's Unicode database and `str.lower()` alone: no TensorFlow op runs, so that
  a process may compute them before it forks (a second of CPU)."""
  deleted, kept, marks = [], [], []
  for code_point in range(sys.maxunicode + 1):
    character = chr(code_point)
    if 0xD800 <= code_point <= 0xDFFF:
      continue
    if is_deleted(character):
      deleted.append(code_point)
      continue
    kept.append(character)
    if unicodedata.category(character) == "Mn":
      marks.append(code_point)
  # Python's Final_Sigma context: a capital sigma lowers to ς when preceded by a cased letter
  # (through case-ignorable characters) and not followed by one. The two classes it needs are
  # read off str.lower() itself: "cΣ" ends in ς iff c is cased and not case-ignorable;
  # "ΑcΣ" ends in ς iff c is cased or case-ignorable. Private-use characters are neither.
  letters = [ch for ch in kept if unicodedata.category(ch) != "Co"]
  cased = {ord(ch) for ch in letters if (ch + _CAPITAL_SIGMA).lower()[-1] == _FINAL_SIGMA}
  either = {ord(ch) for ch in letters
            if ("\u0391" + ch + _CAPITAL_SIGMA).lower()[-1] == _FINAL_SIGMA}
  ignorable = either - cased
  neither = {ord(ch) for ch in kept} - either
  return {
      "deleted": _character_class(deleted),
      # A sigma in Final_Sigma context, with the characters around it in groups (RE2 has no
      # look-around): rewritten as \1\2ς\3\4.
      "final_sigma": (f"({_character_class(cased)})({_character_class(ignorable)}*)"
                      f"{_CAPITAL_SIGMA}({_character_class(ignorable)}*)"
                      f"({_character_class(neither)}|$)"),
      "marks": _character_class(marks),
      "letters": letters,
  }


@functools.cache
def _tables() -> dict:
  """Regular expressions and the lower-casing table, from this Python's Unicode database."""
  classes = code_point_classes()
  return {**classes, "lower_fixes": _lower_fixes(classes["letters"])}


def _lower_fixes(characters) -> dict:
  """{code point: str.lower() of it} where TensorFlow's lower-casing differs from Python's.

  tf.strings.lower (ICU) may know an older Unicode than Python (Unicode 14's new capitals are
  left as they are by TensorFlow 2.21). Only single-character results are kept: the one
  multi-character lower case, `İ` -> `i̇`, ends as `i` either way once marks are removed.
  """
  characters = [ch for ch in characters if ch != "\n"]  # the separator
  with tf.init_scope():
    joined = "\n".join(characters)
    theirs = _lower(tf.constant(joined)).numpy().decode("utf-8").split("\n")
  ours = joined.lower().split("\n")
  assert len(theirs) == len(ours)
  return {ord(ch): ord(mine) for ch, mine, other in zip(characters, ours, theirs)
          if mine != other and len(mine) == 1}


def _lower(text: tf.Tensor) -> tf.Tensor:
  """ICU lower-casing after ASCII lower-casing: ICU follows the process's locale, and under a
  Turkish or Azeri one lowers `I` to `ı`; with the ASCII letters done first, what is left for
  the locale to change is a combining dot above, which accent stripping removes."""
  return tf.strings.lower(tf.strings.lower(text), encoding="utf-8")


def _valid_utf8(text: tf.Tensor) -> tf.Tensor:
  """Invalid UTF-8 bytes deleted, as original BERT's decoding (`errors="ignore"`) does. The
  corpus reader has replaced them already; a serving request may hold some."""
  return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="ignore")


class BertNormalizer(tf.Module):
  """Original BERT's clean-up and, with `lower_case`, its lower-casing and accent stripping:
  strings in, strings out, tf ops only (it runs in tf.data and in the serving SavedModel)."""

  def __init__(self, lower_case: bool):
    super().__init__(name="bert_normalizer")
    self.lower_case = lower_case
    tables = _tables()
    self._deleted, self._final_sigma, self._marks = (
        tables["deleted"], tables["final_sigma"], tables["marks"])
    if lower_case:
      # Capital sigmas, and the capitals TensorFlow's lower-casing does not know, are
      # lower-cased by a table, in the strings that have one.
      table = {**tables["lower_fixes"], ord(_CAPITAL_SIGMA): ord(_SMALL_SIGMA)}
      self._has_no_special_capital = f"[^{_character_class(table)[1:-1]}]*"
      self._special_capitals = tf.lookup.StaticHashTable(
          tf.lookup.KeyValueTensorInitializer(
              tf.constant(list(table), tf.int32), tf.constant(list(table.values()), tf.int32)),
          default_value=-1)

  def normalize(self, text: tf.Tensor) -> tf.Tensor:
    """string [...] -> string [...], the text original BERT splits into words."""
    if not self.lower_case:
      return tf.strings.regex_replace(_valid_utf8(text), self._deleted, "")
    # Most strings of most corpora are ASCII, for which all of it is: delete the control
    # characters, lower-case A-Z. The others take the whole way.
    flat = tf.reshape(text, [-1])
    is_ascii = tf.strings.regex_full_match(flat, _ASCII)
    ascii_rows = tf.cast(tf.where(is_ascii)[:, 0], tf.int32)
    other_rows = tf.cast(tf.where(~is_ascii)[:, 0], tf.int32)
    ascii_text = tf.strings.lower(
        tf.strings.regex_replace(tf.gather(flat, ascii_rows), self._deleted, ""))
    other_text = self._lower_case_unicode(tf.gather(flat, other_rows))
    flat = tf.dynamic_stitch([ascii_rows, other_rows], [ascii_text, other_text])
    return tf.reshape(flat, tf.shape(text))

  def _lower_case_unicode(self, text: tf.Tensor) -> tf.Tensor:
    """string [n] -> string [n]: clean-up, str.lower(), NFD, marks deleted."""
    text = tf.strings.regex_replace(_valid_utf8(text), self._deleted, "")
    text = _lower(self._lower_special_capitals(text))
    text = tf_text.normalize_utf8(text, "NFD")
    return tf.strings.regex_replace(text, self._marks, "")

  def _lower_special_capitals(self, text: tf.Tensor) -> tf.Tensor:
    """string [n] -> string [n]: final sigmas to ς, other capital sigmas to σ, and the capitals
    TensorFlow's lower-casing does not know to Python's lower case; only the (rare) strings
    that hold one are decoded. Python decides final sigmas, not ICU, whose tables are older."""
    rows = tf.where(~tf.strings.regex_full_match(text, self._has_no_special_capital))  # [k, 1]
    special = tf.strings.regex_replace(
        tf.gather_nd(text, rows), self._final_sigma, rf"\1\2{_FINAL_SIGMA}\3\4")
    characters = tf.strings.unicode_decode(special, "UTF-8", errors="ignore")  # [k, (chars)]
    lowered = tf.ragged.map_flat_values(
        lambda c: tf.where(self._special_capitals.lookup(c) >= 0,
                           self._special_capitals.lookup(c), c), characters)
    return tf.tensor_scatter_nd_update(text, rows, tf.strings.unicode_encode(lowered, "UTF-8"))

"""The WordPiece vocabulary file and the in-graph tokenizer built from it (SPEC §2)."""

import re

import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.errors import UserError

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)

# Original BERT turns words longer than 200 characters into [UNK].
MAX_BYTES_PER_WORD = 200

_RESERVED = re.compile(r"^\[[^\]]+\]$")  # [PAD], [unused7], [CLS], ...


class Vocabulary:
  """A vocabulary file read once: tokens by id and the ids of the special tokens."""

  def __init__(self, path: str):
    if not tf.io.gfile.exists(path):
      raise UserError(f"vocabulary file not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
      self.tokens = [line.decode("utf-8", errors="replace").rstrip("\r\n")
                     for line in f.read().splitlines()]
    self.path = path
    missing = [t for t in SPECIAL_TOKENS if t not in self.tokens]
    if missing:
      raise UserError(f"vocabulary {path} lacks the special tokens {' '.join(missing)}")
    if self.tokens.index(PAD) != 0:
      raise UserError(f"vocabulary {path} must have {PAD} as its first token (id 0)")
    self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
        self.tokens.index(t) for t in SPECIAL_TOKENS)

  def __len__(self) -> int:
    return len(self.tokens)

  def replacement_ids(self) -> list[int]:
    """Ids a masked position may be replaced with: no special or `[unusedN]` token."""
    ids = [i for i, t in enumerate(self.tokens) if not _RESERVED.match(t)]
    if not ids:
      raise UserError(f"vocabulary {self.path} has no ordinary tokens")
    return ids

  def continuation_flags(self) -> list[bool]:
    """Whether each id continues the previous word (a `##` piece): for whole-word masking."""
    return [t.startswith("##") for t in self.tokens]

  def tokenizer(self, lower_case: bool) -> "BertTokenizer":
    return BertTokenizer(self.tokens, lower_case)


# Characters original BERT deletes before splitting (`_clean_text`): NUL, U+FFFD and control
# characters other than tab, newline and carriage return. FastBertTokenizer splits words at
# them instead, so they are deleted first.
_DELETED = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\x{fffd}]"


class BertTokenizer(tf.Module):
  """The in-graph BERT tokenizer: original BERT's clean-up, optional lower-casing and accent
  stripping, punctuation and CJK splitting, WordPiece (tensorflow-text's FastBertTokenizer)."""

  def __init__(self, tokens: list[str], lower_case: bool):
    super().__init__(name="bert_tokenizer")
    self.fast_bert_tokenizer = tf_text.FastBertTokenizer(
        vocab=tokens,
        token_out_type=tf.int32,
        unknown_token=UNK,
        max_bytes_per_word=MAX_BYTES_PER_WORD,
        lower_case_nfd_strip_accents=lower_case)

  def tokenize(self, text: tf.Tensor) -> tf.RaggedTensor:
    """string [batch] -> int32 [batch, (tokens)]."""
    return self.fast_bert_tokenizer.tokenize(tf.strings.regex_replace(text, _DELETED, ""))

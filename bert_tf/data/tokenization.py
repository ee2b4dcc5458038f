"""The WordPiece vocabulary file and its in-graph tokenizer (docs/design.md#tokenization)."""

import collections
import re

import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.data.normalization import BertNormalizer
from bert_tf.errors import UserError

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
REQUIRED_TOKENS = (PAD, UNK, CLS, SEP, MASK)

# Original BERT turns words longer than 200 characters into [UNK]; tensorflow-text counts the
# limit in bytes of UTF-8 (after normalisation), so a word of non-ASCII letters reaches it sooner.
MAX_BYTES_PER_WORD = 200

_RESERVED = re.compile(r"^\[[^\]]+\]$")  # [PAD], [unused7], [CLS], ...


class Vocabulary:
  """A vocabulary file read once: tokens by id and the ids of the special tokens."""

  def __init__(self, path: str):
    if not tf.io.gfile.exists(path):
      raise UserError(f"vocabulary file not found: {path}")
    if tf.io.gfile.isdir(path):
      raise UserError(f"vocabulary {path} is a directory: name its vocab.txt")
    with tf.io.gfile.GFile(path, "rb") as f:
      self.tokens = [line.decode("utf-8", errors="replace").rstrip("\r\n")
                     for line in f.read().splitlines()]
    self.path = path
    missing = [t for t in REQUIRED_TOKENS if t not in self.tokens]
    if missing:
      raise UserError(f"vocabulary {path} lacks the special tokens {' '.join(missing)}")
    repeated = [token for token, count in collections.Counter(self.tokens).items() if count > 1]
    if repeated:
      raise UserError(f"vocabulary {path} lists tokens more than once (each needs one id): "
                      f"{' '.join(repr(t) for t in repeated[:5])}")
    if self.tokens.index(PAD) != 0:
      raise UserError(f"vocabulary {path} must have {PAD} as its first token (id 0)")
    self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (
        self.tokens.index(t) for t in REQUIRED_TOKENS)

  def __len__(self) -> int:
    return len(self.tokens)

  def __eq__(self, other) -> bool:  # the same tokens, wherever read from
    return isinstance(other, Vocabulary) and self.tokens == other.tokens

  def __hash__(self) -> int:
    return hash(tuple(self.tokens))

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


class BertTokenizer(tf.Module):
  """The in-graph BERT tokenizer: original BERT's normalisation (`normalization.py`), then
  whitespace, punctuation and CJK splitting and WordPiece (tensorflow-text's
  FastWordpieceTokenizer, which splits as original BERT does; tests/test_tokenization.py)."""

  def __init__(self, tokens: list[str], lower_case: bool):
    super().__init__(name="bert_tokenizer")
    self.normalizer = BertNormalizer(lower_case)
    self.wordpiece_tokenizer = tf_text.FastWordpieceTokenizer(
        vocab=tokens,
        token_out_type=tf.int32,
        unknown_token=UNK,
        max_bytes_per_word=MAX_BYTES_PER_WORD)

  def tokenize(self, text: tf.Tensor) -> tf.RaggedTensor:
    """string [batch] -> int32 [batch, (tokens)]."""
    return self.wordpiece_tokenizer.tokenize(self.normalizer.normalize(text))

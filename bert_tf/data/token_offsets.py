"""The pre-training tokenizer's tokens with where each came from in the ORIGINAL text, so that an
answer or a tagged word is cut from the text as written (its case, accents and spacing), never
rebuilt from WordPieces.

tensorflow-text's WordPiece gives byte offsets into the text it is given, which is the
normalised text (lower-cased, accents stripped, control characters deleted): different bytes.
Original BERT's normalisation maps each character on its own, except for the choice between
σ and ς, which has the same length, so the normalised text is the concatenation of each
character normalised alone: the bytes that character `i` becomes follow the bytes of the
characters before it. Normalising every distinct character by itself gives each one's
normalised length, hence the original character behind every normalised byte. The token ids
are those of tokenizing the whole text (`BertTokenizer.tokenize`), exactly.
"""

import tensorflow as tf

from bert_tf.data.tokenization import BertTokenizer


def _original_characters(tokenizer: BertTokenizer, characters: tf.RaggedTensor) -> tf.RaggedTensor:
  """characters: string [batch, (characters)] -> int64 [batch, (normalised bytes)], the index
  of the original character each byte of the normalised text comes from."""
  distinct, index = tf.unique(characters.flat_values)
  normalised_bytes = tf.gather(
      tf.strings.length(tokenizer.normalizer.normalize(distinct)), index)  # [characters]
  positions = tf.ragged.range(characters.row_lengths()).flat_values  # [characters]
  per_text = tf.reduce_sum(characters.with_flat_values(normalised_bytes), axis=1)  # [batch]
  return tf.RaggedTensor.from_row_lengths(
      tf.repeat(positions, normalised_bytes), tf.cast(per_text, tf.int64))


def tokenize_with_offsets(tokenizer: BertTokenizer, text: tf.Tensor) -> tuple:
  """string [batch] -> (token ids int32, starts int64, ends int64), each [batch, (tokens)]:
  token `j` of text `i` is `text[i][starts[i, j]:ends[i, j]]` in characters (Unicode code
  points, Python's string indices) of the text as given. A `##` piece starts where the piece
  before it ends; an `[UNK]` word spans the whole word."""
  characters = tf.strings.unicode_split(text, "UTF-8")  # [batch, (characters)]
  origin = _original_characters(tokenizer, characters)
  normalised = tokenizer.normalizer.normalize(text)
  tf.debugging.assert_equal(
      tf.strings.length(normalised), tf.cast(origin.row_lengths(), tf.int32),
      message="the text normalised whole and character by character differ in length")
  ids, byte_starts, byte_ends = tokenizer.wordpiece_tokenizer.tokenize_with_offsets(normalised)
  # In flat values: a ragged tensor plus a dense column broadcasts through dynamic ragged
  # shapes, whose checks are slow to trace.
  text_start = tf.repeat(origin.row_starts(), ids.row_lengths())  # [tokens]: in origin's bytes

  def character(byte_offsets: tf.Tensor) -> tf.Tensor:  # [tokens] -> the original characters
    return tf.gather(origin.flat_values, byte_offsets + text_start)

  return (ids, ids.with_flat_values(character(byte_starts.flat_values)),
          ids.with_flat_values(character(byte_ends.flat_values - 1) + 1))

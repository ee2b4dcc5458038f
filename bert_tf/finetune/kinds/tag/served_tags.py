"""The `tag` signature's graph: raw text -> every word with its tag and character offsets.

Words are the tokenizer's: the text split at whitespace, punctuation and around CJK
characters, as the pre-training tokenizer splits it, each word then WordPieces (tagging
training tokenizes each word alone, which gives the same pieces). A word is tagged on its
first piece, as in training; a word whose first piece is past the sequence is `O`. Each word
is cut from the text as written by the character offsets of its pieces, so it keeps its case
and accents.
"""

import keras
import tensorflow as tf

from bert_tf.data.text_pairs import combined_pair
from bert_tf.data.token_offsets import tokenize_with_offsets
from bert_tf.data.tokenization import Vocabulary
from bert_tf.finetune.kinds.tag.tagging import OUTSIDE
from bert_tf.finetune.task_record import TaskRecord


class WordTagger(tf.Module):
  """Tokenizer + tagging model + tag names, with the `tag` outputs."""

  def __init__(self, model: keras.Model, vocabulary: Vocabulary, task: TaskRecord):
    super().__init__(name="bert_tagger_serving")
    self.model = model
    self.tokenizer = vocabulary.tokenizer(task.lower_case)
    self.continues_word = tf.constant(vocabulary.continuation_flags())
    self.cls_id, self.sep_id = vocabulary.cls_id, vocabulary.sep_id
    self.seq_length = task.seq_length
    self.tags = tf.constant(task.labels)

  def _predicted(self, ids: tf.RaggedTensor) -> tf.Tensor:
    """ids: [batch, (pieces)] -> the predicted tag id of every position of
    `[CLS] pieces [SEP]`, int64 [batch, tokens]: padded to the batch's longest (at most
    `seq_length`; a word past it is in a row that long)."""
    token_ids, segment_ids = combined_pair(ids, seq_length=self.seq_length, cls_id=self.cls_id,
                                           sep_id=self.sep_id)
    token_ids, segment_ids, padding_mask = (
        token_ids.to_tensor(), segment_ids.to_tensor(), tf.ones_like(token_ids).to_tensor())
    logits = self.model({"token_ids": tf.cast(token_ids, tf.int32),
                         "segment_ids": tf.cast(segment_ids, tf.int32),
                         "padding_mask": tf.cast(padding_mask, tf.int32)}, training=False)
    return tf.argmax(logits, axis=-1)

  def outputs(self, text: tf.Tensor) -> dict:
    """text [batch] -> words, tags [batch, max_words] string; starts, ends [batch, max_words]
    int64 (characters, `[start, end)`); num_words [batch] int64. Padding: "" and 0."""
    ids, starts, ends = tokenize_with_offsets(self.tokenizer, text)  # [batch, (pieces)]
    predicted = self._predicted(ids)
    first_piece = ~tf.gather(self.continues_word, ids.flat_values)  # [pieces]
    last_piece = tf.concat([first_piece[1:], [True]], axis=0)  # the next one starts a word
    row = tf.repeat(tf.range(tf.size(text, out_type=tf.int64)), ids.row_lengths())
    position = tf.ragged.range(ids.row_lengths()).flat_values + 1  # after [CLS]
    word_row = tf.boolean_mask(row, first_piece)  # [words]
    word_position = tf.boolean_mask(position, first_piece)
    word_start = tf.boolean_mask(starts.flat_values, first_piece)
    word_end = tf.boolean_mask(ends.flat_values, last_piece)
    tagged = word_position < self.seq_length - 1
    tag_id = tf.gather_nd(predicted, tf.stack(
        [word_row, tf.minimum(word_position, self.seq_length - 1)], axis=1))
    tags = tf.where(tagged, tf.gather(self.tags, tag_id), OUTSIDE)
    words = tf.strings.substr(tf.gather(text, word_row), word_start, word_end - word_start,
                              unit="UTF8_CHAR")
    num_words = tf.math.bincount(tf.cast(word_row, tf.int32), minlength=tf.size(text),
                                 maxlength=tf.size(text), dtype=tf.int64)

    def dense(values, padding):
      return tf.RaggedTensor.from_row_lengths(values, num_words).to_tensor(padding)

    return {"words": dense(words, ""), "tags": dense(tags, ""), "starts": dense(word_start, 0),
            "ends": dense(word_end, 0), "num_words": num_words}

"""The `answer` signature's graph: a question and its context, of any length -> the answer.

The context is cut into windows as in training (`squad.squad_features`: `[CLS] question [SEP]
context piece [SEP]`, the question cut to `max_query_length` tokens, a window every
`doc_stride` tokens until one reaches the context's end), the span head reads every window,
and the answer is chosen as `squad_answers.question_answer` chooses it: in each window the
`n_best_size` best starts (among the tokens of which it is the window of most context) and
ends, paired with the end not before the start and at most `max_answer_length` tokens on; the
pair of the largest start + end logit over all windows wins. A model of v2.0
(`version_2_with_negative`) answers nothing when the null score (`[CLS]`'s start + end logit,
the least over the windows) exceeds the best span's by more than `null_score_diff_threshold`.
The answer is cut from the context by character offsets: its case, accents and spacing kept.
"""

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from bert_tf.data.text_pairs import combined_segments
from bert_tf.data.token_offsets import tokenize_with_offsets
from bert_tf.data.tokenization import Vocabulary
from bert_tf.finetune.task_record import TaskRecord

_NONE = float("-inf")
# The score of no span: the float32 that unsorted_segment_max starts from, so that a question
# without a span keeps it (-inf would become it).
_NO_SPAN = tf.float32.min


def _windows(query: tf.RaggedTensor, context: tf.RaggedTensor, *, seq_length: int,
             doc_stride: int) -> dict:
  """Where every window of every question is: `question` (its question's index), `index`
  (among its question's windows), `start` and `length` (its context tokens), `offset` (the
  position of its first context token), int64 [windows] each; and `count`, int64 [batch],
  the number of windows of each question."""
  room = seq_length - 3 - query.row_lengths()  # [batch]
  extra = tf.maximum(context.row_lengths() - room, 0)
  count = 1 + (extra + doc_stride - 1) // doc_stride  # [batch]
  question = tf.repeat(tf.range(tf.size(count, out_type=tf.int64)), count)
  index = tf.ragged.range(count).flat_values
  start = index * doc_stride
  length = tf.minimum(tf.gather(context.row_lengths(), question) - start,
                      tf.gather(room, question))
  return {"question": question, "index": index, "start": start, "length": length,
          "count": count, "offset": tf.gather(query.row_lengths(), question) + 2}


def _max_context(windows: dict, seq_length: int) -> tf.Tensor:
  """bool [windows, seq_length]: whether the window is the one of most context of the
  context token at each position (`squad_answers.max_context`: min(tokens left, tokens
  right) + 0.01 * window length, the first window on a tie)."""
  def dense(values):  # [windows] -> [windows, 1, most windows]: its question's windows' values
    per_question = tf.RaggedTensor.from_row_lengths(values, windows["count"]).to_tensor(0)
    return tf.gather(per_question, windows["question"])[:, None, :]

  starts, lengths = dense(windows["start"]), dense(windows["length"])
  token = (windows["start"][:, None] + tf.range(seq_length, dtype=tf.int64)[None, :]
           - windows["offset"][:, None])[:, :, None]  # [windows, seq, 1]
  held = (token >= starts) & (token < starts + lengths)
  score = tf.where(held, tf.cast(tf.minimum(token - starts, starts + lengths - 1 - token),
                                 tf.float64) + 0.01 * tf.cast(lengths, tf.float64), _NONE)
  other = tf.range(tf.shape(score, out_type=tf.int64)[2])[None, None, :]
  own = windows["index"][:, None, None]
  own_score = tf.reduce_max(tf.where(other == own, score, _NONE), axis=-1)
  before = tf.reduce_max(tf.where(other < own, score, _NONE), axis=-1)
  after = tf.reduce_max(tf.where(other > own, score, _NONE), axis=-1)
  return (own_score > before) & (own_score >= after)


def _top(logits: tf.Tensor, allowed: tf.Tensor, n: int) -> tf.Tensor:
  """bool [windows, seq]: the `n` largest `logits` of each window where `allowed`."""
  _, indices = tf.math.top_k(tf.where(allowed, logits, _NONE), k=n)
  return allowed & tf.reduce_any(
      tf.one_hot(indices, tf.shape(logits)[1], on_value=True, off_value=False), axis=1)


class AnswerFinder(tf.Module):
  """Tokenizer + span model + the answer settings of task.json, with the `answer` outputs."""

  def __init__(self, model: keras.Model, vocabulary: Vocabulary, task: TaskRecord):
    super().__init__(name="bert_answer_serving")
    self.model = model
    self.tokenizer = vocabulary.tokenizer(task.lower_case)
    self.cls_id, self.sep_id = vocabulary.cls_id, vocabulary.sep_id
    self.seq_length = task.seq_length
    self.max_query_length, self.doc_stride = task.max_query_length, task.doc_stride
    self.max_answer_length, self.n_best = task.max_answer_length, task.n_best_size
    self.allow_no_answer = task.version_2_with_negative
    self.threshold = task.null_score_diff_threshold

  def _logits(self, query: tf.RaggedTensor, context: tf.RaggedTensor, windows: dict):
    """Span logits [windows, 2, seq_length] of every window."""
    first = tf.gather(context.row_starts(), windows["question"]) + windows["start"]
    pieces = tf.gather(context.flat_values,
                       tf.ragged.range(first, first + windows["length"]))  # [windows, (len)]
    token_ids, segment_ids = combined_segments(
        tf.gather(query, windows["question"]), pieces, cls_id=self.cls_id, sep_id=self.sep_id)
    token_ids, padding_mask = tf_text.pad_model_inputs(token_ids, self.seq_length)
    segment_ids, _ = tf_text.pad_model_inputs(segment_ids, self.seq_length)
    return tf.cast(self.model({"token_ids": tf.cast(token_ids, tf.int32),
                               "segment_ids": tf.cast(segment_ids, tf.int32),
                               "padding_mask": tf.cast(padding_mask, tf.int32)},
                              training=False), tf.float32)

  def _best_spans(self, logits: tf.Tensor, windows: dict) -> tuple:
    """Each window's best (score, start position, end position); score `_NO_SPAN` without
    one."""
    positions = tf.range(self.seq_length, dtype=tf.int64)
    inside = positions[None, :] - windows["offset"][:, None]  # context token in the window
    in_context = (inside >= 0) & (inside < windows["length"][:, None])
    n = min(self.n_best, self.seq_length)
    starts = _top(logits[:, 0], in_context & _max_context(windows, self.seq_length), n)
    ends = _top(logits[:, 1], in_context, n)
    valid = (starts[:, :, None] & ends[:, None, :]
             & (positions[None, :] >= positions[:, None])
             & (positions[None, :] < positions[:, None] + self.max_answer_length))
    scores = tf.where(valid, logits[:, 0, :, None] + logits[:, 1, None, :], _NO_SPAN)
    scores = tf.reshape(scores, [tf.shape(scores)[0], -1])
    best = tf.argmax(scores, axis=-1)
    return tf.reduce_max(scores, axis=-1), best // self.seq_length, best % self.seq_length

  def outputs(self, question: tf.Tensor, context: tf.Tensor) -> dict:
    """question, context [batch] -> answer [batch] string ("" for none), start, end [batch]
    int64 (its characters in the context, `[start, end)`; 0 0 for none), score [batch]
    float32 (the answer's start + end logit, or the null score for none), has_answer [batch]
    bool."""
    batch = tf.size(question, out_type=tf.int64)
    query = self.tokenizer.tokenize(question)[:, :self.max_query_length]
    ids, char_starts, char_ends = tokenize_with_offsets(self.tokenizer, context)
    windows = _windows(query, ids, seq_length=self.seq_length, doc_stride=self.doc_stride)
    logits = self._logits(query, ids, windows)
    window_best, start_position, end_position = self._best_spans(logits, windows)
    best = tf.math.unsorted_segment_max(window_best, windows["question"], batch)  # [batch]
    is_best = window_best == tf.gather(best, windows["question"])
    window = tf.math.unsorted_segment_min(
        tf.where(is_best, tf.range(tf.size(window_best, out_type=tf.int64)),
                 tf.size(window_best, out_type=tf.int64)), windows["question"], batch)
    null = tf.math.unsorted_segment_min(logits[:, 0, 0] + logits[:, 1, 0],
                                        windows["question"], batch)
    has_answer = best > _NO_SPAN
    if self.allow_no_answer:
      has_answer &= null - best <= self.threshold

    def character(offsets: tf.RaggedTensor, position: tf.Tensor) -> tf.Tensor:
      token = (tf.gather(windows["start"], window) + tf.gather(position, window)
               - tf.gather(windows["offset"], window))
      index = tf.where(has_answer, ids.row_starts() + token, tf.size(offsets.flat_values,
                                                                     out_type=tf.int64))
      return tf.gather(tf.concat([offsets.flat_values, [0]], axis=0), index)

    start, end = character(char_starts, start_position), character(char_ends, end_position)
    return {"answer": tf.where(has_answer, tf.strings.substr(context, start, end - start,
                                                             unit="UTF8_CHAR"), ""),
            "start": start, "end": end, "score": tf.where(has_answer, best, null),
            "has_answer": has_answer}

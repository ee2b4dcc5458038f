"""A fine-tuned model's SavedModel checks itself as the pre-training model's does
(`export/verification.py`, docs/serving.md#verified-exports): loaded in a fresh process with
tensorflow and tensorflow-text only, its task's signature is run on texts with accents, CJK,
numbers and a text longer than the sequence, and its outputs are compared with the Keras task
model's on the pre-training tokenizer's ids of the same texts.

Floats (probabilities, scores) are compared within the SavedModel's tolerance. A choice (a
class, a tag, an answer's span) is compared by what the Keras model thinks of it: the score it
gives the export's choice against the score of its own best choice (a class's probability, a
tag's logit, a span's start + end logit), so that two choices the Keras model scores alike
within the tolerance both pass, and a wrong one fails by how much worse it is. The tagger's
words and their character offsets are the tokenizer's, compared exactly.
"""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.data.token_offsets import tokenize_with_offsets
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.export.numpy_bert import softmax
from bert_tf.export.verification import (
  EXAMPLES,
  TOLERANCES,
  Results,
  model_inputs,
  pair_ids,
  saved_model_outputs,
  text_ids,
  verify,
)
from bert_tf.finetune import squad, squad_answers, tagging
from bert_tf.finetune.export import SIGNATURES

# Every non-empty text of EXAMPLES, for a signature that takes one text.
TEXTS = [text for pair in EXAMPLES for text in pair if text]
# A question to each example's two texts as one context (the long one needs several windows).
QUESTIONS = ("Where is Dvořák from?", "Which city is 서울?", "How much did the items cost?",
             "What does the Python Language Reference describe?")


def verify_task_export(directory: str, model: keras.Model, task: dict,
                       vocabulary: Vocabulary) -> str:
  """Checks the SavedModel that `export.export_task` wrote to `directory` from `model`, of
  `task` (task.json); returns the line saying so, or raises a one-line UserError."""
  reference = REFERENCES[task["task"]](model, task, vocabulary)
  name = f"{task['task']} savedmodel"
  (outputs,) = saved_model_outputs(directory, [(SIGNATURES[task["task"]], reference.inputs)],
                                   name)
  expected, got = reference.compared(outputs, name)
  return verify(name, lambda: expected, lambda: got, TOLERANCES["savedmodel"])


def _chosen(scores: np.ndarray, names: list[str], chosen: str) -> float:
  """The score the reference gives the export's choice `chosen` of `names` (-inf for none of
  them)."""
  return float(scores[names.index(chosen)]) if chosen in names else -np.inf


class _TextReference:
  """classify and regress: the texts (pairs when the task has pairs) and the Keras model's
  outputs on each, a batch of one of the pre-training tokenizer's ids."""

  def __init__(self, model: keras.Model, task: dict, vocabulary: Vocabulary):
    self.labels = task["labels"]
    tokenizer = vocabulary.tokenizer(task["lower_case"])
    examples = list(EXAMPLES) if task["pair"] else [(text, "") for text in TEXTS]
    self.inputs = ({"text_a": [a for a, _ in examples], "text_b": [b for _, b in examples]}
                   if task["pair"] else {"text": [a for a, _ in examples]})
    self.outputs = np.concatenate([
        keras.ops.convert_to_numpy(model(model_inputs(*pair_ids(
            vocabulary, text_ids(tokenizer, a), text_ids(tokenizer, b), task["seq_length"])),
            training=False)) for a, b in examples]).astype(np.float64)


class ClassifyReference(_TextReference):
  """The classes' probabilities; the label by the probability of the export's."""

  def compared(self, outputs: dict, name: str) -> tuple[Results, Results]:
    probabilities = softmax(self.outputs)
    return ({"probabilities": probabilities, "label": probabilities.max(axis=-1)},
            {"probabilities": np.array(outputs["probabilities"]),
             "label": np.array([_chosen(row, self.labels, label)
                                for row, label in zip(probabilities, outputs["label"])])})


class RegressReference(_TextReference):
  """The score."""

  def compared(self, outputs: dict, name: str) -> tuple[Results, Results]:
    return {"score": self.outputs[:, 0]}, {"score": np.array(outputs["score"])}


class TagReference:
  """Each text's words and their offsets as the pre-training tokenizer splits it, and the
  Keras model's logits at each word's first piece, the words fed as tagging training feeds
  them (`tagging.tagging_features`)."""

  def __init__(self, model: keras.Model, task: dict, vocabulary: Vocabulary):
    self.tags = task["labels"]
    self.inputs = {"text": TEXTS}
    continues = vocabulary.continuation_flags()
    ids, starts, ends = (ragged.to_list() for ragged in tokenize_with_offsets(
        vocabulary.tokenizer(task["lower_case"]), tf.constant(TEXTS)))
    self.words, self.offsets = [], []
    for text, row_ids, row_starts, row_ends in zip(TEXTS, ids, starts, ends):
      first = [i for i, piece in enumerate(row_ids) if not continues[piece]]
      self.offsets.append([[row_starts[a], row_ends[b - 1]]
                           for a, b in zip(first, first[1:] + [len(row_ids)])])
      self.words.append([text[start:end] for start, end in self.offsets[-1]])
    features = tagging.tagging_features(
        tagging.Sentences("verification", self.words,
                          [[self.tags[0]] * len(words) for words in self.words]),
        self.tags, vocabulary, lower_case=task["lower_case"], seq_length=task["seq_length"])
    logits = keras.ops.convert_to_numpy(model(features.features, training=False))
    # Each word's logits, or None for a word past the sequence (tagged O).
    self.word_logits = [[logits[row, position] if position >= 0 else None
                         for position in positions]
                        for row, positions in enumerate(features.first_pieces)]

  def compared(self, outputs: dict, name: str) -> tuple[Results, Results]:
    counts = outputs["num_words"]
    tags = [row[:count] for row, count in zip(outputs["tags"], counts)]

    def score(scores, tag):  # a word past the sequence is O
      if scores is None:
        return 0.0 if tag == tagging.OUTSIDE else np.inf
      return _chosen(scores, self.tags, tag)

    expected = {"words": self.words, "word_offsets": self.offsets,
                "tags": np.array([0.0 if scores is None else scores.max()
                                  for row in self.word_logits for scores in row])}
    return expected, {
        "words": [row[:count] for row, count in zip(outputs["words"], counts)],
        "word_offsets": [[list(pair) for pair in zip(starts[:count], ends[:count])]
                         for starts, ends, count in zip(outputs["starts"], outputs["ends"],
                                                        counts)],
        "tags": np.array([score(scores, tag)
                          for row_scores, row_tags in zip(self.word_logits, tags)
                          for scores, tag in zip(row_scores, row_tags)])}


class AnswerReference:
  """Each of QUESTIONS on its example's context, cut into windows as answering training cuts
  them (`squad.squad_features`); the Keras model's span logits on every window, and the answer
  `squad_answers` chooses from them."""

  def __init__(self, model: keras.Model, task: dict, vocabulary: Vocabulary):
    self.task = task
    contexts = [f"{a} {b}".strip() for a, b in EXAMPLES]
    self.inputs = {"question": list(QUESTIONS), "context": contexts}
    questions = [squad.Question(str(i), text, i, ()) for i, text in enumerate(QUESTIONS)]
    squad_file = squad.SquadFile("verification", contexts, questions)
    self.features = squad.squad_features(
        squad_file, vocabulary, lower_case=task["lower_case"], seq_length=task["seq_length"],
        doc_stride=task["doc_stride"], max_query_length=task["max_query_length"])
    self.logits = keras.ops.convert_to_numpy(
        model(self.features.features, training=False)).astype(np.float64)
    answers = squad_answers.best_answers(
        squad_file, self.features, self.logits,
        allow_no_answer=task["version_2_with_negative"], n_best=task["n_best_size"],
        max_answer_length=task["max_answer_length"],
        null_score_diff_threshold=task["null_score_diff_threshold"])
    self.best_span = [next((c["start_logit"] + c["end_logit"] for c in answers.nbest[str(i)]
                            if c["text"]), -np.inf) for i in range(len(QUESTIONS))]
    self.null = [min(logits[0, 0] + logits[1, 0] for _, logits in self._windows(i))
                 for i in range(len(QUESTIONS))]

  def _windows(self, question: int) -> list:
    return [(window, logits) for window, logits in zip(self.features.windows, self.logits)
            if window.question == question]

  def _no_answer(self, question: int) -> float:
    """No answer's score against a span's: v2.0 answers when the best span's score is at
    least the null score less the threshold; v1.1 answers whenever it has a span."""
    if not self.task["version_2_with_negative"]:
      return -np.inf
    return self.null[question] - self.task["null_score_diff_threshold"]

  def _span_score(self, question: int, start: int, end: int) -> float | None:
    """The start + end logit of the span of characters [start, end) of the question's
    context, in the window where its first token has the most context; None when it is not a
    span of the context's tokens within one window."""
    span = self.features.contexts[question].span(start, end)
    if span is None:
      return None
    first, last = span
    windows = self._windows(question)
    for (window, logits), is_max in zip(windows, squad_answers.max_context(
        [window for window, _ in windows])):
      inside = first - window.start
      if 0 <= inside < window.length and is_max[inside]:
        if last >= window.start + window.length:
          return None
        return logits[0, window.offset + inside] + logits[1, window.offset + last - window.start]
    return None

  def compared(self, outputs: dict, name: str) -> tuple[Results, Results]:
    best, chosen, expected_scores = [], [], []
    for i, has_answer in enumerate(outputs["has_answer"]):
      span, no_answer = self.best_span[i], self._no_answer(i)
      # None for no answer: the null score, whatever the reference's choice.
      score = (self._span_score(i, outputs["start"][i], outputs["end"][i]) if has_answer
               else None)
      if has_answer and score is None:
        raise UserError(f"{name} export failed verification: its answer to question {i} "
                        f"({outputs['answer'][i]!r}, characters {outputs['start'][i]} to "
                        f"{outputs['end'][i]}) is no span of the pre-training tokenizer's "
                        "tokens in one window")
      ours, theirs = max(span, no_answer), no_answer if score is None else score
      # Neither the reference nor the export has anything to choose: the same choice.
      best.append(0.0 if ours == theirs == -np.inf else ours)
      chosen.append(0.0 if ours == theirs == -np.inf else theirs)
      expected_scores.append(self.null[i] if score is None else score)
    return ({"answer": np.array(best), "score": np.array(expected_scores)},
            {"answer": np.array(chosen), "score": np.array(outputs["score"])})


REFERENCES = {"classify": ClassifyReference, "regress": RegressReference, "tag": TagReference,
              "answer": AnswerReference}

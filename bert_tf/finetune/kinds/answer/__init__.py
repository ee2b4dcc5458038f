"""answer: an answer's span in a context, or none (SQuAD v1.1/v2.0 JSON), start and end logits
on every token of a question and a window of its context, cross-entropy of both; ranked by dev
F1, then exact match; the best epoch's dev answers written as predictions.json. Served as
`answer(question, context)` -> the answer cut from the context, any context length
(`served_answers`); exported as `BertForQuestionAnswering`."""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.finetune import batches
from bert_tf.finetune.kinds.answer import squad, squad_answers
from bert_tf.finetune.kinds.answer.head import span_loss, span_model
from bert_tf.finetune.kinds.answer.metrics import squad_scores
from bert_tf.finetune.kinds.answer.served_answers import AnswerFinder
from bert_tf.finetune.kinds.base import DEV_BATCH, Serving, TaskKind, without_pooler_training
from bert_tf.finetune.kinds.signatures import checked_batch, signature
from bert_tf.interop.huggingface import TaskHead
from bert_tf.serving.verification import EXAMPLES, Results

# The export check's question to each example's two texts as one context (the long one needs
# several windows).
QUESTIONS = ("Where is Dvořák from?", "Which city is 서울?", "How much did the items cost?",
             "What does the Python Language Reference describe?")
SPAN_LOGITS = "start_end"  # the span model's layer of raw [batch, 2, seq] logits


class AnswerReference:
  """Each of QUESTIONS on its example's context, cut into windows as answering training cuts
  them (`squad.squad_features`); the Keras model's span logits on every window, and the answer
  `squad_answers` chooses from them."""

  def __init__(self, model: keras.Model, task, vocabulary: Vocabulary):
    self.task = task
    contexts = [f"{a} {b}".strip() for a, b in EXAMPLES]
    self.inputs = {"question": list(QUESTIONS), "context": contexts}
    questions = [squad.Question(str(i), text, i, ()) for i, text in enumerate(QUESTIONS)]
    squad_file = squad.SquadFile("verification", contexts, questions)
    self.features = squad.squad_features(
        squad_file, vocabulary, lower_case=task.lower_case, seq_length=task.seq_length,
        doc_stride=task.doc_stride, max_query_length=task.max_query_length)
    self.logits = keras.ops.convert_to_numpy(
        model(self.features.features, training=False)).astype(np.float64)
    answers = squad_answers.best_answers(
        squad_file, self.features, self.logits,
        allow_no_answer=task.version_2_with_negative, n_best=task.n_best_size,
        max_answer_length=task.max_answer_length,
        null_score_diff_threshold=task.null_score_diff_threshold)
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
    if not self.task.version_2_with_negative:
      return -np.inf
    return self.null[question] - self.task.null_score_diff_threshold

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


class Answer(TaskKind):
  """An answer's span or none (see the module's docstring)."""

  name = "answer"
  pair = True  # a question and its context
  ranking = ("dev_f1", "dev_exact_match")
  probe_figure = "f1"
  signature = "answer"
  reference = AnswerReference
  labelled = False
  probe_seq_length = 128  # a question and its context's window, together
  # The span head's logits, -10000 where an answer can neither start nor end.
  portable_shapes = {"start_logits": ["batch", "seq_length"],
                     "end_logits": ["batch", "seq_length"]}

  def read(self) -> None:
    config = self.config
    squad.check_windows(seq_length=config.seq_length, doc_stride=config.doc_stride,
                        max_query_length=config.max_query_length)
    self.train = squad.read_squad(self.train_file, "--train_file")
    self.dev = squad.read_squad(self.dev_file, "--dev_file")
    self.version_2_with_negative = (config.version_2_with_negative or
                                    self.train.has_unanswerable or self.dev.has_unanswerable)

  @property
  def train_rows(self) -> int:
    return len(self.train_features.positions)

  def encode(self, pretrained) -> None:
    self.train_features, self.dev_features = (
        squad.squad_features(questions, pretrained.vocabulary, lower_case=pretrained.lower_case,
                             seq_length=self.config.seq_length,
                             doc_stride=self.config.doc_stride,
                             max_query_length=self.config.max_query_length)
        for questions in (self.train, self.dev))

  def train_batches(self, batch_size: int, order: np.ndarray) -> tf.data.Dataset:
    return batches.batches(self.train_features.features, self.train_features.positions,
                           batch_size=batch_size, order=order)

  @staticmethod
  def head(encoder: keras.Model, num_labels: int, initializer_range: float) -> keras.Model:
    return span_model(without_pooler_training(encoder),
                      initializer_range=initializer_range)

  @staticmethod
  def loss() -> keras.losses.Loss:
    return span_loss()

  def evaluate(self, model: keras.Model) -> tuple[dict, squad_answers.Answers]:
    logits = model.predict(self.dev_features.features, batch_size=DEV_BATCH, verbose=0)
    answers = squad_answers.best_answers(
        self.dev, self.dev_features, logits, allow_no_answer=self.version_2_with_negative,
        n_best=self.config.n_best_size, max_answer_length=self.config.max_answer_length,
        null_score_diff_threshold=self.config.null_score_diff_threshold)
    scores = squad_scores(self.dev.gold_answers(), answers.predictions)
    return {"dev_" + name: value for name, value in scores.items()
            if not name.endswith("total")}, answers

  @staticmethod
  def summary(figures: dict) -> str:
    return (f"dev exact match {figures['dev_exact_match']:.4f}, F1 {figures['dev_f1']:.4f}" +
            "".join(f", {part.replace('_', ' ')}F1 {figures[f'dev_{part}f1']:.4f}"
                    for part in ("has_answer_", "no_answer_") if f"dev_{part}f1" in figures))

  def task_settings(self) -> dict:
    return {"max_query_length": self.config.max_query_length,
            "doc_stride": self.config.doc_stride,
            "max_answer_length": self.config.max_answer_length,
            "n_best_size": self.config.n_best_size,
            "null_score_diff_threshold": self.config.null_score_diff_threshold,
            "version_2_with_negative": self.version_2_with_negative}

  def write_outputs(self, model: keras.Model, directory: str,
                    outputs: squad_answers.Answers) -> None:
    squad_answers.write_predictions(directory, outputs)

  @classmethod
  def serving(cls, model: keras.Model, task, vocabulary) -> Serving:
    module = AnswerFinder(model, vocabulary, task)
    function = signature(lambda **texts: module.outputs(*checked_batch(**texts)), "question",
                         "context")
    return Serving(module, function, {})

  @classmethod
  def huggingface_head(cls, task) -> TaskHead:
    return TaskHead("BertForQuestionAnswering", "qa_outputs", pooler=False, config={})

  @staticmethod
  def head_logits(model: keras.Model, inputs: dict) -> np.ndarray:
    """The start and end logits [tokens, 2] before the mask of what cannot be an answer,
    which transformers does not apply."""
    raw = keras.Model(model.inputs, model.get_layer(SPAN_LOGITS).output)
    return keras.ops.convert_to_numpy(raw(inputs, training=False))[0].T

  @staticmethod
  def transformers_logits(outputs) -> np.ndarray:
    return np.stack([outputs.start_logits[0].numpy(), outputs.end_logits[0].numpy()], axis=-1)

  @staticmethod
  def portable_outputs(logits: tf.Tensor) -> dict:
    return {"start_logits": logits[:, 0], "end_logits": logits[:, 1]}

  @staticmethod
  def portable_logits(outputs: dict) -> np.ndarray:
    return np.stack([outputs["start_logits"], outputs["end_logits"]], axis=1)

  @staticmethod
  def portable_task(task) -> dict:
    """How the context is cut into windows and an answer chosen from their logits (the
    flags of the same names), for the post-processing a user writes."""
    return {"labels": task.labels, "pair": task.pair,
            **{name: getattr(task, name) for name in (
                "max_query_length", "doc_stride", "max_answer_length", "n_best_size",
                "null_score_diff_threshold", "version_2_with_negative")}}


KIND = Answer

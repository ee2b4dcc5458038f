"""answer's dev figures: exact match and F1 as SQuAD's official evaluation scripts (v1.1 and
v2.0) compute them, over all questions and, for v2.0, the answerable (HasAns) and unanswerable
(NoAns) apart. Each a fraction in [0, 1] (the scripts print 100 times it)."""

import collections
import re
import string

import numpy as np

from bert_tf.finetune.metrics import f1

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
  """SQuAD's normalisation: lower case, ASCII punctuation removed, the articles a, an and the
  removed, white space collapsed to single spaces."""
  return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def exact_match(gold: str, prediction: str) -> float:
  return float(normalize_answer(gold) == normalize_answer(prediction))


def token_f1(gold: str, prediction: str) -> float:
  """F1 over the normalised words the two share (as bags); when either has no word, 1 if both
  have none, else 0."""
  gold_words, predicted_words = normalize_answer(gold).split(), normalize_answer(prediction).split()
  if not gold_words or not predicted_words:
    return float(gold_words == predicted_words)
  shared = sum((collections.Counter(gold_words) & collections.Counter(predicted_words)).values())
  return f1(shared, len(predicted_words), len(gold_words))


def squad_scores(gold_answers: dict[str, list[str]], predictions: dict[str, str]) -> dict:
  """SQuAD v1.1 / v2.0 scores: `gold_answers` maps each question id to its answer texts, an
  empty list for an unanswerable question; `predictions` maps ids to a text, "" for "no
  answer". As the v2.0 script: a question's score is the best over its gold answers (those
  that normalise to nothing are dropped), an unanswerable question's gold is "" and scores 1
  only for a prediction that normalises to nothing; a question without a prediction scores 0.

  {"exact_match", "f1", "total"}, and with unanswerable questions among the gold also
  "has_answer_exact_match", "has_answer_f1", "has_answer_total" and the `no_answer_` three.
  """
  exact, f1 = {}, {}
  for question_id, answers in gold_answers.items():
    golds = [text for text in answers if normalize_answer(text)] or [""]
    prediction = predictions.get(question_id)
    exact[question_id] = 0.0 if prediction is None else max(
        exact_match(text, prediction) for text in golds)
    f1[question_id] = 0.0 if prediction is None else max(
        token_f1(text, prediction) for text in golds)

  def averages(ids, prefix=""):
    return {f"{prefix}exact_match": float(np.mean([exact[i] for i in ids])) if ids else 0.0,
            f"{prefix}f1": float(np.mean([f1[i] for i in ids])) if ids else 0.0,
            f"{prefix}total": len(ids)}

  scores = averages(list(gold_answers))
  no_answer = [i for i, answers in gold_answers.items() if not answers]
  if no_answer:
    scores.update(averages([i for i, answers in gold_answers.items() if answers], "has_answer_"))
    scores.update(averages(no_answer, "no_answer_"))
  return scores

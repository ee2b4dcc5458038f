"""Dev-set figures of every task kind, each written once (numpy and Python; no TensorFlow).

- Classification: accuracy, macro F1, the F1 of the positive class (MRPC, QQP), Matthews
  correlation (CoLA).
- Regression: Pearson and Spearman correlation (STS-B).
- Token tagging: entity-level precision, recall and F1 as conlleval counts them, overall and
  per type, and token accuracy (CoNLL-2003).
- Extractive question answering: exact match and F1 as SQuAD's official evaluation scripts
  (v1.1 and v2.0) compute them, over all questions and, for v2.0, the answerable (HasAns) and
  unanswerable (NoAns) apart.

Every figure is a fraction in [0, 1] (the SQuAD scripts print 100 times it). A figure that is
undefined on the data (a correlation with a constant list, a precision with no prediction) is
0, so that epochs still compare.
"""

import collections
import re
import string

import numpy as np

# === Classification ===


def accuracy(labels: np.ndarray, predictions: np.ndarray) -> float:
  return float(np.mean(labels == predictions)) if len(labels) else 0.0


def _f1(true_positives, predicted, actual) -> float:
  """2TP / (2TP + FP + FN); 0 when nothing is predicted or expected."""
  return 2 * true_positives / (predicted + actual) if predicted + actual else 0.0


def macro_f1(labels: np.ndarray, predictions: np.ndarray) -> float:
  """The unweighted mean of the per-class F1 over the classes that occur among the labels or
  the predictions (a class that is neither has no F1 to count); 0 for a class with no true
  positive."""
  scores = [positive_f1(labels, predictions, label)
            for label in np.union1d(labels, predictions)]
  return float(np.mean(scores)) if scores else 0.0


def positive_f1(labels: np.ndarray, predictions: np.ndarray, positive=1) -> float:
  """The F1 of one class, `positive` (GLUE's for MRPC and QQP: the paraphrase class, 1)."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  true_positives = np.sum((predictions == positive) & (labels == positive))
  return float(_f1(true_positives, np.sum(predictions == positive), np.sum(labels == positive)))


def matthews_correlation(labels: np.ndarray, predictions: np.ndarray) -> float:
  """Matthews correlation coefficient (GLUE's for CoLA), in its multi-class form (Gorodkin's
  R_K, which is the phi coefficient for two classes); 0 when labels or predictions are all
  one class."""
  labels, predictions = np.asarray(labels), np.asarray(predictions)
  classes = np.union1d(labels, predictions)
  # confusion[i, j]: examples of class i predicted as class j.
  confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
  np.add.at(confusion, (np.searchsorted(classes, labels),
                        np.searchsorted(classes, predictions)), 1)
  total, correct = confusion.sum(), np.trace(confusion)
  actual, predicted = confusion.sum(axis=1), confusion.sum(axis=0)
  denominator = np.sqrt((total**2 - predicted @ predicted) * (total**2 - actual @ actual))
  return float((correct * total - actual @ predicted) / denominator) if denominator else 0.0


# === Regression ===


def pearson(labels, predictions) -> float:
  """Pearson's correlation coefficient; 0 when either list is constant (it is undefined)."""
  x = np.asarray(labels, np.float64) - np.mean(labels)
  y = np.asarray(predictions, np.float64) - np.mean(predictions)
  denominator = np.sqrt((x @ x) * (y @ y))
  return float(x @ y / denominator) if denominator else 0.0


def average_ranks(values) -> np.ndarray:
  """Ranks from 1, tied values sharing the mean of the ranks they span: [10, 20, 20, 30] ->
  [1, 2.5, 2.5, 4]."""
  _, inverse, counts = np.unique(np.asarray(values), return_inverse=True, return_counts=True)
  first_rank = np.cumsum(counts) - counts + 1  # of each distinct value, in sorted order
  return (first_rank + (counts - 1) / 2)[inverse]


def spearman(labels, predictions) -> float:
  """Spearman's rank correlation: Pearson's on the average ranks (ties as in scipy)."""
  return pearson(average_ranks(labels), average_ranks(predictions))


# === Token tagging ===


def _split_tag(tag: str) -> tuple[str, str]:
  """"B-PER" -> ("B", "PER"); "O" -> ("O", "")."""
  return (tag, "") if tag == "O" else (tag[0], tag[2:])


def entities(tags: list[str]) -> set[tuple[str, int, int]]:
  """The entities of one sentence's BIO/IOB tags, as (type, first word, last word), cut as
  conlleval cuts them: an entity starts at a B-, or at an I- after an O or after a tag of
  another type (so a sentence's leading I-PER starts one, and IOB1's I-only tagging reads as
  it is meant); it ends before an O, a B- or another type."""
  found, start, kind = set(), None, ""
  for position, tag in enumerate([*tags, "O"]):
    prefix, tag_kind = _split_tag(tag)
    if start is not None and (prefix in ("O", "B") or tag_kind != kind):
      found.add((kind, start, position - 1))
      start = None
    if start is None and prefix != "O":
      start, kind = position, tag_kind
  return found


def _precision_recall_f1(correct: int, predicted: int, gold: int) -> dict:
  precision = correct / predicted if predicted else 0.0
  recall = correct / gold if gold else 0.0
  f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
  return {"precision": precision, "recall": recall, "f1": f1}


def entity_scores(gold: list[list[str]], predicted: list[list[str]]) -> dict:
  """Entity-level scores of tagged sentences (a list of tag lists each, the same lengths), as
  conlleval and seqeval's default mode count them: an entity is right only when its type and
  both of its ends are. {"precision", "recall", "f1", "token_accuracy", "per_type": {type:
  {"precision", "recall", "f1", "support"}}}; support is the number of gold entities."""
  counts = collections.defaultdict(lambda: [0, 0, 0])  # type -> [correct, predicted, gold]
  right_tags = total_tags = 0
  for sentence, (gold_tags, predicted_tags) in enumerate(zip(gold, predicted, strict=True)):
    if len(gold_tags) != len(predicted_tags):
      raise ValueError(f"sentence {sentence}: {len(gold_tags)} gold tags, "
                       f"{len(predicted_tags)} predicted")
    right_tags += sum(g == p for g, p in zip(gold_tags, predicted_tags))
    total_tags += len(gold_tags)
    gold_entities, predicted_entities = entities(gold_tags), entities(predicted_tags)
    for kind, *_ in gold_entities:
      counts[kind][2] += 1
    for entity in predicted_entities:
      counts[entity[0]][1] += 1
      counts[entity[0]][0] += entity in gold_entities
  overall = _precision_recall_f1(*np.sum(list(counts.values()) or [[0, 0, 0]], axis=0))
  return {**{name: float(value) for name, value in overall.items()},
          "token_accuracy": right_tags / total_tags if total_tags else 0.0,
          "per_type": {kind: {**_precision_recall_f1(*counts[kind]), "support": counts[kind][2]}
                       for kind in sorted(counts)}}


# === Extractive question answering ===

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
  return _f1(shared, len(predicted_words), len(gold_words))


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

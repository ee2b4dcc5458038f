"""Every task kind's dev figures, against values worked out by hand."""

import numpy as np
import pytest

from bert_tf.finetune import metrics
from bert_tf.finetune.kinds.answer import metrics as answer_metrics
from bert_tf.finetune.kinds.classify.metrics import macro_f1
from bert_tf.finetune.kinds.tag import metrics as tag_metrics


def test_accuracy():
  assert metrics.accuracy(np.array([0, 1, 2, 2]), np.array([0, 1, 1, 2])) == 0.75
  assert metrics.accuracy(np.array([], int), np.array([], int)) == 0.0


def test_macro_f1_by_hand():
  labels, predictions = np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])
  # class 0: TP 1, FP 0, FN 1 -> 2/3; class 1: TP 2, FP 1, FN 0 -> 4/5.
  assert macro_f1(labels, predictions) == pytest.approx((2 / 3 + 4 / 5) / 2)


def test_macro_f1_counts_a_class_only_predicted_and_is_one_when_perfect():
  assert macro_f1(np.array([0, 0]), np.array([0, 2])) == pytest.approx((2 / 3 + 0) / 2)
  assert macro_f1(np.array([3, 1, 3]), np.array([3, 1, 3])) == 1.0


# === Classification: GLUE's other figures ===


def test_matthews_correlation_of_a_known_confusion_matrix():
  # TP 6, FN 2, FP 1, TN 3: (6*3 - 1*2) / sqrt(7 * 8 * 4 * 5) = 16 / sqrt(1120).
  labels = np.array([1] * 8 + [0] * 4)
  predictions = np.array([1] * 6 + [0] * 2 + [1] * 1 + [0] * 3)
  assert metrics.matthews_correlation(labels, predictions) == pytest.approx(16 / 1120**0.5)
  assert metrics.matthews_correlation(labels, labels) == pytest.approx(1.0)
  assert metrics.matthews_correlation(labels, 1 - labels) == pytest.approx(-1.0)
  assert metrics.matthews_correlation(labels, np.ones_like(labels)) == 0.0  # undefined


def test_matthews_correlation_of_three_classes():
  # Gorodkin's R_K: c = 5 right of s = 6; t = (2, 2, 2), p = (3, 1, 2):
  # (5 * 6 - (6 + 2 + 4)) / sqrt((36 - 14) * (36 - 12)) = 18 / sqrt(528).
  labels, predictions = np.array([0, 0, 1, 1, 2, 2]), np.array([0, 0, 0, 1, 2, 2])
  assert metrics.matthews_correlation(labels, predictions) == pytest.approx(18 / 528**0.5)


def test_f1_of_the_positive_class():
  labels, predictions = np.array([1, 1, 1, 0, 0]), np.array([1, 0, 1, 1, 0])
  assert metrics.positive_f1(labels, predictions) == pytest.approx(2 / 3)  # TP 2, FP 1, FN 1
  assert metrics.positive_f1(labels, predictions, positive=0) == pytest.approx(1 / 2)
  assert metrics.positive_f1(np.array([0, 0]), np.array([0, 0])) == 0.0  # no positive at all


# === Regression ===


def test_pearson_of_a_known_pair_of_lists():
  # deviations (-2, -1, 0, 1, 2) and (-2, 0, 1, 0, 1): 6 / sqrt(10 * 6).
  assert metrics.pearson([1, 2, 3, 4, 5], [2, 4, 5, 4, 5]) == pytest.approx(6 / 60**0.5)
  assert metrics.pearson([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
  assert metrics.pearson([1, 2, 3], [7, 7, 7]) == 0.0  # undefined


def test_spearman_gives_ties_their_average_rank():
  assert metrics.average_ranks([10, 20, 20, 30]).tolist() == [1, 2.5, 2.5, 4]
  assert metrics.average_ranks([5, 1, 5, 5]).tolist() == [3, 1, 3, 3]
  # ranks (1, 2.5, 2.5, 4) and (1, 3, 2, 4): 4.5 / sqrt(4.5 * 5).
  assert metrics.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / 22.5**0.5)
  assert metrics.spearman([1, 2, 3, 4], [1, 8, 27, 64]) == pytest.approx(1.0)


# === Token tagging ===


def test_entities_are_cut_as_conlleval_cuts_them():
  assert tag_metrics.entities(["B-PER", "I-PER", "O", "B-LOC"]) == {("PER", 0, 1), ("LOC", 3, 3)}
  # An I- after an O, or at a sentence's start, starts an entity (IOB1 as CoNLL-2003 ships).
  assert tag_metrics.entities(["I-PER", "I-PER", "O", "I-LOC"]) == {("PER", 0, 1), ("LOC", 3, 3)}
  # A B- ends the entity before it; a change of type ends it too.
  assert tag_metrics.entities(["B-PER", "B-PER", "I-PER", "I-LOC"]) == {
      ("PER", 0, 0), ("PER", 1, 2), ("LOC", 3, 3)}
  assert tag_metrics.entities(["O", "O"]) == set()


def test_an_entity_starting_with_i_counts_as_right():
  gold = [["B-PER", "I-PER", "O", "B-LOC"]]
  predicted = [["I-PER", "I-PER", "O", "I-LOC"]]
  scores = tag_metrics.entity_scores(gold, predicted)
  assert (scores["precision"], scores["recall"], scores["f1"]) == (1.0, 1.0, 1.0)
  assert scores["token_accuracy"] == 0.5


def test_entity_scores_overall_and_per_type_by_hand():
  gold = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "I-ORG", "I-ORG"]]
  predicted = [["B-PER", "I-PER", "O", "B-PER"],  # the ORG tagged as a PER: wrong type
               ["B-ORG", "I-ORG", "O"]]  # the ORG cut one word short: wrong end
  scores = tag_metrics.entity_scores(gold, predicted)
  # 3 gold entities, 3 predicted, 1 right.
  assert scores["precision"] == pytest.approx(1 / 3)
  assert scores["recall"] == pytest.approx(1 / 3)
  assert scores["f1"] == pytest.approx(1 / 3)
  assert scores["token_accuracy"] == pytest.approx(5 / 7)
  assert scores["per_type"]["PER"] == pytest.approx(
      {"precision": 1 / 2, "recall": 1.0, "f1": 2 / 3, "support": 1})
  assert scores["per_type"]["ORG"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                                       "support": 2}


def test_entity_scores_without_entities_are_zero():
  scores = tag_metrics.entity_scores([["O", "O"]], [["O", "O"]])
  assert (scores["precision"], scores["recall"], scores["f1"]) == (0.0, 0.0, 0.0)
  assert scores["token_accuracy"] == 1.0 and scores["per_type"] == {}
  with pytest.raises(ValueError, match="sentence 0: 2 gold tags, 1 predicted"):
    tag_metrics.entity_scores([["O", "O"]], [["O"]])


# === Extractive question answering ===


def test_squad_normalisation_of_punctuation_articles_and_spaces():
  assert answer_metrics.normalize_answer("The  Quick, brown fox!") == "quick brown fox"
  assert answer_metrics.normalize_answer("An apple a day") == "apple day"
  assert answer_metrics.normalize_answer("U.S.A.") == "usa"
  assert answer_metrics.normalize_answer("theater then\tanother") == "theater then another"
  assert answer_metrics.normalize_answer("  the  ") == ""


def test_exact_match_and_f1_of_one_answer():
  assert answer_metrics.exact_match("the Broncos", "Broncos.") == 1.0
  assert answer_metrics.exact_match("Denver Broncos", "Broncos") == 0.0
  # "denver broncos" against "broncos": precision 1, recall 1/2.
  assert answer_metrics.token_f1("Denver Broncos", "Broncos") == pytest.approx(2 / 3)
  # Words counted as bags: the gold has two x's, the prediction one (precision 1/2, recall 1/3).
  assert answer_metrics.token_f1("x x y", "x z") == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
  assert answer_metrics.token_f1("Denver", "Seattle") == 0.0
  assert answer_metrics.token_f1("", "") == 1.0 and answer_metrics.token_f1("", "the") == 1.0
  assert answer_metrics.token_f1("", "Denver") == 0.0


def test_several_gold_answers_take_the_best():
  gold = {"q": ["Denver Broncos", "Broncos of Denver"]}
  scores = answer_metrics.squad_scores(gold, {"q": "Broncos"})
  # against the first: 2/3; against the second ("broncos of denver"): 1/2.
  assert scores == {"exact_match": 0.0, "f1": pytest.approx(2 / 3), "total": 1}
  assert answer_metrics.squad_scores(gold, {"q": "the broncos of Denver"})["exact_match"] == 1.0


def test_squad_v2_scores_unanswerable_questions_apart():
  gold = {"a": ["Paris"], "b": ["Rome", "the city of Rome"], "c": [], "d": [], "e": ["Oslo"]}
  predictions = {"a": "Paris", "b": "city of Rome, Italy", "c": "", "d": "London"}
  scores = answer_metrics.squad_scores(gold, predictions)
  # b: "city of rome italy" against "city of rome": precision 3/4, recall 1 -> 6/7;
  # e has no prediction: 0.
  assert scores == pytest.approx({
      "exact_match": 2 / 5, "f1": (1 + 6 / 7 + 1) / 5, "total": 5,
      "has_answer_exact_match": 1 / 3, "has_answer_f1": (1 + 6 / 7) / 3, "has_answer_total": 3,
      "no_answer_exact_match": 1 / 2, "no_answer_f1": 1 / 2, "no_answer_total": 2})


def test_a_gold_answer_of_only_an_article_counts_as_no_answer():
  scores = answer_metrics.squad_scores({"q": ["The"]}, {"q": ""})
  assert scores["exact_match"] == 1.0 and "no_answer_total" not in scores

"""SQuAD data and answers: v1.1 and v2.0 files read as published, every mistake one
`UserError` naming the file and the place or the question; a long context cut into
run_squad's windows with each answer's positions; the answers chosen from the logits of all
windows, cut from the original context (case, accents, spacing kept), and predictions.json as
the official evaluation script reads it."""

import json
import logging

import numpy as np
import pytest

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.finetune.kinds.answer import metrics, squad, squad_answers
from bert_tf.finetune.kinds.answer.squad import Window

FILLER = ("The interpreter reads the source file and compiles it to byte code before it runs "
          "the program. ")
CONTEXT = ("The Café  Müller opened in Zürich in 1921. " + FILLER * 6 +
           "Its founder, Émile Durand, was born in Lyon.")
SHORT_CONTEXT = "A debugger sets a breakpoint on a line of the program."
# Windows of 32 tokens with questions of at most 12: 17 context tokens or more, stride 8.
SETTINGS = {"seq_length": 32, "doc_stride": 8, "max_query_length": 12}


def answer(text, context=CONTEXT, occurrence=0):
  start = -1
  for _ in range(occurrence + 1):
    start = context.index(text, start + 1)
  return {"text": text, "answer_start": start}


def squad_v2():
  return {"version": "v2.0", "data": [{"title": "Cafés", "paragraphs": [
      {"context": CONTEXT, "qas": [
          {"id": "where", "question": "Where did the Café Müller open?",
           "answers": [answer("Zürich")], "is_impossible": False},
          {"id": "what", "question": "What opened in Zürich?",
           "answers": [answer("Café  Müller")], "is_impossible": False},
          {"id": "who", "question": "Who founded it?",
           "answers": [answer("Émile Durand")], "is_impossible": False},
          {"id": "mars", "question": "What is the capital of Mars?", "answers": [],
           "plausible_answers": [answer("Lyon")], "is_impossible": True},
          {"id": "long", "question": "What does the interpreter do?",
           "answers": [answer((FILLER * 2).strip())], "is_impossible": False},
      ]},
      {"context": SHORT_CONTEXT, "qas": [
          {"id": "sets", "question": "What does a debugger set?", "answers": [
              answer("a breakpoint", SHORT_CONTEXT), answer("breakpoint", SHORT_CONTEXT)]},
      ]}]}]}


def write(path, value):
  path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
  return str(path)


@pytest.fixture(scope="module")
def squad_file(tmp_path_factory):
  return write(tmp_path_factory.mktemp("squad") / "dev-v2.0.json", squad_v2())


@pytest.fixture(scope="module")
def vocabulary(vocab_file):
  return Vocabulary(vocab_file)


@pytest.fixture(scope="module")
def featured(squad_file, vocabulary):
  data = squad.read_squad(squad_file)
  return data, squad.squad_features(data, vocabulary, lower_case=True, **SETTINGS)


def test_reads_a_v2_file_as_published(squad_file):
  data = squad.read_squad(squad_file)
  assert data.contexts == [CONTEXT, SHORT_CONTEXT]
  assert [q.id for q in data.questions] == ["where", "what", "who", "mars", "long", "sets"]
  assert data.questions[1].answers == (("Café  Müller", 4),)
  assert data.questions[3].answers == ()  # unanswerable: its plausible answer is not gold
  assert data.questions[5].context == 1
  assert data.has_unanswerable
  assert data.gold_answers()["sets"] == ["a breakpoint", "breakpoint"]
  assert data.gold_answers()["mars"] == []


def broken(change):
  value = squad_v2()
  change(value)
  return value


def set_answer_start(value):
  value["data"][0]["paragraphs"][0]["qas"][2]["answers"][0]["answer_start"] += 1


@pytest.mark.parametrize("content, message", [
    ('{"data": [', "is not JSON: Expecting value: line 1 column 11"),
    ("[]", "has no 'data' \\(list\\)"),
    ({"version": "v1.1"}, "has no 'data' \\(list\\)"),
    ({"data": [{"title": "x"}]}, ": data\\[0\\] has no 'paragraphs' \\(list\\)"),
    ({"data": [{"paragraphs": [{"qas": []}]}]},
     ": data\\[0\\].paragraphs\\[0\\] has no 'context' \\(str\\)"),
    ({"data": [{"paragraphs": [{"context": "x"}]}]},
     ": data\\[0\\].paragraphs\\[0\\] has no 'qas' \\(list\\)"),
    ({"data": [{"paragraphs": [{"context": "x", "qas": [{"question": "y", "answers": []}]}]}]},
     ": data\\[0\\].paragraphs\\[0\\].qas\\[0\\] has no 'id' \\(str\\)"),
    ({"data": [{"paragraphs": [{"context": "x", "qas": [{"id": "a", "question": "y"}]}]}]},
     ": data\\[0\\].paragraphs\\[0\\].qas\\[0\\] has no 'answers' \\(list\\)"),
    ({"data": [{"paragraphs": [{"context": "x y", "qas": [{"id": "a", "question": "y",
                                                             "answers": [{"text": "y"}]}]}]}]},
     ": data\\[0\\].paragraphs\\[0\\].qas\\[0\\].answers\\[0\\] has no 'answer_start' \\(int\\)"),
    (broken(set_answer_start), ": question 'who': answer 'Émile Durand' is not at its "
     "answer_start 627 in the context \\('mile Durand,' is\\)"),
    (broken(lambda v: v["data"][0]["paragraphs"][1]["qas"][0].update(id="where")),
     ": question id 'where' is used twice"),
    ({"data": [{"paragraphs": [{"context": "x", "qas": []}]}]}, " has no questions"),
])
def test_a_bad_file_is_one_user_error_naming_the_place(tmp_path, content, message):
  path = write(tmp_path / "bad.json", content)
  with pytest.raises(UserError, match=message) as error:
    squad.read_squad(path)
  assert str(error.value).startswith(path) and "\n" not in str(error.value)


def test_a_missing_file_and_a_stride_without_overlap_are_user_errors(tmp_path):
  with pytest.raises(UserError, match="file not found: .*none.json"):
    squad.read_squad(str(tmp_path / "none.json"))
  with pytest.raises(UserError, match="--doc_stride 17 must be smaller than the room left for "
                     "the context \\(17 tokens: --seq_length 32 - --max_query_length 12 - 3\\)"):
    squad.check_windows(seq_length=32, doc_stride=17, max_query_length=12)
  with pytest.raises(UserError, match="--seq_length 16 leaves no room for the context"):
    squad.check_windows(seq_length=16, doc_stride=4, max_query_length=13)
  squad.check_windows(seq_length=384, doc_stride=128, max_query_length=64)


def test_window_starts_as_run_squad():
  assert squad.window_starts(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
  assert squad.window_starts(10, 4, 6) == [(0, 4), (4, 4), (8, 2)]  # never past the room
  assert squad.window_starts(3, 4, 2) == [(0, 3)]
  assert squad.window_starts(0, 4, 2) == [(0, 0)]


def test_windows_hold_the_question_and_a_piece_of_the_context(featured, vocabulary):
  data, featured = featured
  tokenizer = vocabulary.tokenizer(True)
  context = featured.contexts[0]
  assert context.ids.tolist() == tokenizer.tokenize([CONTEXT])[0].numpy().tolist()
  first = [i for i, w in enumerate(featured.windows) if w.question == 0]
  assert len(first) > 5  # a long context: many windows
  query = tokenizer.tokenize([data.questions[0].text])[0].numpy().tolist()
  assert len(query) == 13
  query = query[:12]  # --max_query_length
  for number, row in enumerate(first):
    window = featured.windows[row]
    assert window.offset == len(query) + 2
    assert window.start == 8 * number  # the stride
    length = len(query) + 3 + window.length
    assert featured.features["token_ids"][row, :length].tolist() == [
        vocabulary.cls_id, *query, vocabulary.sep_id,
        *context.ids[window.start:window.start + window.length], vocabulary.sep_id]
    assert featured.features["padding_mask"][row].tolist() == [1] * length + [0] * (32 - length)
    assert featured.features["segment_ids"][row].tolist() == (
        [0] * window.offset + [1] * (window.length + 1) + [0] * (32 - length))
  last = featured.windows[first[-1]]
  assert last.start + last.length == len(context.ids)  # the windows reach the end


def test_labels_point_at_the_answer_where_a_window_holds_it(featured):
  data, featured = featured
  for index, question in enumerate(data.questions):
    rows = [i for i, w in enumerate(featured.windows) if w.question == index]
    holding = [i for i in rows if featured.positions[i].tolist() != [0, 0]]
    if question.id in ("mars", "long"):  # unanswerable; longer than a window
      assert not holding
      continue
    assert holding, question.id
    tokens = featured.contexts[question.context]
    for row in holding:
      window, (first, last) = featured.windows[row], featured.positions[row]
      assert window.offset <= first <= last < window.offset + window.length
      text = data.contexts[question.context][
          tokens.starts[first - window.offset + window.start]:
          tokens.ends[last - window.offset + window.start]]
      assert text == question.answers[0][0]  # "Café  Müller": case, accents, two spaces


def test_an_answer_no_window_holds_is_counted_and_said_once(squad_file, vocabulary, caplog):
  data = squad.read_squad(squad_file)
  with caplog.at_level(logging.WARNING, logger="bert_tf"):
    featured = squad.squad_features(data, vocabulary, lower_case=True, **SETTINGS)
  assert featured.unreachable == 1
  assert [r.getMessage() for r in caplog.records] == [
      f"{squad_file}: 1 of 6 answers are in no window whole (longer than a window, or of white "
      "space only): trained as no answer"]


def perfect_logits(featured, width=32):
  """Logits that put each window's start and end at its label (10 there, 0 elsewhere)."""
  logits = np.zeros((len(featured.windows), 2, width), np.float32)
  for row, (first, last) in enumerate(featured.positions):
    logits[row, 0, first] = logits[row, 1, last] = 10.0
  return logits


def test_right_logits_give_the_answers_as_written(featured):
  data, featured = featured
  answers = squad_answers.best_answers(data, featured, perfect_logits(featured),
                                       allow_no_answer=True)
  assert answers.predictions["what"] == "Café  Müller"
  assert answers.predictions["where"] == "Zürich"
  assert answers.predictions["who"] == "Émile Durand"
  assert answers.predictions["mars"] == "" and answers.predictions["long"] == ""
  assert answers.predictions["sets"] == "a breakpoint"
  assert answers.null_score_diff["what"] == -20.0
  assert answers.null_score_diff["mars"] == 20.0
  best = answers.nbest["what"][0]
  assert (best["text"], best["start"], best["end"]) == ("Café  Müller", 4, 16)
  assert sum(c["probability"] for c in answers.nbest["what"]) == pytest.approx(1.0)
  assert "" in [c["text"] for c in answers.nbest["what"]]  # v2.0: no answer is a candidate
  scores = metrics.squad_scores(data.gold_answers(), answers.predictions)
  assert scores["exact_match"] == pytest.approx(5 / 6)  # all but the answer longer than a window
  assert scores["no_answer_exact_match"] == 1.0


def test_without_no_answer_the_best_span_is_taken(featured):
  data, featured = featured
  answers = squad_answers.best_answers(data, featured, perfect_logits(featured),
                                       allow_no_answer=False)
  assert answers.predictions["what"] == "Café  Müller"
  assert answers.predictions["mars"] != ""  # v1.1: every question has an answer
  assert answers.null_score_diff == {}
  assert "" not in [c["text"] for c in answers.nbest["what"]]


def test_the_null_score_threshold(featured):
  data, featured = featured
  logits = perfect_logits(featured)
  answers = squad_answers.best_answers(data, featured, logits, allow_no_answer=True,
                                       null_score_diff_threshold=-25.0)
  assert set(answers.predictions.values()) == {""}  # every null beats its span by over -25
  answers = squad_answers.best_answers(data, featured, logits, allow_no_answer=True,
                                       null_score_diff_threshold=25.0)
  assert answers.predictions["mars"] != ""


def one_window(context, start_logits, end_logits):
  """A question over one window of `context`'s characters as tokens, at offset 1."""
  length = len(start_logits)
  logits = np.zeros((2, length + 2), np.float32)
  logits[0, 1:-1], logits[1, 1:-1] = start_logits, end_logits
  positions = np.arange(length)
  return [(Window(0, 0, length, 1), logits)], context, positions, positions + 1


def test_spans_too_long_or_backwards_are_not_candidates():
  windows, context, starts, ends = one_window("abcdef", [0, 9, 0, 0, 5, 0], [0, 0, 0, 8, 9, 0])
  answer, nbest, _ = squad_answers.question_answer(
      windows, context, starts, ends, allow_no_answer=False, n_best=20, max_answer_length=3,
      null_score_diff_threshold=0.0)
  # b..e (9 + 9) is 4 long; b..d (9 + 8) is the best of at most 3.
  assert answer == "bcd"
  assert all(len(c["text"]) <= 3 for c in nbest)
  # The likeliest start after the likeliest end: f..a is no span.
  answer, nbest, _ = squad_answers.question_answer(
      *one_window("abcdef", [0, 0, 0, 0, 0, 9], [9, 0, 0, 0, 0, 0]), allow_no_answer=False,
      n_best=20, max_answer_length=30, null_score_diff_threshold=0.0)
  assert answer in ("a", "f")  # 0 + 9 or 9 + 0
  assert all(c["start"] < c["end"] for c in nbest)


def test_a_token_counts_in_its_window_of_most_context():
  windows = [Window(0, 0, 10, 3), Window(0, 4, 10, 3)]
  first, second = squad_answers.max_context(windows)
  # token 6: min(6, 3) in the first window against min(2, 7) in the second (each + 0.1);
  # token 7: min(7, 2) against min(3, 6).
  assert first.tolist() == [True] * 7 + [False] * 3  # tokens 0-9
  assert second.tolist() == [False] * 3 + [True] * 7  # tokens 4-13
  # Token 2: min(2, 1) in both windows, the first takes it.
  tied = squad_answers.max_context([Window(0, 0, 4, 3), Window(0, 1, 4, 3)])
  assert tied[0].tolist() == [True, True, True, False]  # tokens 0-3
  assert tied[1].tolist() == [False, False, True, True]  # tokens 1-4


def test_predictions_json_is_what_the_evaluation_script_reads(featured, tmp_path):
  data, featured = featured
  answers = squad_answers.best_answers(data, featured, perfect_logits(featured),
                                       allow_no_answer=True)
  squad_answers.write_predictions(str(tmp_path), answers)
  predictions = json.loads((tmp_path / "predictions.json").read_text(encoding="utf-8"))
  assert predictions == answers.predictions
  assert all(isinstance(k, str) and isinstance(v, str) for k, v in predictions.items())
  assert json.loads((tmp_path / "null_odds.json").read_text())["mars"] == 20.0
  nbest = json.loads((tmp_path / "nbest_predictions.json").read_text(encoding="utf-8"))
  assert nbest["what"][0]["text"] == "Café  Müller"

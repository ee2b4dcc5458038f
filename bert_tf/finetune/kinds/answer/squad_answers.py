"""A question's answer from the span head's logits over all its windows, chosen as
google-research/bert's run_squad.py (`write_predictions`) chooses it, and the prediction files
SQuAD's official evaluation scripts read.

In each window, the `n_best` most likely starts and ends among its context tokens are paired:
the end at or after the start, at most `max_answer_length` tokens apart, and the start in the
window that gives it the most context (run_squad's "max context": of the windows holding a
token, the one where min(tokens left of it, tokens right of it) + 0.01 * window length is
largest), so each span is scored once. A pair's score is its start logit plus its end logit;
the candidates of all windows are ranked by it and the first `n_best` distinct texts kept. The
text is cut from the original context by the tokens' character offsets.

With `allow_no_answer` (v2.0), "no answer" is a candidate too, scored by the start and end
logits of `[CLS]`, the least over the windows; the answer is "" when that null score exceeds
the best span's score by more than `null_score_diff_threshold`.
"""

import dataclasses
import math
import os

import numpy as np

from bert_tf import files
from bert_tf.finetune.kinds.answer.squad import SquadFeatures, SquadFile, Window
from bert_tf.finetune.output_dir import NBEST_FILE, NULL_ODDS_FILE, PREDICTIONS_FILE

N_BEST, MAX_ANSWER_LENGTH = 20, 30  # run_squad.py's defaults


@dataclasses.dataclass(frozen=True)
class Candidate:
  """A possible answer: its text, its character span [start, end) in the context, its logits;
  "no answer" is the empty text at (0, 0)."""

  text: str
  start: int
  end: int
  start_logit: float
  end_logit: float

  @property
  def score(self) -> float:
    return self.start_logit + self.end_logit


@dataclasses.dataclass(frozen=True)
class Answers:
  """Every question's answer ("" for no answer), its n-best candidates with their
  probabilities, and (v2.0) its null score minus its best span's score."""

  predictions: dict[str, str]
  nbest: dict[str, list[dict]]
  null_score_diff: dict[str, float]


def max_context(windows: list[Window]) -> list[np.ndarray]:
  """For each of one question's windows, whether it is the window of most context of each of
  its tokens (the first such window on a tie, as run_squad)."""
  num_tokens = max(window.start + window.length for window in windows)
  best_score, best = np.full(num_tokens, -np.inf), np.full(num_tokens, -1)
  for i, window in enumerate(windows):
    tokens = np.arange(window.start, window.start + window.length)
    score = np.minimum(tokens - window.start, window.start + window.length - 1 - tokens) + (
        0.01 * window.length)
    better = score > best_score[tokens]
    best_score[tokens[better]], best[tokens[better]] = score[better], i
  return [best[window.start:window.start + window.length] == i
          for i, window in enumerate(windows)]


def _top(logits: np.ndarray, allowed: np.ndarray, n: int) -> np.ndarray:
  """Indices of the `n` largest `logits` where `allowed`, largest first."""
  indices = np.flatnonzero(allowed)
  return indices[np.argsort(-logits[indices], kind="stable")[:n]]


def window_spans(logits: np.ndarray, window: Window, is_max_context: np.ndarray, *,
                 n_best: int, max_answer_length: int) -> np.ndarray:
  """logits: [2, seq_length] (start, end) of one window -> its candidate spans, float64
  [spans, 4]: first and last context token, start logit, end logit."""
  start_logits = logits[0, window.offset:window.offset + window.length]  # [window tokens]
  end_logits = logits[1, window.offset:window.offset + window.length]
  starts, ends = np.meshgrid(_top(start_logits, is_max_context, n_best),
                             _top(end_logits, np.ones_like(is_max_context), n_best),
                             indexing="ij")  # [n_best, n_best] each
  valid = (starts <= ends) & (ends < starts + max_answer_length)
  starts, ends = starts[valid], ends[valid]
  return np.stack([window.start + starts, window.start + ends, start_logits[starts],
                   end_logits[ends]], axis=1).astype(np.float64)


def _probabilities(scores: list[float]) -> np.ndarray:
  exponentials = np.exp(np.array(scores) - max(scores))
  return exponentials / exponentials.sum()


def question_answer(question_windows: list[tuple[Window, np.ndarray]], context: str,
                    token_starts: np.ndarray, token_ends: np.ndarray, *, allow_no_answer: bool,
                    n_best: int, max_answer_length: int,
                    null_score_diff_threshold: float) -> tuple[str, list[dict], float]:
  """(answer, n-best list, null score minus best span score) of one question from its
  windows and their logits [2, seq_length]."""
  windows = [window for window, _ in question_windows]
  spans = np.concatenate([np.zeros((0, 4))] + [
      window_spans(logits, window, is_max, n_best=n_best, max_answer_length=max_answer_length)
      for (window, logits), is_max in zip(question_windows, max_context(windows))])
  candidates, texts = [], set()  # the best spans, until n_best distinct texts
  for first, last, start_logit, end_logit in spans[np.argsort(-(spans[:, 2] + spans[:, 3]),
                                                                kind="stable")]:
    start, end = int(token_starts[int(first)]), int(token_ends[int(last)])
    candidates.append(Candidate(context[start:end], start, end, float(start_logit),
                                float(end_logit)))
    texts.add(candidates[-1].text)
    if len(texts) == n_best:
      break
  null = min((Candidate("", 0, 0, float(logits[0, 0]), float(logits[1, 0]))
              for _, logits in question_windows), key=lambda c: c.score)
  if allow_no_answer:
    candidates.append(null)
  nbest, seen = [], set()
  for candidate in sorted(candidates, key=lambda c: -c.score):  # the null among the spans
    if candidate.text not in seen and len(nbest) < n_best:
      seen.add(candidate.text)
      nbest.append(candidate)
  if allow_no_answer and "" not in seen:
    nbest.append(null)
  best_span = next((c for c in nbest if c.text), None)
  score_diff = null.score - best_span.score if best_span else math.inf
  answer = best_span.text if best_span and (
      not allow_no_answer or score_diff <= null_score_diff_threshold) else ""
  probabilities = _probabilities([c.score for c in nbest]) if nbest else []
  return answer, [{**vars(c), "probability": float(p)}
                  for c, p in zip(nbest, probabilities)], score_diff


def best_answers(squad: SquadFile, squad_features: SquadFeatures, span_logits: np.ndarray, *,
                 allow_no_answer: bool, n_best: int = N_BEST,
                 max_answer_length: int = MAX_ANSWER_LENGTH,
                 null_score_diff_threshold: float = 0.0) -> Answers:
  """span_logits: [windows, 2, seq_length], in `squad_features.windows`' order -> every
  question's answer."""
  by_question = [[] for _ in squad.questions]
  for window, logits in zip(squad_features.windows, span_logits, strict=True):
    by_question[window.question].append((window, logits))
  predictions, nbest, null_score_diff = {}, {}, {}
  for question, question_windows in zip(squad.questions, by_question):
    tokens = squad_features.contexts[question.context]
    answer, candidates, score_diff = question_answer(
        question_windows, squad.contexts[question.context], tokens.starts, tokens.ends,
        allow_no_answer=allow_no_answer, n_best=n_best, max_answer_length=max_answer_length,
        null_score_diff_threshold=null_score_diff_threshold)
    predictions[question.id], nbest[question.id] = answer, candidates
    if allow_no_answer:
      null_score_diff[question.id] = score_diff
  return Answers(predictions, nbest, null_score_diff)


def write_predictions(directory: str, answers: Answers) -> None:
  """predictions.json ({question id: answer text}, what the official evaluation scripts read),
  nbest_predictions.json and, for v2.0, null_odds.json (the script's --na-prob-file)."""
  files.write_json(os.path.join(directory, PREDICTIONS_FILE), answers.predictions)
  files.write_json(os.path.join(directory, NBEST_FILE), answers.nbest)
  if answers.null_score_diff:
    files.write_json(os.path.join(directory, NULL_ODDS_FILE), answers.null_score_diff)

"""Answers a question from a context with an `answer` fine-tune's LiteRT or ONNX export, as its
SavedModel's `answer` signature does: the context cut into windows of what the sequence has room
for after the question (cut to `max_query_length` pieces) every `doc_stride` tokens, the
`n_best_size` best starts and ends of each window paired (the end at most `max_answer_length`
tokens after the start, the start in its window of most context), the best start + end logit
chosen and cut from the context by its tokens' character offsets. A model fine-tuned on SQuAD
v2.0 answers "" when the no-answer score beats the best span's by more than
`null_score_diff_threshold`.

  python examples/answer.py EXPORT_DIR "the question ||| the context" ...

prints a JSON object per input, the signature's outputs for it: `answer` (`context[start:end]`),
`start`, `end` (characters of the context, Python string indices, the spaces around `|||` not
part of it), `score` (the span's start + end logit, or the no-answer score) and `has_answer`.

It runs with the runtimes alone (no TensorFlow, no bert_tf), so its windows and span choice are
written again here after bert_tf/finetune/kinds/answer/squad.py's (`window_starts`, the n-best
pairing); tests/test_portable_export.py checks that both give the same answers."""

import numpy as np
from portable_model import PortableModel, main, parts

USAGE = 'python examples/answer.py EXPORT_DIR "QUESTION ||| CONTEXT" ...'


def windows(num_tokens: int, room: int, doc_stride: int) -> list[tuple[int, int]]:
  """(first token, tokens) of each window of the context; one empty window for no tokens."""
  found, start = [], 0
  while True:
    length = min(num_tokens - start, room)
    found.append((start, length))
    if start + length >= num_tokens:
      return found
    start += min(length, doc_stride)


def most_context(spans: list[tuple[int, int]], num_tokens: int) -> np.ndarray:
  """For each token, the window where it has the most context (the first on a tie)."""
  best, chosen = np.full(num_tokens, -np.inf), np.zeros(num_tokens, int)
  for i, (start, length) in enumerate(spans):
    for token in range(start, start + length):
      score = min(token - start, start + length - 1 - token) + 0.01 * length
      if score > best[token]:
        best[token], chosen[token] = score, i
  return chosen


def answers(model: PortableModel, inputs: list[str]) -> list[dict]:
  return [answer(model, *question_context) for question_context in [
      parts(text, given, 2, 2, "'QUESTION ||| CONTEXT'") for given, text in enumerate(inputs, 1)]]


def answer(model: PortableModel, question: str, context: str) -> dict:
  """The answer to one question from its context: its windows run as one batch."""
  settings = model.description
  question_ids = model.tokenizer.encode(question, add_special_tokens=False).ids[
      :settings["max_query_length"]]
  encoding = model.tokenizer.encode(context, add_special_tokens=False)
  room = model.seq_length - len(question_ids) - 3  # [CLS] question [SEP] window [SEP]
  spans = windows(len(encoding.ids), room, settings["doc_stride"])
  head = [model.cls_id, *question_ids, model.sep_id]
  outputs = model.run(model.inputs([
      (head + encoding.ids[start:start + length] + [model.sep_id],
       [0] * len(head) + [1] * (length + 1)) for start, length in spans]))
  chosen, n_best = most_context(spans, len(encoding.ids)), settings["n_best_size"]
  best = None  # (score, first token, last token): on a tie the first window, start, end
  for i, (start, length) in enumerate(spans):
    starts = outputs["start_logits"][i, len(head):len(head) + length]
    ends = outputs["end_logits"][i, len(head):len(head) + length]
    mine = [t for t in range(length) if chosen[start + t] == i]
    for s in sorted(sorted(mine, key=lambda t: -starts[t])[:n_best]):
      for e in sorted(np.argsort(-ends, kind="stable")[:n_best]):
        score = float(starts[s] + ends[e])
        if s <= e < s + settings["max_answer_length"] and (best is None or score > best[0]):
          best = (score, start + s, start + int(e))
  null = min(float(outputs["start_logits"][i, 0] + outputs["end_logits"][i, 0])
             for i in range(len(spans)))
  if best is None or (settings["version_2_with_negative"]
                      and null - best[0] > settings["null_score_diff_threshold"]):
    return {"answer": "", "start": 0, "end": 0, "score": null, "has_answer": False}
  start, end = encoding.offsets[best[1]][0], encoding.offsets[best[2]][1]
  return {"answer": context[start:end], "start": start, "end": end, "score": best[0],
          "has_answer": True}


if __name__ == "__main__":
  main("answer", USAGE, answers)

"""The built-in question-answering task: SQuAD v1.1 JSON made from the prose of Python's
language reference (`builtin_corpus`), so that question answering (and the probe) has a task
on every machine without a download.

The contexts are the reference's prose sentences (`builtin_tagging.prose_sentences`, each
once) taken `CONTEXT_SENTENCES` at a time. Each sentence of a context that quotes a code term
(`The "if" statement is used for conditional execution.`) asks one question: the sentence with
its first quoted term, quotes included, put as `what` (`The what statement is used for
conditional execution.`); the answer is the term, at its place in the context. To answer, a
model finds the sentence the question restates among the context's and reads the words where
the question differs. Every `DEV_EVERY`-th context goes, with its questions, to the dev file,
the others to the training file, so no sentence is in both.
"""

import json
import re

from bert_tf.data.builtin_tagging import prose_sentences
from bert_tf.data.builtin_task import DEV_EVERY

NAME = "builtin_answer"
KIND = "answer"
SUFFIX = ".json"
CONTEXT_SENTENCES = 2
_QUOTED = re.compile(r'"([^"]+)"')


def paragraph(sentences: list[str], number: int) -> dict:
  """A SQuAD paragraph: the sentences as its context, a question per sentence that quotes a
  term (ids `builtin-<number>-<k>`)."""
  context, questions = "", []
  for sentence in sentences:
    start = len(context) + bool(context)
    context = f"{context} {sentence}" if context else sentence
    quoted = _QUOTED.search(sentence)
    if quoted:
      questions.append({
          "id": f"builtin-{number}-{len(questions)}",
          "question": sentence[:quoted.start()] + "what" + sentence[quoted.end():],
          "answers": [{"text": quoted.group(1), "answer_start": start + quoted.start(1)}]})
  return {"context": context, "qas": questions}


def examples() -> tuple[list[dict], list[dict]]:
  """(train, dev) lists of SQuAD paragraphs with a question or more, the same on every
  call."""
  sentences = prose_sentences()
  paragraphs = [paragraph(sentences[i:i + CONTEXT_SENTENCES], i // CONTEXT_SENTENCES)
                for i in range(0, len(sentences), CONTEXT_SENTENCES)]
  train, dev = [], []
  for i, asked in enumerate(p for p in paragraphs if p["qas"]):
    (dev if i % DEV_EVERY == DEV_EVERY - 1 else train).append(asked)
  return train, dev


def texts() -> tuple[str, str]:
  """The training and dev files' texts: SQuAD v1.1 JSON, one article."""
  return tuple(json.dumps({"version": "1.1", "data": [{"title": "Python language reference",
                                                       "paragraphs": paragraphs}]},
                          ensure_ascii=False)
               for paragraphs in examples())

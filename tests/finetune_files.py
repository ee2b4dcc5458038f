"""Small files of the fine-tuning task kinds beside classification, written for tests in each
kind's format: TSV pairs with numeric labels (regression), CoNLL-2003's four columns (tagging),
SQuAD v2.0 JSON (answers). Their words come from two small lists (CODE, DEBUG) and common words,
so that what a label or an entity is can be learned in a few steps."""

import json
import random

CODE = ["function", "class", "return", "value", "object", "method"]
DEBUG = ["debugger", "breakpoint", "frame", "stack", "command", "line"]
COMMON = ["the", "of", "and", "a", "is", "in"]


def write_regression(path, count, seed):
  """Pairs of texts; the label is the share of the second text's words from the first's list."""
  generator = random.Random(seed)
  lines = ["sentence1\tsentence2\tscore"]
  for _ in range(count):
    first = generator.choice([CODE, DEBUG])
    shared = generator.randint(0, 4)
    second = generator.choices(first, k=shared) + generator.choices(
        DEBUG if first is CODE else CODE, k=4 - shared)
    lines.append(f"{' '.join(generator.choices(first, k=4))}\t{' '.join(second)}\t"
                 f"{shared / 4:.2f}")
  path.write_text("\n".join(lines) + "\n", encoding="utf-8")
  return str(path)


def write_conll(path, count, seed):
  """CoNLL-2003's four columns; CODE words are B-/I-CODE entities, DEBUG words B-/I-DEBUG."""
  generator = random.Random(seed)
  lines = ["-DOCSTART- -X- -X- O", ""]
  for _ in range(count):
    previous = "O"
    for _ in range(generator.randint(4, 9)):
      kind = generator.choice(["O", "O", "CODE", "DEBUG"])
      word = generator.choice({"O": COMMON, "CODE": CODE, "DEBUG": DEBUG}[kind])
      tag = "O" if kind == "O" else ("I-" if previous == kind else "B-") + kind
      previous = kind
      lines.append(f"{word} NN B-NP {tag}")
    lines.append("")
  path.write_text("\n".join(lines), encoding="utf-8")
  return str(path)


def squad_question(context, question_id, question, answer):
  start = context.find(answer) if answer else -1
  return {"id": question_id, "question": question, "is_impossible": not answer,
          "answers": [{"text": answer, "answer_start": start}] if answer else []}


def squad_file(seed, paragraphs=6):
  """SQuAD v2.0: `paragraphs` contexts of some 40 words (several windows at 32 tokens); in
  each, a question whose answer is the one DEBUG word, and an unanswerable one."""
  generator = random.Random(seed)
  written = []
  for i in range(paragraphs):
    words = generator.choices(COMMON + CODE, k=40)
    words[generator.randrange(40)] = generator.choice(DEBUG)
    context = " ".join(words)
    answer = next(word for word in words if word in DEBUG)
    written.append({"context": context, "qas": [
        squad_question(context, f"q{seed}-{i}", "which debugger word", answer),
        squad_question(context, f"q{seed}-{i}-none", "where is the stack", "")]})
  return {"version": "v2.0", "data": [{"title": "t", "paragraphs": written}]}


def write_json(path, value):
  path.write_text(json.dumps(value), encoding="utf-8")
  return str(path)

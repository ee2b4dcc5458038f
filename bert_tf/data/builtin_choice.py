"""The built-in multiple-choice task: which of four sentences comes next after a sentence of
Python's language reference (`builtin_corpus`), so that multiple choice (and the probe) has a
task on every machine without a download.

A context is a prose sentence (`builtin_task.prose`) of a help topic; its right ending is the
sentence that follows it in the topic, itself prose; the `DISTRACTORS` other endings are the
right endings of other contexts of the same split, each from another help topic than the
context's and from one another's, and the right one's place among the four is drawn by a
seeded generator. Each sentence is in one example only, as a context or as its right ending
(the pairs are taken in turn, never overlapping), so every ending of the task is also some
context's right ending: no ending is told by being one.

Why this task: telling a sentence's successor from sentences of elsewhere is what next
sentence prediction trains, and which sentence goes on from another takes reading both;
random weights have to learn it from under a thousand examples. SWAG's distractors are
written to fool a model; these are not, so the task measures what pre-training gives, not how
far a model gets on a hard benchmark.

Every `DEV_EVERY`-th pair (context and right ending) goes to dev, the others to training, and
distractors come from the example's own split: no sentence of dev is in the training file.
Written as JSON Lines (`{"context", "endings", "label"}`, fine-tuning's general form of a
multiple-choice task) under the data directory on first use (`builtin_tasks`).
"""

import json
import random
from pydoc_data import topics as pydoc_topics

from bert_tf.data.builtin_corpus import topic_sentences
from bert_tf.data.builtin_task import DEV_EVERY, prose

NAME = "builtin_choice"
KIND = "choose"
SUFFIX = ".jsonl"
DISTRACTORS = 3
MAX_WORDS = 40  # a longer sentence is left out: a pair of them would not fit the probe's 64
SEED = 47


def _usable(sentence: str) -> bool:
  return prose(sentence) and len(sentence.split()) <= MAX_WORDS


def next_sentence_pairs() -> tuple[list, list]:
  """(train, dev) lists of (topic, sentence, the sentence after it) of the reference's
  topics in name order, each sentence in one pair, every `DEV_EVERY`-th pair to dev."""
  pairs, seen = [], set()
  for topic in sorted(pydoc_topics.topics):
    sentences = topic_sentences(pydoc_topics.topics[topic])
    i = 0
    while i + 1 < len(sentences):
      first, second = sentences[i], sentences[i + 1]
      if _usable(first) and _usable(second) and not {first, second} & seen:
        pairs.append((topic, first, second))
        seen.update((first, second))
        i += 2
      else:
        i += 1
  train, dev = [], []
  for i, pair in enumerate(pairs):
    (dev if i % DEV_EVERY == DEV_EVERY - 1 else train).append(pair)
  return train, dev


def choices(pairs: list, rng: random.Random) -> list[dict]:
  """{"context", "endings", "label"} of each pair of `pairs` (one split), its distractors the
  second sentences of `DISTRACTORS` pairs of as many other topics."""
  rows = []
  for topic, context, ending in pairs:
    distractors, topics = [], {topic}
    while len(distractors) < DISTRACTORS:
      other_topic, _, other = pairs[rng.randrange(len(pairs))]
      if other_topic not in topics:
        distractors.append(other)
        topics.add(other_topic)
    label = rng.randrange(DISTRACTORS + 1)
    rows.append({"context": context, "endings": [*distractors[:label], ending,
                                                 *distractors[label:]], "label": label})
  return rows


def examples() -> tuple[list[dict], list[dict]]:
  """(train, dev) lists of examples, the same on every call."""
  rng = random.Random(SEED)
  return tuple(choices(pairs, rng) for pairs in next_sentence_pairs())


def texts() -> tuple[str, str]:
  """The training and dev files' texts."""
  return tuple("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
               for rows in examples())

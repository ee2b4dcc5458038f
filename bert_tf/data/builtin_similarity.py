"""The built-in regression task: how much of a sentence of Python's language reference
(`builtin_corpus`) a second sentence keeps, a graded similarity in STS-B's form, so that
regression (and the probe) has a task on every machine without a download.

A pair is a prose sentence (`builtin_tagging.topic_prose`) of `MIN_WORDS` to `MAX_WORDS`
words, and the same sentence with a share of its words, at seeded random places, replaced by
the words at the same places of a prose sentence of another help topic; the score is the share
of its words the second sentence keeps. The shares aimed at, 0, 1/4, 1/2, 3/4 and all
(`KEPT`), take turns, so each is a fifth of the pairs; the score is the share actually kept
(3 of 13 words replaced keeps 0.77), exactly: a replaced word differs from the word it
replaces, case aside, and every other word is the same.

Why this task: the score is a similarity with grades, not a class in disguise, and there are
two ways to read it, both of which pre-training on the corpus prepares: from the pair, by
which words of the two sentences match at the same places; and from the second sentence, by
how many of its words do not fit their context, which is what a masked language model learns
(a replaced word comes from another topic's sentence, so it seldom fits). Random weights have
to learn either from a few hundred pairs: the quickstart's encoder probes at a dev Pearson of
0.46, random weights at 0.08 (docs/finetuning.md). Words are replaced in place, the sentence
keeping its length, so that the share is of words a model can count, and the donor is of
another topic so that its words are out of place. With at most `MAX_WORDS` words a side, nine
pairs in ten fit the probe's 64 tokens and nearly all fit 128.

The reference's prose sentences are split as the other built-in tasks split them: every
`DEV_EVERY`-th to dev, the others to training; both sentences of a pair come from the same
split, so no sentence of dev is in the training file, whole or in part. Written as GLUE-style
TSV (a header row, columns `sentence1`, `sentence2` and `score`, the score with two decimals)
under the data directory on first use (`builtin_tasks`).
"""

import bisect
import functools
import random
from collections.abc import Callable

from bert_tf.data.builtin_tagging import topic_prose
from bert_tf.data.builtin_task import DEV_EVERY

NAME = "builtin_similar"
KIND = "regress"
SUFFIX = ".tsv"
TEXT_COLUMNS, LABEL_COLUMN = ("sentence1", "sentence2"), "score"
MIN_WORDS, MAX_WORDS = 8, 24
KEPT = (0.0, 0.25, 0.5, 0.75, 1.0)  # the shares of words kept, in turn
SEED = 27
DONOR_TRIES = 100  # random sentences tried as a pair's donor before the pair is left out


def split_sentences(words_of: Callable[[str], list[str]] = str.split) -> tuple[list, list]:
  """(train, dev) lists of (topic, `words_of(sentence)`) of the prose sentences, every
  `DEV_EVERY`-th to dev."""
  train, dev = [], []
  for i, (topic, sentence) in enumerate(topic_prose()):
    (dev if i % DEV_EVERY == DEV_EVERY - 1 else train).append((topic, words_of(sentence)))
  return train, dev


def donated(topic: str, donors: list, make: Callable, rng: random.Random):
  """`make(donor words)` of the first of up to `DONOR_TRIES` random `donors` ((topic, words))
  of a topic other than `topic` for which it is not None; None if there is none."""
  for _ in range(DONOR_TRIES):
    donor_topic, donor = donors[rng.randrange(len(donors))]
    result = None if donor_topic == topic else make(donor)
    if result is not None:
      return result
  return None


def changed(words: list[str], donor: list[str], kept: float,
            rng: random.Random) -> list[str] | None:
  """`words` with all but `kept` of them (a share, rounded to whole words) replaced by
  `donor`'s words at the same places, chosen at random among the places where the two differ
  (case aside); None when `donor` is too short or differs at too few places."""
  replaced = len(words) - round(kept * len(words))
  places = [i for i, (word, other) in enumerate(zip(words, donor))
            if word.lower() != other.lower()]
  if len(donor) < len(words) or len(places) < replaced:
    return None
  chosen = set(rng.sample(places, replaced))
  return [donor[i] if i in chosen else word for i, word in enumerate(words)]


def pairs(sentences: list, rng: random.Random) -> list[tuple[str, str, float]]:
  """(sentence1, sentence2, score) of the sentences of `MIN_WORDS` to `MAX_WORDS` words among
  `sentences` ((topic, words) of one split), their donors drawn from all of `sentences`."""
  donors = sorted(sentences, key=lambda pair: len(pair[1]))
  lengths = [len(words) for _, words in donors]
  rows = []
  chosen = [(topic, words) for topic, words in sentences
            if MIN_WORDS <= len(words) <= MAX_WORDS]
  for i, (topic, words) in enumerate(chosen):
    kept = KEPT[i % len(KEPT)]
    long_enough = donors[bisect.bisect_left(lengths, len(words)):]
    second = donated(topic, long_enough, functools.partial(changed, words, kept=kept, rng=rng), rng)
    if second is not None:
      same = sum(word == other for word, other in zip(words, second))
      rows.append((" ".join(words), " ".join(second), same / len(words)))
  return rows


def examples() -> tuple[list, list]:
  """(train, dev) lists of (sentence1, sentence2, score), the same on every call."""
  rng = random.Random(SEED)
  return tuple(pairs(sentences, rng) for sentences in split_sentences())


def _tsv(rows: list[tuple[str, str, float]]) -> str:
  return "\t".join((*TEXT_COLUMNS, LABEL_COLUMN)) + "\n" + "".join(
      f"{first}\t{second}\t{score:.2f}\n" for first, second, score in rows)


def texts() -> tuple[str, str]:
  """The training and dev files' texts."""
  return tuple(_tsv(rows) for rows in examples())

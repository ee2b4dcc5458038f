"""The built-in tagging task that needs the context: the words of a sentence of Python's
language reference (`builtin_corpus`) that were swapped for another sentence's, tagged in BIO
form in CoNLL-style files.

Each prose sentence (`builtin_tagging.topic_prose`) of `MIN_WORDS` to `MAX_WORDS` words gets
one or two runs of one to `MAX_RUN` consecutive words replaced by the words at the same places
of a prose sentence of another help topic (each replaced word differs from the one it
replaces, case aside); the replaced words are the entities (`B-SWAP`, `I-SWAP`), every other
word `O`. Words are split as `builtin_tagging` splits them (a run of letters, digits and
underscores, or one other character), and only words of `MIN_LETTERS` letters or more are
swapped, for another such word: a swapped `of` for `in` could fit anywhere.

Why beside `builtin_tag`: there, where an entity starts and ends is given by quote marks and
its type mostly by the word itself, so random weights learn it from the training file as well
as a pre-trained encoder (docs/measured.md). Here any word may be swapped and any word may be
a swap: a word is tagged by whether it fits its sentence, which is what masked language
modelling learns. It is the built-in task `benchmarks/transfer.py --task=tag` measures.

Sentences are split as the other built-in tasks split them: every `DEV_EVERY`-th to dev, the
others to training, a sentence's donor from its own split.
"""

import functools
import random

from bert_tf.data.builtin_similarity import donated, split_sentences
from bert_tf.data.builtin_tagging import WORD, conll

NAME = "builtin_swap"
KIND = "tag"
SUFFIX = ".conll"
TYPE = "SWAP"
MIN_WORDS, MAX_WORDS = 8, 40
MAX_RUN = 3  # the most consecutive words a run replaces
MIN_LETTERS = 4  # shorter words (`a`, `of`, `the`) fit anywhere: they are not swapped
SEED = 29


def _content(word: str) -> bool:
  """A word of letters long enough to carry meaning (not `a`, `of`, `the`)."""
  return word.isalpha() and len(word) >= MIN_LETTERS


def swapped(words: list[str], donor: list[str], runs: int,
            rng: random.Random) -> tuple[list[str], list[str]] | None:
  """(words, tags): `runs` runs of consecutive words of `words` replaced by `donor`'s at the
  same places, where both are words of letters that differ; None when `donor` has too few such
  places."""
  swappable = [i for i, (word, other) in enumerate(zip(words, donor))
               if _content(word) and _content(other) and word.lower() != other.lower()]
  tags = ["O"] * len(words)
  result = list(words)
  for _ in range(runs):
    free = [i for i in swappable if tags[i] == "O" and (i == 0 or tags[i - 1] == "O")]
    if not free:
      return None
    start, wanted = rng.choice(free), rng.randint(1, MAX_RUN)
    length = 1
    while length < wanted and start + length in swappable and tags[start + length] == "O":
      length += 1
    if start + length < len(words) and tags[start + length] != "O":
      return None  # would join the next run
    for i in range(start, start + length):
      result[i] = donor[i]
      tags[i] = ("B-" if i == start else "I-") + TYPE
  return result, tags


def tagged(sentences: list, rng: random.Random) -> list[tuple[list[str], list[str]]]:
  """(words, tags) of the sentences of `MIN_WORDS` to `MAX_WORDS` words among `sentences`
  ((topic, words) of one split), their donors drawn from all of `sentences`."""
  rows = []
  for topic, words in sentences:
    if MIN_WORDS <= len(words) <= MAX_WORDS:
      runs = rng.randint(1, 2)
      result = donated(topic, sentences, functools.partial(swapped, words, runs=runs, rng=rng), rng)
      if result is not None:
        rows.append(result)
  return rows


def examples() -> tuple[list, list]:
  """(train, dev) lists of (words, tags) sentences, the same on every call."""
  rng = random.Random(SEED)
  return tuple(tagged(sentences, rng) for sentences in split_sentences(WORD.findall))


def texts() -> tuple[str, str]:
  """The training and dev files' texts."""
  return tuple(conll(sentences) for sentences in examples())

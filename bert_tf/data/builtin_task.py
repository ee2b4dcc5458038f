"""The built-in labelled task: which help topic of Python's language reference a sentence is
from, made from the built-in corpus's documents (`builtin_corpus`), so that fine-tuning and
the probe have a task on every machine without a download.

The classes are the `NUM_CLASSES` topics with the most sentences (ties by name); an example is
one of their prose sentences of at least `MIN_WORDS` words, each sentence once, and none that
two of the topics share. Every `DEV_EVERY`-th sentence of a
topic goes to the dev file, the others to the training file: both files draw on the whole of
each topic, and no sentence is in both. Written as GLUE-style TSV (a header row, columns `text`
and `label`) under the data directory on first use (`builtin_tasks`).
"""

import collections
from pydoc_data import topics as pydoc_topics

from bert_tf.data.builtin_corpus import topic_sentences

NAME = "builtin"  # what --train_file, --dev_file and their probe_ forms take for this task
KIND = "classify"
SUFFIX = ".tsv"
NUM_CLASSES = 4
MIN_WORDS = 6
DEV_EVERY = 5
TEXT_COLUMNS, LABEL_COLUMN = ("text",), "label"


def prose(sentence: str) -> bool:
  """A sentence of words, not a grammar rule, a code line or a table row."""
  return (len(sentence.split()) >= MIN_WORDS and sentence[0].isupper()
          and "\t" not in sentence and " | " not in sentence and "::=" not in sentence)


def examples() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
  """(train, dev) lists of (sentence, topic) pairs, the same on every call."""
  # Each sentence once (the reference repeats some): none is in both files or in two classes.
  sentences = {name: list(dict.fromkeys(s for s in topic_sentences(text) if prose(s)))
               for name, text in pydoc_topics.topics.items()}
  chosen = sorted(sentences, key=lambda name: (-len(sentences[name]), name))[:NUM_CLASSES]
  seen = collections.Counter(s for name in chosen for s in sentences[name])
  train, dev = [], []
  for name in sorted(chosen):
    for i, sentence in enumerate(s for s in sentences[name] if seen[s] == 1):
      (dev if i % DEV_EVERY == DEV_EVERY - 1 else train).append((sentence, name))
  return train, dev


def _tsv(rows: list[tuple[str, str]]) -> str:
  return "".join(f"{text}\t{label}\n" for text, label in
                 [(*TEXT_COLUMNS, LABEL_COLUMN), *rows])


def texts() -> tuple[str, str]:
  """The training and dev files' texts."""
  return tuple(_tsv(rows) for rows in examples())

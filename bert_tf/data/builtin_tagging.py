"""The built-in tagging task: the code terms quoted in the prose of Python's language reference
(`builtin_corpus`), tagged in BIO form in CoNLL-style files, so that token tagging (and the
probe) has a task on every machine without a download.

The reference quotes code in its prose: `The "if" statement is used for conditional
execution`, `"TypeError" is raised`, `the "__setitem__()" method`. Each word inside a pair of
double quotes is part of an entity: `KEYWORD` when the quoted term is a Python keyword,
`EXCEPTION` when it names an exception or warning class (`...Error`, `...Exception`,
`...Warning`), `CODE` otherwise; the quotes themselves and every other word are `O`. A word is
a run of letters, digits and underscores, or one other character, so `"__setitem__()"` is the
words `"`, `__setitem__`, `(`, `)`, `"` tagged `O B-CODE I-CODE I-CODE O`. The same word
outside quotes (`if` in prose) is `O`: where a term starts and ends is read from its context,
its type from its words.

The sentences are the reference's prose sentences (`builtin_task.prose`), each once, of at most
`MAX_WORDS` words, that quote a term (the others would teach only `O`, and a short probe would
learn to answer nothing); every `DEV_EVERY`-th goes to the dev file, the others to the
training file.
"""

import keyword
import re
from pydoc_data import topics as pydoc_topics

from bert_tf.data.builtin_corpus import topic_sentences
from bert_tf.data.builtin_task import DEV_EVERY, prose

NAME = "builtin_tag"
KIND = "tag"
SUFFIX = ".conll"
MAX_WORDS = 40
TYPES = ("CODE", "EXCEPTION", "KEYWORD")

WORD = re.compile(r"\w+|[^\w\s]")
_QUOTED = re.compile(r'"([^"]+)"')
_EXCEPTION = re.compile(r"\w*(?:Error|Exception|Warning)")


def topic_prose() -> list[tuple[str, str]]:
  """(topic, sentence) of the reference's prose sentences, topics in name order, each sentence
  once (under the first topic that has it)."""
  topics = {}
  for name in sorted(pydoc_topics.topics):
    for sentence in topic_sentences(pydoc_topics.topics[name]):
      if prose(sentence):
        topics.setdefault(sentence, name)
  return [(name, sentence) for sentence, name in topics.items()]


def prose_sentences() -> list[str]:
  """The reference's prose sentences, topics in name order, each sentence once."""
  return [sentence for _, sentence in topic_prose()]


def term_type(term: str) -> str:
  """The entity type of a quoted term (see the module's docstring)."""
  if term in keyword.kwlist:
    return "KEYWORD"
  return "EXCEPTION" if _EXCEPTION.fullmatch(term) else "CODE"


def tagged_words(sentence: str) -> tuple[list[str], list[str]]:
  """(words, tags) of a sentence: its quoted terms as entities, the rest `O`."""
  types = {}  # character offset of a quoted word -> (its term's type, whether it is the first)
  for quoted in _QUOTED.finditer(sentence):
    kind = term_type(quoted.group(1).strip())
    for i, word in enumerate(WORD.finditer(quoted.group(1))):
      types[quoted.start(1) + word.start()] = (kind, i == 0)
  words, tags = [], []
  for word in WORD.finditer(sentence):
    words.append(word.group())
    kind, first = types.get(word.start(), (None, False))
    tags.append("O" if kind is None else ("B-" if first else "I-") + kind)
  return words, tags


def examples() -> tuple[list, list]:
  """(train, dev) lists of (words, tags) sentences, the same on every call."""
  train, dev = [], []
  tagged = (tagged_words(sentence) for sentence in prose_sentences())
  for i, (words, tags) in enumerate(t for t in tagged
                                    if len(t[0]) <= MAX_WORDS and set(t[1]) != {"O"}):
    (dev if i % DEV_EVERY == DEV_EVERY - 1 else train).append((words, tags))
  return train, dev


def conll(sentences: list) -> str:
  """(words, tags) sentences as a CoNLL-style file: a word and its tag a line, a blank line
  between sentences."""
  return "\n".join("".join(f"{word} {tag}\n" for word, tag in zip(words, tags))
                   for words, tags in sentences)


def texts() -> tuple[str, str]:
  """The training and dev files' texts."""
  return tuple(conll(sentences) for sentences in examples())

"""The built-in corpus: Python's language reference, which every Python installation carries.

`pydoc_data.topics` holds the reference's 79 help topics as plain text. Each topic becomes one
document of the corpus format (docs/design.md#corpus): one sentence a line, documents apart.
Prose is re-flowed and split into sentences; grammar rules and code examples are kept as one
line each, since they are text the model should see but have no sentences.
"""

import os
import re
from pydoc_data import topics as pydoc_topics

import tensorflow as tf

from bert_tf import files

NAME = "builtin"
NUM_FILES = 4

_UNDERLINE = re.compile(r"^\s*([*=\-~^\"'])\1{2,}\s*$")
# Borders of ASCII tables ("+-----+", "|=====|", runs of "|"): layout, not text. Left in, the
# rules alone were a tenth of the corpus's tokens.
_TABLE_RULE = re.compile(r"[+|]?(?:[-=]{3,}[+|]?)+")
_CELL_BORDERS = re.compile(r"\s*\|(?:\s*\|)*\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])")


def _paragraphs(text: str):
  paragraph = []
  for line in text.splitlines():
    if not line.strip():
      if paragraph:
        yield paragraph
      paragraph = []
    elif not _UNDERLINE.match(line):
      paragraph.append(line)
  if paragraph:
    yield paragraph


def topic_sentences(text: str) -> list[str]:
  """Splits one help topic into the lines of one corpus document."""
  sentences = []
  for paragraph in _paragraphs(text):
    joined = " ".join(line.strip() for line in paragraph)
    joined = " ".join(_CELL_BORDERS.sub(" | ", _TABLE_RULE.sub(" ", joined)).split())
    joined = joined.strip(" |")
    if not joined:
      continue
    if paragraph[0].startswith((" ", "\t")):
      # Code or grammar: one line, not split at full stops inside the code.
      sentences.append(joined)
    else:
      sentences.extend(s.strip() for s in _SENTENCE_END.split(joined) if s.strip())
  return sentences


def write_corpus(directory: str, sentences_per_document: int = 0) -> list[str]:
  """Writes the corpus as `NUM_FILES` text files under `directory`; returns their paths.
  `sentences_per_document`: each topic cut into documents of that many sentences (0: a
  topic a document).

  Each file is written under a temporary name of its own, then renamed: a killed process
  never leaves a half file, and workers writing the corpus at once do not collide.
  """
  tf.io.gfile.makedirs(directory)
  names = sorted(pydoc_topics.topics)
  paths = []
  for shard in range(NUM_FILES):
    path = os.path.join(directory, f"pydoc_topics-{shard:02d}-of-{NUM_FILES:02d}.txt")
    documents = ["\n".join(sentences) for name in names[shard::NUM_FILES]
                 for sentences in _documents(topic_sentences(pydoc_topics.topics[name]),
                                             sentences_per_document)]
    files.write_text(path, "\n\n".join(documents) + "\n")
    paths.append(path)
  return paths


def _documents(sentences: list[str], per_document: int) -> list[list[str]]:
  if not per_document:
    return [sentences]
  return [sentences[i:i + per_document] for i in range(0, len(sentences), per_document)]


def corpus_pattern(data_dir: str, sentences_per_document: int = 0) -> str:
  """Returns the glob of the built-in corpus under `data_dir`, writing it when first needed.
  `sentences_per_document`: a corpus of short documents, each topic cut into documents of
  that many sentences (the packing benchmark's and tests', docs/pipeline.md#packing)."""
  name = f"pydoc_topics_by_{sentences_per_document}" if sentences_per_document else "pydoc_topics"
  directory = os.path.join(data_dir, name)
  pattern = os.path.join(directory, "pydoc_topics-*.txt")
  expected = [os.path.join(directory, f"pydoc_topics-{i:02d}-of-{NUM_FILES:02d}.txt")
              for i in range(NUM_FILES)]
  if not all(tf.io.gfile.exists(p) for p in expected):
    write_corpus(directory, sentences_per_document)
  return pattern

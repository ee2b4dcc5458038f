"""Corpus files to documents (SPEC §1): listing, decoding messy text, finding documents.

A document is a 1-D string tensor of its sentences. Each file is read whole, so memory is
bounded by the largest file, never by the corpus: shard a large corpus into files (as original
BERT does) and they are streamed one after another.
"""

import tensorflow as tf

from bert_tf.data import builtin_corpus
from bert_tf.errors import UserError

INPUT_FORMATS = ("sentence_per_line", "paragraph_per_line")

# A line longer than this is cut: no sentence is this long, and the pair would be truncated to
# at most `seq_length` tokens anyway.
MAX_LINE_CHARS = 20_000

# Sentence ends for paragraph_per_line: ., ! or ? (and closing quotes or brackets), then space,
# then what starts a sentence.
_SENTENCE_BREAK = r"([.!?][\"')\]]*)\s+([A-Z0-9\"'(\[])"


def list_files(file_patterns, data_dir: str = "data") -> list[str]:
  """Expands globs and comma lists (local or any `tf.io.gfile` URL) into sorted file names.

  `builtin` stands for the built-in corpus, written under `data_dir` when first needed.
  """
  if isinstance(file_patterns, str):
    file_patterns = file_patterns.split(",")
  files = []
  for pattern in (p.strip() for p in file_patterns):
    if not pattern:
      continue
    if pattern == builtin_corpus.NAME:
      pattern = builtin_corpus.corpus_pattern(data_dir)
    matches = tf.io.gfile.glob(pattern)
    if not matches:
      raise UserError(f"no file matches {pattern!r}")
    files.extend(m for m in matches if not tf.io.gfile.isdir(m))
  if not files:
    raise UserError("no input files given")
  return sorted(set(files))


def _clean_lines(content: tf.Tensor) -> tf.Tensor:
  """Decodes a file's bytes into stripped lines: bad UTF-8 replaced, BOM and CR removed."""
  content = tf.strings.unicode_transcode(
      content, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
  content = tf.strings.regex_replace(content, "^\ufeff", "")
  lines = tf.strings.split(content, "\n")
  lines = tf.strings.strip(lines)  # Also drops the \r of CRLF line ends.
  return tf.strings.substr(lines, 0, MAX_LINE_CHARS, unit="UTF8_CHAR")


def documents_from_text(content: tf.Tensor, input_format: str) -> tf.RaggedTensor:
  """Turns one file's contents into documents: a [documents, (sentences)] string tensor.

  `sentence_per_line`: one sentence a line, blank lines between documents.
  `paragraph_per_line`: each non-blank line is a document, split into sentences here.
  Empty documents are dropped.
  """
  if input_format not in INPUT_FORMATS:
    raise UserError(f"unknown input_format {input_format!r}: use one of {INPUT_FORMATS}")
  lines = _clean_lines(content)
  is_blank = tf.equal(tf.strings.length(lines), 0)
  if input_format == "paragraph_per_line":
    paragraphs = tf.boolean_mask(lines, ~is_blank)
    split = tf.strings.regex_replace(paragraphs, _SENTENCE_BREAK, "\\1\n\\2")
    return tf.strings.split(split, "\n")
  # Line i belongs to the document numbered by the blank lines before it; renumbering the
  # numbers that occur makes runs of blank lines produce no empty document.
  document_number = tf.cumsum(tf.cast(is_blank, tf.int64))
  sentences = tf.boolean_mask(lines, ~is_blank)
  document_number = tf.boolean_mask(document_number, ~is_blank)
  _, row_ids = tf.unique(document_number)
  return tf.RaggedTensor.from_value_rowids(sentences, tf.cast(row_ids, tf.int64))


def read_documents(path: tf.Tensor, input_format: str) -> tf.data.Dataset:
  """A dataset of one file's documents, each a 1-D string tensor of sentences."""
  documents = documents_from_text(tf.io.read_file(path), input_format)
  return tf.data.Dataset.from_tensor_slices(documents)


def check_documents(files: list[str], input_format: str, needed: int) -> None:
  """Fails clearly unless the corpus has at least `needed` documents (NSP needs two).

  Reads files only until enough documents are seen, so it costs one file on a real corpus.
  """
  seen = 0
  for path in files:
    documents = documents_from_text(tf.io.read_file(path), input_format)
    sentences = documents.row_lengths()
    seen += int(tf.reduce_sum(tf.cast(sentences > 0, tf.int32)))
    if seen >= needed:
      return
  if seen == 0:
    raise UserError(f"the corpus has no text: its {len(files)} file(s) are empty or blank")
  raise UserError(
      f"the corpus has only {seen} document(s); next sentence prediction needs at least "
      f"{needed} (separate documents with a blank line, or train MLM only with --nonsp)")

"""Corpus files to documents (docs/design.md#corpus): listing, decoding messy text, documents.

A document is a 1-D string tensor of its sentences. Files are streamed: `read_range` reads a
byte range of a file in chunks of `CHUNK_BYTES` and emits each document as soon as it is
complete, carrying only the unfinished line and the unfinished document from one chunk to the
next. So memory is bounded by the chunk size and the longest document allowed
(`MAX_SENTENCES_PER_DOCUMENT` lines of at most `MAX_LINE_CHARS` characters), never by a file.
How files are cut into ranges is `bert_tf.data.pieces`'s job.
"""

import concurrent.futures
import contextlib
import functools
import logging
import os
import unicodedata

import tensorflow as tf

from bert_tf.data import builtin_corpus, pieces
from bert_tf.data.data_settings import INPUT_FORMATS, corpus_groups, split_patterns
from bert_tf.errors import UserError

log = logging.getLogger("bert_tf")

# A line longer than this is cut: no sentence is this long, and the pair would be truncated to
# at most `seq_length` tokens anyway.
MAX_LINE_CHARS = 20_000

# A document longer than this is cut into consecutive parts of this many sentences, counted
# from its start. 10,000 sentences is about 200,000 words: more than a long Wikipedia article
# or a whole novel, so ordinary documents are never cut, while a file without blank lines still
# gives bounded documents (the pairing loop and a window of documents stay bounded).
MAX_SENTENCES_PER_DOCUMENT = 10_000

# Bytes read at a time. 1 MiB keeps per-element tf.data overhead negligible (thousands of lines
# per element) and memory small.
CHUNK_BYTES = 1 << 20

# FixedLengthRecordDataset reads (and drops) every byte before a range's start: a large read
# buffer makes that cheaper (about 0.2 s per GB from the page cache here, against 0.4 s with
# its 256 KiB default). So a range far into a big file costs more to open than one near its
# start; on a remote file system, files of a few GB at most keep that small.
_READ_BUFFER_BYTES = 4 << 20

# What the start-up check reads at most: enough for thousands of documents on a real corpus.
CHECK_BYTES = 4 << 20

# An unfinished line is carried as raw bytes, its leading whitespace dropped, at most this long:
# any longer and its first MAX_LINE_CHARS characters (at most 4 bytes each) are all kept.
_MAX_LINE_BYTES = 4 * MAX_LINE_CHARS + 4

_BOM = b"\xef\xbb\xbf"

# Sentence ends for paragraph_per_line: ., ! or ? (and closing quotes or brackets), then space,
# then what starts a sentence.
_SENTENCE_BREAK = r"([.!?][\"')\]]*)\s+([A-Z0-9\"'(\[])"


def list_files(file_patterns, data_dir: str = "data") -> list[str]:
  """Expands globs and comma (or `|`) lists (local or any `tf.io.gfile` URL) into sorted file
  names.

  `builtin` stands for the built-in corpus, written under `data_dir` when first needed.
  """
  if isinstance(file_patterns, str):
    file_patterns = split_patterns(file_patterns)
  files = []
  for pattern in (p.strip() for p in file_patterns):
    if not pattern:
      continue
    if pattern == builtin_corpus.NAME:
      pattern = builtin_corpus.corpus_pattern(data_dir)
    matches = tf.io.gfile.glob(pattern)
    if not matches:
      raise UserError(f"no file matches {pattern!r}")
    matched_files = [m for m in matches if not tf.io.gfile.isdir(m)]
    if not matched_files:
      raise UserError(f"{pattern!r} matches only directories: name the files, as "
                      f"{os.path.join(matches[0], '*.txt')!r}")
    files.extend(matched_files)
  if not files:
    raise UserError("no input files given")
  return sorted(set(files))


def list_groups(file_patterns: str, data_dir: str = "data") -> list[list[str]]:
  """The files of each group of a mixed --input_files value (`corpus_groups`), sorted; a group
  that matches no file, or a file in two groups, is an error naming them."""
  groups = []
  for number, patterns in enumerate(corpus_groups(file_patterns), 1):
    with about_group(number, file_patterns):
      groups.append(list_files(patterns, data_dir))
  seen = {}
  for number, files in enumerate(groups, 1):
    for path in files:
      if seen.setdefault(path, number) != number:
        raise UserError(f"{path} is in groups {seen[path]} and {number} of --input_files: "
                        "each file belongs to one group")
  return groups


def training_groups(file_patterns: str, mixed: bool, data_dir: str = "data") -> list[list[str]]:
  """The files of each group of a mixed corpus (`list_groups`), or one group of them all."""
  return list_groups(file_patterns, data_dir) if mixed else [list_files(file_patterns, data_dir)]


@contextlib.contextmanager
def about_group(number: int | None, file_patterns: str):
  """A UserError raised inside names group `number` of `file_patterns` (None: not mixed)."""
  try:
    yield
  except UserError as e:
    if number is None:
      raise
    patterns = "|".join(corpus_groups(file_patterns)[number - 1])
    raise UserError(f"group {number} of --input_files ({patterns}): {e}") from None


def _check_format(input_format: str) -> None:
  if input_format not in INPUT_FORMATS:
    raise UserError(f"unknown input_format {input_format!r}: use one of {INPUT_FORMATS}")


def _clean_lines(raw_lines: tf.Tensor) -> tf.Tensor:
  """Complete raw lines (bytes, no \\n) to stripped text: bad UTF-8 replaced, CR removed, cut
  at MAX_LINE_CHARS. Decoding line by line equals decoding the whole text: a newline is never
  part of a multi-byte character."""
  lines = tf.strings.unicode_transcode(
      raw_lines, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
  lines = tf.strings.strip(lines)  # Also drops the \r of CRLF line ends.
  return tf.strings.substr(lines, 0, MAX_LINE_CHARS, unit="UTF8_CHAR")


def _cut_long_documents(documents: tf.RaggedTensor) -> tf.RaggedTensor:
  """Cuts documents longer than MAX_SENTENCES_PER_DOCUMENT into parts of that many sentences,
  counted from each document's start."""
  sentences = documents.flat_values
  row_ids = documents.value_rowids()
  position = tf.range(tf.size(sentences, out_type=tf.int64)) - tf.gather(
      documents.row_splits, row_ids)
  starts_part = tf.equal(position % MAX_SENTENCES_PER_DOCUMENT, 0)
  return tf.RaggedTensor.from_value_rowids(
      sentences, tf.cumsum(tf.cast(starts_part, tf.int64)) - 1)


def _split_documents(lines: tf.Tensor, pending: tf.Tensor, at_end: tf.Tensor,
                     input_format: str):
  """Complete clean lines, after the unfinished document's sentences `pending`, to
  (complete documents [documents, (sentences)], the new unfinished document).

  sentence_per_line: a blank line ends a document (runs of them give no empty document); the
  document after the last blank line is unfinished unless `at_end`, and its parts of
  MAX_SENTENCES_PER_DOCUMENT sentences are complete already. paragraph_per_line: each
  non-blank line is a document, split into sentences here; nothing is ever unfinished.
  """
  is_blank = tf.equal(tf.strings.length(lines), 0)
  if input_format == "paragraph_per_line":
    paragraphs = tf.boolean_mask(lines, ~is_blank)
    split = tf.strings.regex_replace(paragraphs, _SENTENCE_BREAK, "\\1\n\\2")
    return _cut_long_documents(tf.strings.split(split, "\n")), pending
  lines = tf.concat([pending, lines], 0)
  is_blank = tf.concat([tf.zeros_like(pending, tf.bool), is_blank], 0)
  num_lines = tf.size(lines, out_type=tf.int64)
  # Lines from `finished` on form the unfinished document: those after the last blank line.
  last_blank = tf.reduce_max(tf.concat([[-1], tf.where(is_blank)[:, 0]], 0))
  finished = tf.where(at_end, num_lines, last_blank + 1)
  # Line i belongs to the document numbered by the blank lines before it; renumbering the
  # numbers that occur makes runs of blank lines produce no empty document.
  document_number = tf.cumsum(tf.cast(is_blank, tf.int64))
  keep = ~is_blank & (tf.range(num_lines) < finished)
  _, row_ids = tf.unique(tf.boolean_mask(document_number, keep))
  documents = _cut_long_documents(tf.RaggedTensor.from_value_rowids(
      tf.boolean_mask(lines, keep), tf.cast(row_ids, tf.int64)))
  unfinished = lines[finished:]
  # Whole parts of the unfinished document are complete: they are cut off from its start.
  whole_parts = tf.size(unfinished, out_type=tf.int64) // MAX_SENTENCES_PER_DOCUMENT
  done = whole_parts * MAX_SENTENCES_PER_DOCUMENT
  parts = tf.RaggedTensor.from_row_splits(
      unfinished[:done], tf.range(0, done + 1, MAX_SENTENCES_PER_DOCUMENT))
  return tf.concat([documents, parts], 0), unfinished[done:]


def _strip_bom(text: tf.Tensor) -> tf.Tensor:
  has_bom = tf.equal(tf.strings.substr(text, 0, len(_BOM)), _BOM)
  return tf.strings.substr(text, tf.where(has_bom, len(_BOM), 0), -1)


def documents_from_text(content: tf.Tensor, input_format: str) -> tf.RaggedTensor:
  """Turns a whole text (a file's contents) into documents: a [documents, (sentences)] tensor.

  `sentence_per_line`: one sentence a line, blank lines between documents.
  `paragraph_per_line`: each non-blank line is a document, split into sentences here.
  Empty documents are dropped; documents over MAX_SENTENCES_PER_DOCUMENT sentences are cut.
  `read_range` gives the same documents, streaming.
  """
  _check_format(input_format)
  lines = _clean_lines(tf.strings.split(_strip_bom(content), "\n"))
  documents, _ = _split_documents(lines, tf.constant([], tf.string), tf.constant(True),
                                  input_format)
  return documents


@functools.cache
def _chunk_splitter(input_format: str):
  """`read_range`'s scan function for `input_format`, traced once per process (every stream
  reads its ranges through it)."""

  @tf.function(autograph=False, reduce_retracing=True)
  def split_chunk(carried, chunk):
    """(unfinished line, unfinished document), chunk -> the new ones, complete documents.

    The unfinished document's sentences are carried joined by newlines (they hold none), so
    that the state keeps one shape."""
    (line_start, pending), (text, at_end) = carried, chunk
    raw_lines = tf.strings.split(line_start + text, "\n")
    num_complete = tf.size(raw_lines) - tf.where(at_end, 0, 1)
    pending = tf.strings.split(pending, "\n")
    documents, pending = _split_documents(
        _clean_lines(raw_lines[:num_complete]), pending[tf.strings.length(pending) > 0],
        at_end, input_format)
    unfinished_line = tf.where(at_end, b"", raw_lines[-1])
    unfinished_line = tf.strings.substr(
        tf.strings.regex_replace(unfinished_line, r"^\s+", ""), 0, _MAX_LINE_BYTES)
    return ((unfinished_line, tf.strings.reduce_join(pending, separator="\n")),
            (documents.flat_values, documents.row_splits))

  return split_chunk


def read_range(path: tf.Tensor, start: tf.Tensor, end: tf.Tensor, file_size: tf.Tensor,
               input_format: str, chunk_bytes: int = CHUNK_BYTES) -> tf.data.Dataset:
  """The documents (1-D string tensors of sentences) of bytes [start, end) of `path`, whose
  size is `file_size`, streamed: the same documents as `documents_from_text` on those bytes.

  The arguments are tensors (this runs inside `Dataset.interleave` over ranges); a range
  should start at 0 or a document start (as `pieces.plan_pieces` makes them). Reads go through
  TensorFlow's file systems, so any `tf.io.gfile` URL works. `chunk_bytes` (at least 3, to
  hold a byte-order mark) may be a tensor too.
  """
  _check_format(input_format)
  start, end, file_size, chunk_bytes = (
      tf.cast(x, tf.int64) for x in (start, end, file_size, chunk_bytes))
  whole_chunks = (end - start) // chunk_bytes
  last_start = start + whole_chunks * chunk_bytes
  # FixedLengthRecordDataset wants the body between header and footer to be a whole number of
  # records, so the last, shorter chunk is a dataset of its own (empty when there is none).
  chunks = tf.data.FixedLengthRecordDataset(
      path, chunk_bytes, header_bytes=start, footer_bytes=file_size - last_start,
      buffer_size=_READ_BUFFER_BYTES).concatenate(
          tf.data.FixedLengthRecordDataset(
              path, tf.maximum(end - last_start, 1), header_bytes=last_start,
              footer_bytes=file_size - end, buffer_size=_READ_BUFFER_BYTES).take(
                  tf.minimum(end - last_start, 1)))
  # The byte-order mark goes at the file's start only; a last empty chunk flushes what is
  # carried.
  chunks = chunks.enumerate().map(
      lambda index, chunk: (tf.where((index == 0) & (start == 0), _strip_bom(chunk), chunk),
                            False))
  chunks = chunks.concatenate(tf.data.Dataset.from_tensors((tf.constant(b""), True)))

  documents = chunks.scan((tf.constant(b""), tf.constant(b"")), _chunk_splitter(input_format))
  return documents.flat_map(lambda sentences, row_splits: tf.data.Dataset.from_tensor_slices(
      tf.RaggedTensor.from_row_splits(sentences, row_splits)))


def read_ranges(ranges: list[pieces.FileRange], input_format: str) -> tf.data.Dataset:
  """The documents of `ranges`, one range after another (see `read_range`)."""
  if not ranges:
    return tf.data.Dataset.from_tensors(tf.constant([], tf.string)).take(0)
  return tf.data.Dataset.from_tensor_slices((
      [r.path for r in ranges], [r.start for r in ranges], [r.end for r in ranges],
      [r.file_size for r in ranges])).flat_map(tf.autograph.experimental.do_not_convert(
          lambda path, start, end, file_size: read_range(
              path, start, end, file_size, input_format)))  # tf ops: no AutoGraph needed


_COMPRESSED = {b"\x1f\x8b": "gzip", b"\xfd7zXZ\x00": "xz", b"PK\x03\x04": "zip",
               b"\x28\xb5\x2f\xfd": "zstd",
               **{b"BZh%d1AY&SY" % size: "bzip2" for size in range(1, 10)}}


# A file whose start has more than this share of characters that are not text (bytes that are
# not UTF-8, control characters other than whitespace) is binary, or text in another encoding
# (UTF-16 holds a NUL every other byte): refused. Text with a stray bad byte or NUL trains, the
# bytes replaced.
BINARY_SHARE = 0.1
HEAD_BYTES = 4096  # what is looked at of each file's start


def _not_text_share(head: bytes) -> float:
  """The share of the characters of `head` that are not text: undecodable or control."""
  text = head.decode("utf-8", errors="replace")
  bad = sum(1 for c in text if c == "\ufffd" or (
      unicodedata.category(c) == "Cc" and c not in "\t\n\r\f\v"))
  return bad / max(len(text), 1)


def _check_is_text(path: str) -> None:
  """A compressed or binary file is refused (its bytes would train as text); one that holds
  NUL bytes near its start among text is warned about (it trains, its bad bytes replaced); one
  that cannot be opened is refused too."""
  try:
    with tf.io.gfile.GFile(path, "rb") as f:
      head = f.read(HEAD_BYTES)
  except (tf.errors.NotFoundError, tf.errors.PermissionDeniedError) as e:
    raise UserError(f"{path} cannot be read: {e.message.splitlines()[0]}") from None
  for magic, kind in _COMPRESSED.items():
    if head.startswith(magic):
      raise UserError(f"{path} is {kind}-compressed: corpus files are read as plain text, "
                      "decompress it first")
  share = _not_text_share(head)
  if share > BINARY_SHARE:
    raise UserError(f"{path} is not text: {share:.0%} of its first {len(head):,} bytes are not "
                    "UTF-8 characters or are control characters (a binary file, or text in "
                    "another encoding such as UTF-16); corpus files are UTF-8 text")
  if b"\x00" in head:
    log.warning("%s holds NUL bytes: it looks binary, not text (trained on as text)", path)


def check_documents(files: list[str], input_format: str, needed: int) -> None:
  """Fails clearly unless every file can be read and starts as text, and the corpus has at
  least `needed` documents (NSP needs two).

  Every file's first bytes are looked at, in parallel (`_check_is_text`: cheap, so that a
  compressed, binary or unreadable file late in a long list is one line now, not a failure
  mid-run; the first bad one in the list is named). Then at most about CHECK_BYTES from the
  start of the corpus are read (ending at a document boundary) and its documents counted. A
  corpus with more text than that is accepted: its first CHECK_BYTES hold fewer documents only
  if one document is that long, and a document that long is cut into parts.
  """
  _check_format(input_format)
  with concurrent.futures.ThreadPoolExecutor(min(32, max(1, len(files)))) as pool:
    list(pool.map(_check_is_text, files))  # a round trip each on a remote file system
  ranges, budget = [], CHECK_BYTES
  for path in files:
    ranges.append(pieces.prefix_range(path, budget))
    budget -= ranges[-1].length
    if budget <= 0 or ranges[-1].end < ranges[-1].file_size:
      break
  read_all = len(ranges) == len(files) and ranges[-1].end == ranges[-1].file_size
  seen = sum(1 for _ in read_ranges(ranges, input_format).take(needed))
  if seen >= needed or not read_all:
    return
  if seen == 0:
    raise UserError(f"the corpus has no text: its {len(files)} file(s) are empty or blank")
  raise UserError(
      f"the corpus has only {seen} document(s); next sentence prediction needs at least "
      f"{needed} (separate documents with a blank line, or train MLM only with --nonsp)")

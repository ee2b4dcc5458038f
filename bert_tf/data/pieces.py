"""Cutting a corpus into pieces of about `PIECE_BYTES` at document boundaries.

A piece is the unit of work the pipeline hands out: input pipelines share pieces (so a single
big file is read about 1/W by each of W workers), and a resumed run recomputes at most one
piece per pipeline. Big files are cut into byte ranges; small files are grouped. Cuts are found
on the host by reading a little of the file after each nominal cut point through `tf.io.gfile`,
so planning works on any file system and reads about a page per cut on an ordinary corpus.
"""

import concurrent.futures
import dataclasses

import tensorflow as tf

from bert_tf.data.data_settings import PIECE_BYTES

# How far after a nominal cut point a document boundary (a blank line) is looked for. A
# document running across a cut point for longer than this is cut at a line start there (and a
# line longer than this at a character boundary).
BOUNDARY_SEARCH_BYTES = 1 << 20

_READ_BYTES = 64 << 10
_WHITESPACE = b" \t\n\r\x0b\x0c"  # What tf.strings.strip strips: a line of them is blank.
_MAX_HALVINGS = 8  # How much smaller than asked pieces get to make `min_pieces`.


@dataclasses.dataclass(frozen=True)
class FileRange:
  """Bytes [start, end) of the file at `path`, whose size is `file_size`."""
  path: str
  start: int  # 0 or the byte offset of a document start (a non-blank line after a blank one)
  end: int  # the byte offset of a document start, or file_size
  file_size: int

  @property
  def length(self) -> int:
    return self.end - self.start


def file_sizes(files: list[str]) -> list[int]:
  """The sizes of `files`, asked in parallel (each a round trip on a remote file system)."""
  with concurrent.futures.ThreadPoolExecutor(min(32, max(1, len(files)))) as pool:
    return list(pool.map(lambda path: tf.io.gfile.stat(path).length, files))


def _boundary_after(f, offset: int, size: int) -> int:
  """The first document start at or after `offset` in the open file `f` of `size` bytes: the
  first non-blank line after a blank line; else a line start, else a character start, within
  BOUNDARY_SEARCH_BYTES; `size` when the file ends first."""
  begin = max(0, offset - 1)  # The byte before `offset` tells whether a line starts there.
  f.seek(begin)
  data = b""
  while True:
    block = f.read(_READ_BYTES)
    data += block
    at_eof = not block or begin + len(data) >= size
    found = _document_start(data, offset - begin)
    if found is not None:
      return min(size, begin + found)
    if at_eof or len(data) > BOUNDARY_SEARCH_BYTES:
      break
  data = data[:BOUNDARY_SEARCH_BYTES + 1]
  if at_eof and not data[offset - begin:].strip(_WHITESPACE):
    return size  # Only blank lines follow.
  newline = data.find(b"\n", max(0, offset - begin - 1))
  if newline >= 0:
    return min(size, begin + newline + 1)
  at = offset - begin  # One enormous line: cut it between two characters.
  while at < len(data) and 0x80 <= data[at] < 0xC0:
    at += 1
  return min(size, begin + at)


def _document_start(data: bytes, at: int) -> int | None:
  """In `data`, the index of the first non-blank line that follows a blank line starting at or
  after `at`; None if there is none in `data`."""
  start = data.rfind(b"\n", 0, at) + 1 if at > 0 else 0
  if start < at:  # `at` is inside a line: the next line start.
    newline = data.find(b"\n", at)
    if newline < 0:
      return None
    start = newline + 1
  after_blank = False
  while start < len(data):
    newline = data.find(b"\n", start)
    line = data[start:] if newline < 0 else data[start:newline]
    if line.strip(_WHITESPACE):
      if after_blank:
        return start
    elif newline >= 0:
      after_blank = True
    if newline < 0:
      break
    start = newline + 1
  return None


def _file_ranges(path: str, size: int, piece_bytes: int) -> list[FileRange]:
  """One file cut at the document boundaries after each multiple of `piece_bytes`."""
  cuts = [0]
  if size > piece_bytes:
    with tf.io.gfile.GFile(path, "rb") as f:
      for nominal in range(piece_bytes, size, piece_bytes):
        if nominal > cuts[-1]:
          cut = _boundary_after(f, nominal, size)
          if cut < size:
            cuts.append(cut)
  cuts.append(size)
  return [FileRange(path, a, b, size) for a, b in zip(cuts, cuts[1:])]


def _plan(files: list[str], sizes: list[int], piece_bytes: int) -> list[list[FileRange]]:
  pieces, current, current_bytes = [], [], 0
  for path, size in zip(files, sizes):
    for file_range in _file_ranges(path, size, piece_bytes):
      if current and current_bytes + file_range.length > piece_bytes:
        pieces.append(current)
        current, current_bytes = [], 0
      current.append(file_range)
      current_bytes += file_range.length
  if current:
    pieces.append(current)
  return pieces


def plan_pieces(files: list[str], piece_bytes: int = PIECE_BYTES,
                min_pieces: int = 1) -> list[list[FileRange]]:
  """The corpus cut into pieces of about `piece_bytes`: each a list of file ranges (usually
  one) that start and end at document boundaries.

  Files larger than `piece_bytes` are cut near its multiples; smaller ones are grouped, in the
  order given, into pieces of at most `piece_bytes`. When that gives fewer than `min_pieces`
  pieces (the pipeline asks for one per input pipeline), pieces are made smaller, as far as
  the corpus's documents allow. Every byte of every file is in exactly one range, and the plan
  depends only on the files, their contents and sizes.
  """
  sizes = file_sizes(files)
  piece_bytes = max(1, min(piece_bytes, sum(sizes) // max(1, min_pieces)))
  planned = _plan(files, sizes, piece_bytes)
  for _ in range(_MAX_HALVINGS):
    if len(planned) >= min_pieces or piece_bytes == 1:
      break
    piece_bytes = max(1, piece_bytes // 2)
    planned = _plan(files, sizes, piece_bytes)
  return planned


def prefix_range(path: str, max_bytes: int) -> FileRange:
  """The start of a file: about `max_bytes`, ending at a document boundary (the whole file
  when it is no longer)."""
  size = file_sizes([path])[0]
  if size <= max_bytes:
    return FileRange(path, 0, size, size)
  with tf.io.gfile.GFile(path, "rb") as f:
    return FileRange(path, 0, _boundary_after(f, max(1, max_bytes), size), size)


def sample_pieces(planned: list[list[FileRange]], max_bytes: int) -> list[list[FileRange]]:
  """Pieces spread evenly over the corpus, about `max_bytes` in all (all of them when the
  corpus is no larger)."""
  total = sum(r.length for piece in planned for r in piece)
  if total <= max_bytes:
    return planned
  count = max(1, round(len(planned) * max_bytes / total))
  return [planned[i * len(planned) // count] for i in range(count)]

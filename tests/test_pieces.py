"""Cutting a corpus into pieces at document boundaries: coverage, balance, any file system."""

import pytest
import tensorflow as tf

from bert_tf.data import corpus, pieces


def _write(path: str, content: bytes) -> str:
  with tf.io.gfile.GFile(path, "wb") as f:
    f.write(content)
  return path


def _documents(ranges, input_format="sentence_per_line"):
  return [d.tolist() for d in corpus.read_ranges(ranges, input_format).as_numpy_iterator()]


def _whole(path, input_format="sentence_per_line"):
  with tf.io.gfile.GFile(path, "rb") as f:
    return corpus.documents_from_text(tf.constant(f.read()), input_format).to_list()


def _check_coverage(planned, files):
  """Every byte of every file in exactly one range, ranges in file order."""
  ranges = [r for piece in planned for r in piece]
  assert [r.path for r in ranges] == sorted((r.path for r in ranges), key=files.index)
  for path in files:
    own = [r for r in ranges if r.path == path]
    size = tf.io.gfile.stat(path).length
    assert own[0].start == 0 and own[-1].end == size
    assert all(a.end == b.start for a, b in zip(own, own[1:]))
    assert all(r.start < r.end for r in own) or size == 0
    assert all(r.file_size == size for r in own)


def _is_document_start(content: bytes, at: int) -> bool:
  """Whether a non-blank line that follows a blank line starts at `at`."""
  previous_line = content[content.rfind(b"\n", 0, at - 1) + 1:at - 1]
  return (content[at - 1:at] == b"\n" and not previous_line.strip()
          and bool(content[at:content.find(b"\n", at)].strip()))


def _one_file(directory: str, documents: int = 300) -> tuple[str, bytes]:
  """A file of documents of 1 to 6 sentences, some separated by runs of blank lines, CRLF."""
  text = []
  for d in range(documents):
    text.append("".join(f"Document {d} says é {s}.\n" for s in range(1 + d % 6)))
    text.append("\n" if d % 7 else " \t\r\n\n")
  content = "".join(text).encode()
  return _write(f"{directory}/one.txt", content), content


@pytest.mark.parametrize("directory", ["local", "ram://pieces"])
def test_one_file_split_over_3_pieces_covers_every_document_once(tmp_path, directory):
  directory = str(tmp_path) if directory == "local" else directory
  path, content = _one_file(directory)
  try:
    planned = pieces.plan_pieces([path], min_pieces=3)
    assert len(planned) == 3 and all(len(piece) == 1 for piece in planned)
    _check_coverage(planned, [path])
    # The pieces' documents, each range read on its own, are the file's documents: none lost,
    # none twice.
    assert _documents([r for piece in planned for r in piece]) == _whole(path)
    # Balanced within one document: every cut is the first blank line after a third.
    longest_document = max(len(d) for d in content.split(b"\n\n"))
    for piece in planned:
      assert abs(piece[0].length - len(content) / 3) <= longest_document + 4
  finally:
    tf.io.gfile.remove(path)


def test_cuts_are_at_blank_lines(tmp_path):
  path, content = _one_file(str(tmp_path))
  planned = pieces.plan_pieces([path], piece_bytes=1000)
  assert len(planned) == -(-len(content) // 1000) or len(planned) == len(content) // 1000
  for piece in planned[1:]:
    assert _is_document_start(content, piece[0].start)
  assert pieces.plan_pieces([path], piece_bytes=1000) == planned  # Deterministic.


def test_small_files_are_grouped_in_order(tmp_path):
  files = [_write(f"{tmp_path}/f{i:02d}.txt", f"File {i}.\nLine.\n\nMore {i}.\n".encode() * (
      1 + i % 3)) for i in range(12)]
  sizes = pieces.file_sizes(files)
  planned = pieces.plan_pieces(files, piece_bytes=100)
  _check_coverage(planned, files)
  assert all(len(r) == 1 or sum(x.length for x in r) <= 100 for r in planned)
  assert all(r.start == 0 and r.end == r.file_size for piece in planned for r in piece)
  assert sum(len(piece) for piece in planned) == len(files)
  assert len(planned) < len(files)
  # Greedy: a piece holds as many files, in order, as fit.
  for piece, following in zip(planned, planned[1:]):
    assert sum(r.length for r in piece) + following[0].length > 100
  assert sizes == [r.file_size for piece in planned for r in piece]


def test_small_files_and_a_big_one_make_at_least_min_pieces(tmp_path):
  small = [_write(f"{tmp_path}/a{i}.txt", b"Small one.\nTwo.\n\nOther.\n") for i in range(3)]
  big, _ = _one_file(str(tmp_path))
  files = small + [big]
  planned = pieces.plan_pieces(files, min_pieces=8)
  assert len(planned) >= 8
  _check_coverage(planned, files)
  assert _documents([r for piece in planned for r in piece]) == sum(
      (_whole(f) for f in files), [])


def test_min_pieces_as_far_as_the_documents_allow(tmp_path):
  path = _write(f"{tmp_path}/two.txt", b"First document.\n\nSecond document.\n")
  planned = pieces.plan_pieces([path], min_pieces=5)
  _check_coverage(planned, [path])
  assert [_documents(piece) for piece in planned] == [
      [[b"First document."]], [[b"Second document."]]]


def test_a_document_longer_than_the_search_is_cut_at_a_line_start(tmp_path, monkeypatch):
  monkeypatch.setattr(pieces, "BOUNDARY_SEARCH_BYTES", 100)
  lines = [f"Line {i} of a document without end.".encode() for i in range(200)]
  path = _write(f"{tmp_path}/long.txt", b"\n".join(lines) + b"\n")
  planned = pieces.plan_pieces([path], piece_bytes=1000)
  _check_coverage(planned, [path])
  ranges = [r for piece in planned for r in piece]
  parts = _documents(ranges)
  assert len(ranges) > 1 and len(parts) == len(ranges)  # One document a range,
  assert sum(parts, []) == lines  # consecutive parts of the file's one document.


def test_one_enormous_line_is_cut_between_characters(tmp_path, monkeypatch):
  monkeypatch.setattr(pieces, "BOUNDARY_SEARCH_BYTES", 10)
  content = "€".encode() * 1000  # 3 bytes a character, no newline at all
  path = _write(f"{tmp_path}/line.txt", content)
  planned = pieces.plan_pieces([path], piece_bytes=1000)
  assert len(planned) == 3
  for piece in planned:
    assert content[piece[0].start:piece[0].end].decode()  # Valid UTF-8: no character cut.


def test_empty_and_blank_files(tmp_path):
  files = [_write(f"{tmp_path}/empty.txt", b""), _write(f"{tmp_path}/blank.txt", b"\n \n")]
  planned = pieces.plan_pieces(files, min_pieces=3)
  _check_coverage(planned, files)
  assert _documents([r for piece in planned for r in piece]) == []


def test_prefix_range_ends_at_a_document_boundary(tmp_path):
  path, content = _one_file(str(tmp_path))
  prefix = pieces.prefix_range(path, 500)
  assert prefix.start == 0 and 500 <= prefix.end < 700
  assert _is_document_start(content, prefix.end)
  assert pieces.prefix_range(path, 10 ** 9) == pieces.FileRange(
      path, 0, len(content), len(content))


def test_sample_pieces_are_spread_evenly_up_to_the_budget():
  planned = [[pieces.FileRange(f"f{i}", 0, 100, 100)] for i in range(40)]
  sample = pieces.sample_pieces(planned, 1000)
  assert [piece[0].path for piece in sample] == [f"f{i}" for i in range(0, 40, 4)]
  assert pieces.sample_pieces(planned, 4000) == planned
  assert pieces.sample_pieces(planned, 10) == planned[:1]

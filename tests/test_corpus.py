"""Corpus files to documents (docs/design.md#corpus): messy text, file lists, the document count."""

import gzip
import os
import re
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import builtin_corpus, corpus
from bert_tf.errors import UserError


def _documents(content: bytes, input_format: str = "sentence_per_line"):
  documents = corpus.documents_from_text(tf.constant(content), input_format)
  return [[s.decode("utf-8") for s in document] for document in documents.to_list()]


def _write(path, content: bytes) -> str:
  path.write_bytes(content)
  return str(path)


# documents_from_text, sentence_per_line

def test_clean_text_gives_sentences_and_documents():
  assert _documents(b"One.\nTwo.\n\nThree.\n") == [["One.", "Two."], ["Three."]]


def test_bom_is_removed():
  assert _documents(b"\xef\xbb\xbfFirst line.\nSecond.") == [["First line.", "Second."]]


def test_crlf_line_ends():
  assert _documents(b"One.\r\nTwo.\r\n\r\nThree.\r\n") == [["One.", "Two."], ["Three."]]


def test_tabs_at_line_ends_stripped_inside_kept():
  assert _documents(b"\tTabbed\tline\t\nNext.") == [["Tabbed\tline", "Next."]]


def test_whitespace_only_lines_separate_documents():
  assert _documents(b"One.\n \t \r\nTwo.\n   \nThree.") == [["One."], ["Two."], ["Three."]]


def test_runs_of_blank_lines_give_no_empty_documents():
  content = b"\n\n\r\n  \nOne.\n\n\n\n\t\n\nTwo.\nTwo b.\n\n\n\n"
  documents = _documents(content)
  assert documents == [["One."], ["Two.", "Two b."]]
  assert all(documents)


def test_blank_text_has_no_documents():
  for content in (b"", b"\n", b"\n\n \t\n\r\n", b"\xef\xbb\xbf\r\n"):
    documents = corpus.documents_from_text(tf.constant(content), "sentence_per_line")
    assert documents.shape[0] == 0, content


def test_everything_messy_at_once():
  content = (b"\xef\xbb\xbfHello world.\r\nSecond line.\r\n\r\n\r\n  \t \r\n"
             b"\tTabbed\there\t\r\n\n\n\nLast doc.")
  assert _documents(content) == [
      ["Hello world.", "Second line."], ["Tabbed\there"], ["Last doc."]]


def test_very_long_line_is_cut():
  long_line = "x" * (corpus.MAX_LINE_CHARS + 5_000)
  documents = corpus.documents_from_text(
      tf.constant(f"Before.\n{long_line}\nAfter.\n\nNext."), "sentence_per_line")
  lengths = tf.strings.length(documents.flat_values, unit="UTF8_CHAR").numpy().tolist()
  assert documents.row_lengths().numpy().tolist() == [3, 1]
  assert lengths == [7, corpus.MAX_LINE_CHARS, 6, 5]


def test_very_long_line_cut_at_characters_not_bytes():
  # Two-byte characters: a byte cut could split one and leave invalid UTF-8.
  documents = corpus.documents_from_text(
      tf.constant("é" * (corpus.MAX_LINE_CHARS + 10)), "sentence_per_line")
  line = documents.flat_values[0].numpy().decode("utf-8")  # Valid UTF-8, or this raises.
  assert line == "é" * corpus.MAX_LINE_CHARS


def test_invalid_utf8_is_replaced_and_the_rest_kept():
  content = b"ok \xff\xfe bad\nmore \xc3 text\n\nnext doc.\n\x80"
  assert _documents(content) == [
      ["ok \ufffd\ufffd bad", "more \ufffd text"], ["next doc.", "\ufffd"]]


def test_invalid_utf8_in_a_real_file(tmp_path):
  path = _write(tmp_path / "bad.txt", b"Good one.\n\xfe\xfe\xfe\n\nGood two.\r\n")
  size = os.path.getsize(path)
  documents = corpus.read_range(path, 0, size, size, "sentence_per_line")
  documents = [[s.decode("utf-8") for s in d.numpy()] for d in documents]
  assert documents == [["Good one.", "\ufffd" * 3], ["Good two."]]


# documents_from_text, paragraph_per_line

def test_paragraph_per_line_splits_sentences():
  content = (b"First one. Second one! Third? \"Quoted.\" (Paren) ends. lower case stays.\n"
             b"\n  \nOther paragraph. 2 starts with a digit.\r\n")
  assert _documents(content, "paragraph_per_line") == [
      ["First one.", "Second one!", "Third?", "\"Quoted.\"", "(Paren) ends. lower case stays."],
      ["Other paragraph.", "2 starts with a digit."]]


def test_paragraph_per_line_keeps_abbreviations_without_a_capital_after():
  assert _documents(b"See e.g. the list. Then stop.", "paragraph_per_line") == [
      ["See e.g. the list.", "Then stop."]]


def test_paragraph_per_line_messy():
  content = b"\xef\xbb\xbf\tOne. Two.\t\r\n\r\n\r\n \xff bad. Fine.\r\n"
  assert _documents(content, "paragraph_per_line") == [
      ["One.", "Two."], ["\ufffd bad.", "Fine."]]


def test_unknown_input_format():
  with pytest.raises(UserError, match="one_sentence_per_line"):
    corpus.documents_from_text(tf.constant(b"x"), "one_sentence_per_line")


# list_files

@pytest.fixture
def files(tmp_path):
  for name in ("a-00.txt", "a-01.txt", "b-00.txt", "c.md"):
    (tmp_path / name).write_text("Text.\n")
  (tmp_path / "dir.txt").mkdir()  # A directory that a glob matches: never a file.
  return tmp_path


def test_list_files_glob(files):
  assert corpus.list_files(str(files / "a-*.txt")) == [
      str(files / "a-00.txt"), str(files / "a-01.txt")]


def test_list_files_glob_skips_directories(files):
  assert corpus.list_files(str(files / "*.txt")) == [
      str(files / n) for n in ("a-00.txt", "a-01.txt", "b-00.txt")]


def test_list_files_comma_list_sorted_and_deduplicated(files):
  pattern = f" {files / 'c.md'} ,{files / 'a-*.txt'},{files / 'a-00.txt'},,"
  assert corpus.list_files(pattern) == [
      str(files / n) for n in ("a-00.txt", "a-01.txt", "c.md")]


def test_list_files_python_list(files):
  assert corpus.list_files([str(files / "b-*.txt"), str(files / "c.md")]) == [
      str(files / "b-00.txt"), str(files / "c.md")]


def test_list_files_pattern_matching_nothing(files):
  missing = str(files / "nothing-*.txt")
  with pytest.raises(UserError, match="nothing-"):
    corpus.list_files(f"{files / 'a-*.txt'},{missing}")
  with pytest.raises(UserError) as error:
    corpus.list_files(missing)
  assert missing in str(error.value)


def test_list_files_a_directory_given_says_so(files):
  with pytest.raises(UserError) as error:
    corpus.list_files(str(files))
  assert str(error.value) == (f"{str(files)!r} matches only directories: name the files, as "
                              f"{str(files / '*.txt')!r}")


def test_list_files_nothing_given():
  with pytest.raises(UserError, match="no input files"):
    corpus.list_files(" , ")


def test_list_files_builtin(tmp_path):
  files = corpus.list_files("builtin", data_dir=str(tmp_path))
  assert len(files) == 4
  assert all(os.path.getsize(f) > 10_000 for f in files)


# check_documents

def test_check_documents_empty_file(tmp_path):
  path = _write(tmp_path / "empty.txt", b"")
  with pytest.raises(UserError, match="no text"):
    corpus.check_documents([path], "sentence_per_line", needed=2)


def test_check_documents_blank_file(tmp_path):
  paths = [_write(tmp_path / "blank.txt", b"\n \r\n\t\n\n"),
           _write(tmp_path / "bom.txt", b"\xef\xbb\xbf\n")]
  with pytest.raises(UserError, match=r"no text: its 2 file\(s\)"):
    corpus.check_documents(paths, "sentence_per_line", needed=2)


def test_check_documents_one_document(tmp_path):
  path = _write(tmp_path / "one.txt", b"\n\nOne sentence.\nAnother one.\n\n\n")
  with pytest.raises(UserError, match=r"only 1 document\(s\).* at least 2"):
    corpus.check_documents([path], "sentence_per_line", needed=2)


def test_check_documents_one_paragraph(tmp_path):
  path = _write(tmp_path / "one.txt", b"One sentence. Another one.\n")
  with pytest.raises(UserError, match=r"only 1 document"):
    corpus.check_documents([path], "paragraph_per_line", needed=2)


def test_check_documents_two_documents(tmp_path):
  path = _write(tmp_path / "two.txt", b"One.\n\nTwo.\n")
  corpus.check_documents([path], "sentence_per_line", needed=2)


def test_check_documents_counts_across_files(tmp_path):
  paths = [_write(tmp_path / "a.txt", b"One.\n"), _write(tmp_path / "b.txt", b""),
           _write(tmp_path / "c.txt", b"\r\nTwo.\r\n")]
  corpus.check_documents(paths, "sentence_per_line", needed=2)
  with pytest.raises(UserError, match=r"only 2 document\(s\).* at least 3"):
    corpus.check_documents(paths, "sentence_per_line", needed=3)


def test_builtin_corpus_drops_table_borders():
  table = ("Text before.\n\n"
           "+-----------+--------------+\n| Option    | Meaning      |\n"
           "|===========|==============|\n| \"'<'\"     | Left-aligned |\n"
           "+-----------+--------------+\n")
  assert builtin_corpus.topic_sentences(table) == [
      "Text before.", "Option | Meaning | \"'<'\" | Left-aligned"]


# read_range: streaming gives the documents of a whole read

def _streamed(path: str, input_format: str = "sentence_per_line", chunk_bytes: int = 997,
              start: int = 0, end: int | None = None):
  return _streamed_in_chunks_of(path, [chunk_bytes], input_format, start, end)[0]


def _streamed_in_chunks_of(path: str, chunk_sizes: list[int], input_format="sentence_per_line",
                           start: int = 0, end: int | None = None):
  """The documents read_range gives for each chunk size (one dataset: one trace, fast)."""
  size = tf.io.gfile.stat(path).length
  end = size if end is None else end
  read = tf.data.Dataset.from_tensor_slices(chunk_sizes).enumerate().flat_map(
      lambda index, chunk_bytes: corpus.read_range(
          path, start, end, size, input_format, chunk_bytes=chunk_bytes).map(
              lambda document: (index, document)))
  results = [[] for _ in chunk_sizes]
  for index, document in read.as_numpy_iterator():
    results[index].append(document.tolist())
  return results


def _whole(content: bytes, input_format: str = "sentence_per_line"):
  return corpus.documents_from_text(tf.constant(content), input_format).to_list()


_MESSY = ("\ufeffHello wörld, a café.\r\nSecond line € 𝄞.\r\n\r\n\r\n  \t \r\n"
          "\tTabbed\there\t\r\n\n\n\nПривет мир. Ещё.\n日本語の文。 次。\n"
          "\n \n").encode() + b"bad \xff\xfe bytes\r\nmore \xc3 cut\n\xe2\x82\n\n" + (
              "Ünïcödé. Done! Ok? \"Yes.\" (No) end.\r\nlast line without newline €").encode()


@pytest.mark.parametrize("input_format", corpus.INPUT_FORMATS)
def test_chunks_cutting_characters_crlfs_and_documents_give_the_whole_read(
    tmp_path, input_format):
  path = _write(tmp_path / "messy.txt", _MESSY)
  expected = _whole(_MESSY, input_format)
  assert len(expected) >= 5
  # Every chunk size from 3 to 17 bytes cuts 2-, 3- and 4-byte characters, CRLFs, the BOM's
  # neighbourhood, blank-line runs and documents at every possible offset.
  chunk_sizes = [*range(3, 18), len(_MESSY) - 1, len(_MESSY), 1 << 20]
  for chunk_bytes, documents in zip(
      chunk_sizes, _streamed_in_chunks_of(path, chunk_sizes, input_format)):
    assert documents == expected, chunk_bytes


@pytest.mark.e2e
@pytest.mark.parametrize("input_format", corpus.INPUT_FORMATS)
def test_built_in_corpus_streamed_in_small_chunks_equals_whole_read(corpus_pattern,
                                                                    input_format):
  for path in corpus.list_files(corpus_pattern)[:2]:
    with open(path, "rb") as f:
      expected = _whole(f.read(), input_format)
    assert len(expected) >= 19
    assert _streamed_in_chunks_of(path, [997, 65_536], input_format) == [expected, expected]


@pytest.mark.e2e
def test_range_inside_a_file_equals_a_whole_read_of_its_bytes(tmp_path):
  content = b"One.\nTwo.\n\nThree.\nFour.\n\n\n\xef\xbb\xbfFive.\nSix.\n"
  path = _write(tmp_path / "f.txt", content)
  start, end = content.index(b"\nThree") + 1, content.index(b"\xef\xbb\xbfFive")
  assert _streamed(path, chunk_bytes=4, start=start, end=end) == _whole(content[start:end])
  assert _streamed(path, chunk_bytes=4, start=start, end=end) == [[b"Three.", b"Four."]]
  # A byte-order mark is removed only at the file's start.
  assert _streamed(path, chunk_bytes=5, start=end) == [["\ufeffFive.".encode(), b"Six."]]
  assert _streamed(path, start=3, end=3) == []


def test_lines_longer_than_the_limit_are_cut_when_streamed(tmp_path):
  # 200,000 characters on one line, more than _MAX_LINE_BYTES carried, then more lines.
  content = ("  " + "é" * 150_000 + "x" * 50_000 + "\nAfter.\n\nNext.").encode()
  path = _write(tmp_path / "long.txt", content)
  expected = _whole(content)
  assert [len(s.decode()) for d in expected for s in d] == [corpus.MAX_LINE_CHARS, 6, 5]
  assert expected[0][0].decode() == "é" * corpus.MAX_LINE_CHARS
  assert _streamed(path, chunk_bytes=4099) == expected


def test_a_file_without_blank_lines_gives_documents_of_at_most_the_bound(tmp_path):
  bound = corpus.MAX_SENTENCES_PER_DOCUMENT
  sentences = [f"Sentence {i}.".encode() for i in range(2 * bound + 1234)]
  content = b"\n".join(sentences) + b"\n"
  path = _write(tmp_path / "book.txt", content)
  expected = [sentences[:bound], sentences[bound:2 * bound], sentences[2 * bound:]]
  assert _whole(content) == expected
  assert _streamed(path, chunk_bytes=65_537) == expected


def test_long_documents_are_cut_from_their_start_among_others():
  bound = corpus.MAX_SENTENCES_PER_DOCUMENT
  long_document = [f"S{i}.".encode() for i in range(bound + 3)]
  content = b"Short.\n\n" + b"\n".join(long_document) + b"\n\nAfter.\n"
  assert _whole(content) == [[b"Short."], long_document[:bound], long_document[bound:],
                             [b"After."]]


@pytest.mark.parametrize("input_format", corpus.INPUT_FORMATS)
def test_streaming_from_tensorflows_in_memory_file_system(input_format):
  path = "ram://corpus/messy.txt"
  with tf.io.gfile.GFile(path, "wb") as f:
    f.write(_MESSY)
  try:
    assert _streamed(path, input_format, chunk_bytes=7) == _whole(_MESSY, input_format)
  finally:
    tf.io.gfile.remove(path)


def test_check_documents_reads_a_bounded_prefix(tmp_path, monkeypatch):
  # 1,000 documents; the check needs 2 and may read 200 bytes: it reads one range that ends at
  # the first document boundary after 200 bytes.
  content = b"".join(f"Document {i}.\nIts second line.\n\n".encode() for i in range(1000))
  path = _write(tmp_path / "big.txt", content)
  reads = []
  read_ranges = corpus.read_ranges

  def spy(ranges, input_format):
    reads.extend(ranges)
    return read_ranges(ranges, input_format)

  monkeypatch.setattr(corpus, "CHECK_BYTES", 200)
  monkeypatch.setattr(corpus, "read_ranges", spy)
  corpus.check_documents([path, path], "sentence_per_line", needed=2)
  [prefix] = reads
  document_bytes = len(b"Document 0.\nIts second line.\n\n")
  assert prefix.start == 0 and 200 <= prefix.end < 200 + document_bytes
  assert content[prefix.end - 2:prefix.end] == b"\n\n"  # The next document starts there.
  assert content[prefix.end:].startswith(b"Document")


def test_check_documents_accepts_a_long_first_document_with_text_after_the_prefix(
    tmp_path, monkeypatch):
  monkeypatch.setattr(corpus, "CHECK_BYTES", 64)
  path = _write(tmp_path / "one-long.txt", b"Long.\n" * 100 + b"\nSecond document.\n")
  corpus.check_documents([path], "sentence_per_line", needed=2)


def test_a_compressed_corpus_file_is_refused(tmp_path):
  import gzip
  path = _write(tmp_path / "a.txt.gz", gzip.compress(b"One.\n\nTwo.\n"))
  with pytest.raises(UserError, match="a.txt.gz is gzip-compressed: corpus files are read as "
                     "plain text, decompress it first"):
    corpus.check_documents([path], "sentence_per_line", needed=2)


def test_a_stray_nul_byte_in_text_is_warned_about(tmp_path, caplog):
  path = _write(tmp_path / "scraped.txt",
                b"A page scraped from the web.\nIt kept a\x00 NUL byte.\n\nSecond page.\n")
  corpus.check_documents([path], "sentence_per_line", needed=2)
  assert f"{path} holds NUL bytes: it looks binary, not text" in caplog.text


@pytest.mark.parametrize("name,content", [
    ("random.txt", np.random.default_rng(0).bytes(5000)),
    ("python.txt", open(sys.executable, "rb").read(4096)),
    ("utf16.txt", "One sentence.\n\nAnother document.\n".encode("utf-16"))])
def test_a_binary_corpus_file_is_refused(tmp_path, name, content):
  """Random bytes, a program, text in UTF-16: not UTF-8 text."""
  path = _write(tmp_path / name, content)
  with pytest.raises(UserError, match=rf"^{re.escape(path)} is not text: \d+% of its first "
                     "[0-9,]+ bytes are not UTF-8 characters or are control characters"):
    corpus.check_documents([path], "sentence_per_line", needed=2)


@pytest.mark.parametrize("name,content,problem", [
    ("z.txt.gz", gzip.compress(b"One.\n\nTwo.\n"), "is gzip-compressed"),
    ("z.txt", np.random.default_rng(0).bytes(5000), "is not text"),
    ("z.txt", None, "cannot be read")], ids=["gzip", "binary", "gone"])
def test_a_bad_file_late_in_a_long_list_is_found_up_front(tmp_path, monkeypatch, name, content,
                                                          problem):
  """The documents are counted in the first files only (CHECK_BYTES), but every file's start
  is looked at: the last of many files, compressed, binary or gone, is one line now."""
  monkeypatch.setattr(corpus, "CHECK_BYTES", 200)
  text = b"".join(f"Document {i}.\nIts second line.\n\n".encode() for i in range(20))
  paths = [_write(tmp_path / f"{i:02}.txt", text) for i in range(30)]
  last = str(tmp_path / name) if content is None else _write(tmp_path / name, content)
  with pytest.raises(UserError, match=f"^{re.escape(last)} {problem}"):
    corpus.check_documents([*paths, last], "sentence_per_line", needed=2)
  corpus.check_documents(paths, "sentence_per_line", needed=2)

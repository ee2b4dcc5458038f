"""Corpus files to documents (SPEC §1): messy text, file lists, the document-count check."""

import os

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

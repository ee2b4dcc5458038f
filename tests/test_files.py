"""Atomic writes through tf.io.gfile: whole files or none, unique temporaries, and directory
replacements that keep a complete copy at every moment; on a local disk and on `ram://`."""

import os
import threading

import pytest
import tensorflow as tf

from bert_tf import files


@pytest.fixture(params=["local", "ram"])
def root(request, tmp_path):
  return str(tmp_path) if request.param == "local" else f"ram://test_files_{id(request)}"


def read(path):
  with tf.io.gfile.GFile(path) as f:
    return f.read()


def test_writes_leave_no_temporary_and_replace_the_old_file(root):
  tf.io.gfile.makedirs(root)
  files.write_text(os.path.join(root, "a.txt"), "old")
  files.write_json(os.path.join(root, "a.txt"), {"b": 1, "a": [2]})
  files.copy(os.path.join(root, "a.txt"), os.path.join(root, "copy.txt"))
  assert read(os.path.join(root, "copy.txt")) == '{\n  "a": [\n    2\n  ],\n  "b": 1\n}\n'
  assert sorted(tf.io.gfile.listdir(root)) == ["a.txt", "copy.txt"]


def test_writers_of_the_same_file_at_once_never_share_a_temporary(tmp_path):
  path = str(tmp_path / "vocab.txt")
  texts = [f"writer {i}\n" * 5000 for i in range(8)]
  threads = [threading.Thread(target=files.write_text, args=(path, t)) for t in texts]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join()
  assert read(path) in texts  # one whole copy, whichever renamed last
  assert os.listdir(tmp_path) == ["vocab.txt"]


def write_directory(final, value):
  temporary = files.temporary_directory(final)
  tf.io.gfile.makedirs(os.path.join(temporary, "assets"))
  files.write_text(os.path.join(temporary, "saved_model.pb"), value)
  files.write_text(os.path.join(temporary, "assets", "vocab.txt"), value)
  return temporary


def test_replace_directory_swaps_in_the_new_copy(root):
  final = os.path.join(root, "export")
  for value in ("first", "second"):
    files.replace_directory(write_directory(final, value), final)
    assert read(os.path.join(final, "saved_model.pb")) == value
    assert read(os.path.join(final, "assets", "vocab.txt")) == value
  assert tf.io.gfile.glob(os.path.join(root, "*")) == [final]  # nothing aside, no temporary


def test_a_crash_between_the_renames_keeps_the_old_copy_whole(tmp_path, monkeypatch):
  final = str(tmp_path / "export")
  files.replace_directory(write_directory(final, "old"), final)
  temporary = write_directory(final, "new")
  rename = tf.io.gfile.rename

  def crash_on_the_second(source, target, overwrite=False):
    if source == temporary:
      raise tf.errors.UnavailableError(None, None, "killed")
    rename(source, target, overwrite)

  monkeypatch.setattr(tf.io.gfile, "rename", crash_on_the_second)
  with pytest.raises(tf.errors.UnavailableError):
    files.replace_directory(temporary, final)
  monkeypatch.undo()
  assert read(str(tmp_path / ".export.old" / "saved_model.pb")) == "old"
  assert read(os.path.join(temporary, "saved_model.pb")) == "new"
  files.replace_directory(write_directory(final, "again"), final)  # a re-run cleans up
  assert sorted(os.listdir(tmp_path)) == ["export"]
  assert read(os.path.join(final, "saved_model.pb")) == "again"

"""The built-in labelled task: GLUE-style files made from the built-in corpus, the same on
every call, train and dev disjoint, every class in both."""

import collections
import csv

from bert_tf.data import builtin_task


def read(path):
  with open(path, encoding="utf-8") as f:
    return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_files_have_a_header_and_two_columns(tmp_path):
  train_path, dev_path = builtin_task.task_files(str(tmp_path))
  for path in (train_path, dev_path):
    rows = read(path)
    assert rows[0] == ["text", "label"]
    assert all(len(row) == 2 and row[0] and row[1] for row in rows[1:])
  assert builtin_task.resolve("builtin", str(tmp_path), "train") == train_path
  assert builtin_task.resolve("builtin", str(tmp_path), "dev") == dev_path
  assert builtin_task.resolve("mine.tsv", str(tmp_path), "dev") == "mine.tsv"


def test_classes_splits_and_sizes(tmp_path):
  train, dev = (read(path)[1:] for path in builtin_task.task_files(str(tmp_path)))
  train_counts = collections.Counter(label for _, label in train)
  dev_counts = collections.Counter(label for _, label in dev)
  assert len(train_counts) == builtin_task.NUM_CLASSES == len(dev_counts)
  assert set(train_counts) == set(dev_counts)
  assert not {text for text, _ in train} & {text for text, _ in dev}
  # One sentence in DEV_EVERY of each topic is in dev.
  for label, count in dev_counts.items():
    assert count == (train_counts[label] + count) // builtin_task.DEV_EVERY
  assert len(train) >= 500 and len(dev) >= 100
  # Always answering the largest class is well below certainty: the task has to be learned.
  assert max(dev_counts.values()) / len(dev) < 0.4
  assert all(len(text.split()) >= builtin_task.MIN_WORDS for text, _ in train + dev)


def test_same_examples_on_every_call(tmp_path):
  assert builtin_task.examples() == builtin_task.examples()
  first = [open(p).read() for p in builtin_task.task_files(str(tmp_path / "a"))]
  second = [open(p).read() for p in builtin_task.task_files(str(tmp_path / "b"))]
  assert first == second

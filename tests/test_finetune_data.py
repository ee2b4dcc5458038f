"""Task files: GLUE's TSV read as it comes, every mistake one `UserError` naming the file,
and the features the pre-training tokenizer makes of one text or a pair."""

import pytest
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.finetune import data


def write(path, text):
  path.write_text(text, encoding="utf-8")
  return str(path)


@pytest.fixture
def train_file(tmp_path):
  return write(tmp_path / "train.tsv", 'id\tsentence1\tsentence2\tlabel\n'
               '1\tA "quoted" one\tsecond\tyes\n2\tthird\tfourth\tno\n3\tx\ty\tno\n')


def test_reads_pairs_with_quotes_as_text(train_file):
  examples = data.read_examples(train_file, ["sentence1", "sentence2"], "label")
  assert examples.texts == (['A "quoted" one', "third", "x"], ["second", "fourth", "y"])
  assert examples.labels == ["yes", "no", "no"]
  train, dev, classes = data.read_task(train_file, train_file, "sentence1,sentence2", "label")
  assert classes == ["no", "yes"] and len(train) == len(dev) == 3


@pytest.mark.parametrize("dev_text, columns, message", [
    (None, "sentence1", "file not found: "),
    ("", "sentence1", "is empty"),
    ("id\tsentence1\tsentence2\tlabel\n", "sentence1", "has a header row but no examples"),
    ("id\tsentence1\tlabel\n1\ta\tyes\n", "sentence1,sentence2", "has no column sentence2"),
    ("id\tsentence1\tsentence2\tlabel\n1\ta\tb\tmaybe\n", "sentence1", "labels the training "
     "file has not: 'maybe'"),
    ("id\tsentence1\tsentence2\tlabel\n1\ta\tb\n", "sentence1", "row 2: 3 fields, the header "
     "has 4"),
    ("id\tsentence1\tsentence2\tlabel\n1\ta\tb\tno\n", "a,b,c", "give one column name"),
])
def test_bad_dev_file_is_one_user_error(tmp_path, train_file, dev_text, columns, message):
  dev_file = str(tmp_path / "dev.tsv") if dev_text is None else write(tmp_path / "dev.tsv",
                                                                        dev_text)
  with pytest.raises(UserError, match=message):
    data.read_task(train_file, dev_file, columns, "label")


def test_a_single_class_is_refused(tmp_path):
  single = write(tmp_path / "one.tsv", "text\tlabel\na\tx\nb\tx\n")
  with pytest.raises(UserError, match="has a single label 'x'"):
    data.read_task(single, single, "text", "label")


@pytest.fixture(scope="module")
def text_encoder(vocab_file):
  return data.TextEncoder(Vocabulary(vocab_file), lower_case=True, seq_length=10)


def ids(vocab_file, words):
  tokens = Vocabulary(vocab_file).tokens
  return [tokens.index(word) for word in words]


def test_one_text_is_cls_text_sep_padded(text_encoder, vocab_file):
  features = text_encoder.features(tf.constant(["The Class", "a b c d e f g h i j"]))
  assert features["token_ids"].numpy().tolist() == [
      ids(vocab_file, ["[CLS]", "the", "class", "[SEP]"]) + [0] * 6,
      ids(vocab_file, ["[CLS]", *"abcdefgh", "[SEP]"])]
  assert features["padding_mask"].numpy().tolist() == [[1] * 4 + [0] * 6, [1] * 10]
  assert features["segment_ids"].numpy().tolist() == [[0] * 10, [0] * 10]


def test_a_pair_is_cut_longer_first(text_encoder, vocab_file):
  features = text_encoder.features(tf.constant(["a b c d e f", "a b c d e f g h i j"]),
                                   tf.constant(["x y", ""]))
  # An empty second text is none (original BERT's): `[CLS] a [SEP]`, its room left to a.
  assert features["token_ids"].numpy().tolist() == [
      ids(vocab_file, ["[CLS]", *"abcde", "[SEP]", "x", "y", "[SEP]"]),
      ids(vocab_file, ["[CLS]", *"abcdefgh", "[SEP]"])]
  assert features["segment_ids"].numpy().tolist() == [[0] * 7 + [1] * 3, [0] * 10]

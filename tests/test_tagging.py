"""Token tagging data: CoNLL-style files read as they come (CoNLL-2003's four columns, or a word
and a tag a line), every mistake one `UserError` naming the file and line, each word labelled
on its first WordPiece, and the predictions read back one tag per word."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.finetune.batches import batches
from bert_tf.finetune.kinds.tag import metrics, tagging

# CoNLL-2003's layout: word, part of speech, chunk, entity tag; a -DOCSTART- line and blank
# lines between sentences.
CONLL_2003 = """-DOCSTART- -X- -X- O

Guido NNP B-NP B-PER
van NNP I-NP I-PER
Rossum NNP I-NP I-PER
wrote VBD B-VP O
Python NNP B-NP O
in IN B-PP O
Amsterdam NNP B-NP B-LOC
. . O O

Monty NNP B-NP B-PER
visited VBD B-VP O
Zürich NNP B-NP B-LOC
\u200b SYM O O
and CC O O
Paris NNP B-NP B-LOC
. . O O
"""


def write(path, text):
  path.write_text(text, encoding="utf-8")
  return str(path)


@pytest.fixture
def train_file(tmp_path):
  return write(tmp_path / "train.txt", CONLL_2003)


@pytest.fixture(scope="module")
def vocabulary(vocab_file):
  return Vocabulary(vocab_file)


def test_reads_conll_2003_as_it_comes(train_file):
  sentences = tagging.read_sentences(train_file)
  assert len(sentences) == 2
  assert sentences.words[0] == ["Guido", "van", "Rossum", "wrote", "Python", "in", "Amsterdam",
                                "."]
  assert sentences.tags[0] == ["B-PER", "I-PER", "I-PER", "O", "O", "O", "B-LOC", "O"]
  assert sentences.words[1][2:4] == ["Zürich", "\u200b"]
  train, dev, tags = tagging.read_tagging_task(train_file, train_file)
  assert tags == ["B-LOC", "B-PER", "I-PER", "O"]


def test_tab_separated_two_columns_read_the_same(tmp_path, train_file):
  lines = []
  for line in CONLL_2003.splitlines():
    fields = line.split()
    lines.append(f"{fields[0]}\t{fields[-1]}" if fields else "")
  tabbed = write(tmp_path / "tabbed.tsv", "\r\n".join(lines) + "\r\n")
  spaced = tagging.read_sentences(train_file)
  assert tagging.read_sentences(tabbed) == tagging.Sentences(tabbed, spaced.words, spaced.tags)


def test_a_tab_separated_word_may_hold_spaces(tmp_path):
  path = write(tmp_path / "spaces.tsv", "New York\tB-LOC\nis\tO\n\n")
  assert tagging.read_sentences(path).words == [["New York", "is"]]


@pytest.mark.parametrize("text, message", [
    ("Guido B-PER\nvan\n", ":2: 'van' has no tag"),
    ("Guido B-PER\nvan X-PER\n", ":2: tag 'X-PER' is not in BIO form"),
    ("Guido B-\n", ":1: tag 'B-' is not in BIO form"),
    ("Guido E-PER\n", ":1: tag 'E-PER' is not in BIO form"),
    ("-DOCSTART- -X- O\n\n\n", "has no tagged sentence"),
    ("", "has no tagged sentence"),
])
def test_a_bad_file_is_one_user_error_naming_the_line(tmp_path, text, message):
  path = write(tmp_path / "bad.txt", text)
  with pytest.raises(UserError, match=message) as error:
    tagging.read_sentences(path)
  assert str(error.value).startswith(path)


def test_task_errors(tmp_path, train_file):
  dev = write(tmp_path / "dev.txt", "Oslo B-LOC\nFjord I-LOC\nand O\nMary B-PER\nSue B-ORG\n")
  with pytest.raises(UserError, match="dev.txt has tags the training file has not: "
                     "'B-ORG', 'I-LOC'"):
    tagging.read_tagging_task(train_file, dev)
  single = write(tmp_path / "single.txt", "a O\nb O\n")
  with pytest.raises(UserError, match="has the single tag 'O'"):
    tagging.read_tagging_task(single, single)
  with pytest.raises(UserError, match="file not found: .*nowhere.txt"):
    tagging.read_tagging_task(train_file, str(tmp_path / "nowhere.txt"))
  with pytest.raises(UserError, match="no file given: --dev_file"):
    tagging.read_tagging_task(train_file, "")


def pieces_of(vocabulary, word):
  return vocabulary.tokenizer(True).tokenize(tf.constant([word]))[0].numpy().tolist()


def test_each_word_is_labelled_on_its_first_piece(train_file, vocabulary):
  sentences = tagging.read_sentences(train_file)
  tags = ["B-LOC", "B-PER", "I-PER", "O"]
  tagged = tagging.tagging_features(sentences, tags, vocabulary, lower_case=True, seq_length=40)
  words = [pieces_of(vocabulary, word) for word in sentences.words[0]]
  assert [len(w) for w in words[:3]] == [1, 3, 6]  # guido, v ##a ##n, r ##o ##s ##s ##u ##m
  expected_ids = [vocabulary.cls_id] + sum(words, []) + [vocabulary.sep_id]
  length = len(expected_ids)
  assert tagged.features["token_ids"][0].tolist() == expected_ids + [0] * (40 - length)
  assert tagged.features["padding_mask"][0].tolist() == [1] * length + [0] * (40 - length)
  assert tagged.features["segment_ids"].max() == 0
  starts = np.cumsum([1] + [len(w) for w in words[:-1]])
  assert tagged.first_pieces[0].tolist() == starts.tolist()
  expected_labels = np.full(40, -100)
  expected_labels[starts] = [tags.index(t) for t in sentences.tags[0]]
  assert tagged.labels[0].tolist() == expected_labels.tolist()
  assert tagged.labels[0, :3].tolist() == [-100, 1, 2]  # [CLS], Guido (B-PER), van (I-PER)
  assert tagged.labels[0, 3:5].tolist() == [-100, -100]  # ##a ##n: not in the loss
  # The zero-width space is a word the tokenizer makes nothing of: no piece, no label.
  assert tagged.first_pieces[1][3] == -1
  assert tagged.words_cut == 0


def test_predictions_read_back_one_tag_per_word(train_file, vocabulary):
  sentences = tagging.read_sentences(train_file)
  tags = ["B-LOC", "B-PER", "I-PER", "O"]
  tagged = tagging.tagging_features(sentences, tags, vocabulary, lower_case=True, seq_length=40)
  # A prediction that is right on first pieces and wrong everywhere else reads back right.
  predicted = np.where(tagged.labels >= 0, tagged.labels, tags.index("B-PER"))
  assert tagging.word_tags(predicted, tagged.first_pieces, tags) == sentences.tags
  scores = metrics.entity_scores(sentences.tags, tagging.word_tags(
      predicted, tagged.first_pieces, tags))
  assert scores["f1"] == 1.0 and scores["token_accuracy"] == 1.0


def test_a_long_sentence_is_cut_and_its_last_words_read_back_as_outside(train_file, vocabulary):
  sentences = tagging.read_sentences(train_file)
  tags = ["B-LOC", "B-PER", "I-PER", "O"]
  # [CLS] guido v ##a ##n r ##o ##s [SEP]: Rossum keeps its first three pieces.
  tagged = tagging.tagging_features(sentences, tags, vocabulary, lower_case=True, seq_length=9)
  assert tagged.first_pieces[0].tolist() == [1, 2, 5, -1, -1, -1, -1, -1]
  assert tagged.features["token_ids"][0, -1] == vocabulary.sep_id
  assert tagged.features["padding_mask"][0].tolist() == [1] * 9
  # "visited" fills the second sentence: Zürich, and, Paris and "." are cut, the zero-width
  # space has no piece to cut.
  assert tagged.first_pieces[1].tolist() == [1, 2, -1, -1, -1, -1, -1]
  assert tagged.words_cut == 5 + 4
  predicted = np.where(tagged.labels >= 0, tagged.labels, 0)
  words = tagging.word_tags(predicted, tagged.first_pieces, tags)
  assert words[0] == ["B-PER", "I-PER", "I-PER", "O", "O", "O", "O", "O"]


def test_dataset_batches(train_file, vocabulary):
  sentences = tagging.read_sentences(train_file)
  tagged = tagging.tagging_features(sentences, ["B-LOC", "B-PER", "I-PER", "O"], vocabulary,
                                    lower_case=True, seq_length=16)
  data = batches(tagged.features, tagged.labels, batch_size=2)
  features, labels = next(iter(data))
  assert sorted(features) == ["padding_mask", "segment_ids", "token_ids"]
  assert features["token_ids"].shape == labels.shape == (2, 16)
  assert labels.dtype == tf.int32

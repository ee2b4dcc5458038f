"""`bert_tf.pretraining_dataset`: corpus files to the batches `model.fit` takes (docs/design.md)."""

import collections

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.data.pipeline import PipelineConfig
from bert_tf.data.tokenization import Vocabulary
from bert_tf.data.vocabulary_learner import build_vocabulary
from bert_tf.errors import UserError

BATCH, SEQ, PREDICTIONS = 8, 64, 10
# Smaller shuffle buffers than the defaults keep the first batch cheap on a small corpus.
FAST = dict(document_shuffle_buffer=100, example_shuffle_buffer=200)


def _dataset(corpus_pattern, vocab_file, data_dir, **kwargs):
  options = dict(seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, batch_size=BATCH,
                 data_dir=data_dir, **FAST)
  options.update(kwargs)
  return bert_tf.pretraining_dataset(corpus_pattern, vocab_file, **options)


def _numpy(element):
  return tf.nest.map_structure(lambda t: t.numpy(), element)


def _one_pass(dataset):
  """All examples of a finite dataset, batches concatenated."""
  batches = [_numpy(element) for element in dataset]
  return tf.nest.map_structure(lambda *arrays: np.concatenate(arrays), *batches)


def _restored(features, labels, weights):
  """token_ids with the masked positions given back their original ids (the MLM labels)."""
  token_ids = features["token_ids"].copy()
  rows, slots = np.nonzero(weights["mlm"])
  token_ids[rows, features["masked_positions"][rows, slots]] = labels["mlm"][rows, slots]
  return token_ids


def _sequences(features, labels, weights):
  """The restored examples as tuples of their real token ids."""
  token_ids = _restored(features, labels, weights)
  lengths = features["padding_mask"].sum(axis=1)
  return [tuple(row[:n].tolist()) for row, n in zip(token_ids, lengths)]


@pytest.fixture(scope="module")
def vocabulary(vocab_file):
  return Vocabulary(vocab_file)


@pytest.fixture(scope="module")
def one_epoch(corpus_pattern, vocab_file, data_dir):
  """One pass over the built-in corpus, NSP and MLM, 64 examples a batch."""
  return _one_pass(_dataset(corpus_pattern, vocab_file, data_dir, batch_size=64, repeat=False,
                            with_pairs=True))


# Shapes and types (docs/design.md#features-and-labels)

@pytest.fixture(scope="module")
def seed7(corpus_pattern, vocab_file, data_dir):
  """The element spec and first three batches of the training stream with seed 7."""
  dataset = _dataset(corpus_pattern, vocab_file, data_dir, seed=7)
  return dataset.element_spec, [_numpy(element) for element in dataset.take(3)]


def test_element_spec(seed7):
  (features, labels, weights), batches = seed7
  assert set(features) == {"token_ids", "segment_ids", "padding_mask", "masked_positions"}
  assert set(labels) == {"mlm", "nsp"} and set(weights) == {"mlm", "nsp"}
  expected = {
      "token_ids": ([BATCH, SEQ], tf.int32), "segment_ids": ([BATCH, SEQ], tf.int32),
      "padding_mask": ([BATCH, SEQ], tf.int32),
      "masked_positions": ([BATCH, PREDICTIONS], tf.int32)}
  for name, (shape, dtype) in expected.items():
    assert features[name].shape.as_list() == shape and features[name].dtype == dtype, name
  assert labels["mlm"].shape.as_list() == [BATCH, PREDICTIONS] and labels["mlm"].dtype == tf.int32
  assert labels["nsp"].shape.as_list() == [BATCH] and labels["nsp"].dtype == tf.int32
  assert weights["mlm"].shape.as_list() == [BATCH, PREDICTIONS]
  assert weights["mlm"].dtype == tf.float32
  assert weights["nsp"].shape.as_list() == [BATCH] and weights["nsp"].dtype == tf.float32

  # The arrays themselves, not only the spec.
  features, labels, weights = batches[0]
  shapes = {name: array.shape for name, array in features.items()}
  assert shapes == {"token_ids": (BATCH, SEQ), "segment_ids": (BATCH, SEQ),
                    "padding_mask": (BATCH, SEQ), "masked_positions": (BATCH, PREDICTIONS)}
  assert labels["mlm"].shape == weights["mlm"].shape == (BATCH, PREDICTIONS)
  assert labels["nsp"].shape == (BATCH,) and weights["nsp"].tolist() == [1.0] * BATCH


def _same(first, second):
  flat_first, flat_second = tf.nest.flatten(first), tf.nest.flatten(second)
  return len(flat_first) == len(flat_second) and all(
      a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(flat_first, flat_second))


def test_same_seed_same_batches(seed7, vocab_file, data_dir):
  # A second dataset, named by `builtin` and given a Vocabulary object: the same corpus and
  # vocabulary, so the same batches bit for bit.
  _, first = seed7
  again = _dataset("builtin", Vocabulary(vocab_file), data_dir, seed=7)
  assert _same(first, [_numpy(element) for element in again.take(3)])


def test_other_seed_other_batches(seed7, corpus_pattern, vocab_file, data_dir):
  _, first = seed7
  other = [_numpy(element) for element in _dataset(
      corpus_pattern, vocab_file, data_dir, seed=8).take(3)]
  for batch, other_batch in zip(first, other):
    assert not np.array_equal(batch[0]["token_ids"], other_batch[0]["token_ids"])


# Contents

def test_examples_are_cls_a_sep_b_sep(one_epoch, vocabulary):
  features, labels, weights, _ = one_epoch
  token_ids = _restored(features, labels, weights)
  assert len(token_ids) > 1000
  for row in range(len(token_ids)):
    length = features["padding_mask"][row].sum()
    assert features["padding_mask"][row].tolist() == [1] * length + [0] * (SEQ - length)
    tokens = token_ids[row]
    assert tokens[0] == vocabulary.cls_id
    separators = np.nonzero(tokens == vocabulary.sep_id)[0].tolist()
    assert len(separators) == 2 and separators[1] == length - 1
    assert 1 < separators[0] < length - 2  # A and B are not empty.
    assert (tokens[length:] == vocabulary.pad_id).all()
    assert not np.isin(tokens[1:length], [vocabulary.cls_id, vocabulary.pad_id]).any()
    segment = features["segment_ids"][row]
    assert segment.tolist() == ([0] * (separators[0] + 1)
                                + [1] * (length - separators[0] - 1) + [0] * (SEQ - length))


def test_ids_in_vocabulary(one_epoch, vocabulary):
  features, labels, _, _ = one_epoch
  for ids in (features["token_ids"], labels["mlm"]):
    assert ids.min() >= 0 and ids.max() < len(vocabulary)


def test_masking_in_examples(one_epoch, vocabulary):
  features, labels, weights, _ = one_epoch
  lengths = features["padding_mask"].sum(axis=1)
  counts = weights["mlm"].sum(axis=1)
  expected = [min(PREDICTIONS, max(1, round(n * 0.15))) for n in lengths]
  assert counts.tolist() == expected
  original = _restored(features, labels, weights)
  replacement = set(vocabulary.replacement_ids())
  mask = random = 0
  for row in range(len(lengths)):
    count = int(counts[row])
    positions = features["masked_positions"][row]
    assert (np.diff(positions[:count]) > 0).all() and (positions[count:] == 0).all()
    assert (labels["mlm"][row, count:] == 0).all()
    assert not np.isin(labels["mlm"][row, :count],
                       [vocabulary.cls_id, vocabulary.sep_id, vocabulary.pad_id]).any()
    new = features["token_ids"][row, positions[:count]]
    changed = new != labels["mlm"][row, :count]
    assert all(t == vocabulary.mask_id or t in replacement for t in new[changed])
    mask += (new == vocabulary.mask_id).sum()
    random += (changed & (new != vocabulary.mask_id)).sum()
    unmasked = np.ones(SEQ, bool)
    unmasked[positions[:count]] = False
    assert (features["token_ids"][row, unmasked] == original[row, unmasked]).all()
  # About 15,000 predictions: sd of the [MASK] share 0.0033; tolerance 0.02. A random token
  # equal to the original one counts as kept, hence the random share's lower bound.
  n = counts.sum()
  assert abs(mask / n - 0.8) < 0.02 and 0.08 < random / n < 0.12


def test_nsp_labels_and_pairs(one_epoch):
  features, labels, weights, pairs = one_epoch
  assert (labels["nsp"] == pairs["is_next"]).all()
  assert (weights["nsp"] == 1.0).all()
  is_next = labels["nsp"] == 1
  same_document = pairs["document_a"] == pairs["document_b"]
  assert same_document[is_next].all() and not same_document[~is_next].any()
  # About 1,600 examples: sd of a fair share 0.0125; tolerance 0.05 (4 sd).
  assert abs(is_next.mean() - 0.5) < 0.05, is_next.mean()


@pytest.mark.e2e
def test_mlm_only_whole_word_masking(corpus_pattern, data_dir, tmp_path):
  # A small vocabulary, so that many words are split into pieces (the shared one of 8,000
  # holds almost every word of this corpus whole).
  vocab_file = str(tmp_path / "vocab.txt")
  build_vocabulary(corpus_pattern, vocab_file, vocab_size=800)
  vocabulary = Vocabulary(vocab_file)
  continuation = np.array(vocabulary.continuation_flags())
  dataset = _dataset(corpus_pattern, vocab_file, data_dir, nsp=False, whole_word_masking=True)
  pieces = 0
  for element in dataset.take(4):
    features, labels, weights = _numpy(element)
    token_ids = _restored(features, labels, weights)
    lengths = features["padding_mask"].sum(axis=1)
    # MLM only: [CLS] A [SEP], all segment 0, and the drawn NSP label weighs nothing.
    assert (features["segment_ids"] == 0).all()
    assert (weights["nsp"] == 0).all() and (labels["nsp"] >= 0).all()
    for row, length in zip(token_ids, lengths):
      assert row[0] == vocabulary.cls_id
      assert np.nonzero(row == vocabulary.sep_id)[0].tolist() == [length - 1]
    # Whole words: a chosen `##` piece's neighbours in its word are chosen too.
    for row in range(BATCH):
      count = int(weights["mlm"][row].sum())
      chosen = set(features["masked_positions"][row, :count].tolist())
      for position in chosen:
        if continuation[token_ids[row, position]] and position > 1:
          assert position - 1 in chosen
          pieces += 1
        if continuation[token_ids[row, position + 1]]:
          assert position + 1 in chosen
  assert pieces > 0


# Sharding

def _write_corpus(directory, files=4, documents=30):
  """Documents numbered by three digit words, one to three sentences, about 14 tokens."""
  digits = "zero one two three four five six seven eight nine".split()
  number = 0
  for file in range(files):
    texts = []
    for _ in range(documents):
      name = " ".join(digits[int(d)] for d in f"{number:03d}")
      sentences = [f"document {name} begins."] + ["the cat sat."] * (number % 3)
      texts.append("\n".join(sentences))
      number += 1
    (directory / f"part-{file}.txt").write_text("\n\n".join(texts) + "\n")
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "document", "begins", "the", "cat",
            "sat", "."] + digits
  (directory / "vocab.txt").write_text("".join(t + "\n" for t in tokens))
  return str(directory / "part-*.txt"), str(directory / "vocab.txt"), number


def _expected_examples(vocab_file, documents):
  """[CLS] document [SEP] as ids: the vocabulary is of whole words, one id each."""
  ids = {t: i for i, t in enumerate(open(vocab_file).read().split())}
  digits = "zero one two three four five six seven eight nine".split()
  examples = collections.Counter()
  for number in range(documents):
    words = ["document"] + [digits[int(d)] for d in f"{number:03d}"] + ["begins", "."]
    words += ["the", "cat", "sat", "."] * (number % 3)
    examples[tuple([ids["[CLS]"]] + [ids[w] for w in words] + [ids["[SEP]"]])] += 1
  return examples


def _examples_seen(pattern, vocab_file, **kwargs):
  # MLM only and documents shorter than a sequence: each example is one whole document.
  dataset = bert_tf.pretraining_dataset(
      pattern, vocab_file, seq_length=32, max_predictions_per_seq=5, batch_size=16,
      repeat=False, nsp=False, short_seq_prob=0.0, **kwargs)
  return collections.Counter(_sequences(*_one_pass(dataset)))


@pytest.mark.e2e
@pytest.mark.parametrize("files", [4, 1])
def test_shards_are_disjoint_and_cover_the_corpus(tmp_path, files):
  # Two shards of four files split the files; of one file, its documents. Either way each
  # document is read by exactly one shard.
  pattern, vocab_file, documents = _write_corpus(tmp_path, files=files,
                                                 documents=120 // files)
  expected = _expected_examples(vocab_file, documents)
  assert len(expected) == documents == 120
  shards = [_examples_seen(pattern, vocab_file, num_shards=2, shard_index=i) for i in range(2)]
  assert all(len(shard) > 20 for shard in shards)
  assert shards[0] + shards[1] == expected


def test_epochs_mask_afresh(tmp_path):
  # One file of 64 documents, no shuffling, windows of 32 documents: each epoch is two
  # windows of the same documents in the same order, MLM only, one example per document.
  # The examples are the same, their masking is not.
  pattern, vocab_file, documents = _write_corpus(tmp_path, files=1, documents=64)
  dataset = bert_tf.pretraining_dataset(
      pattern, vocab_file, seq_length=32, max_predictions_per_seq=5, batch_size=64,
      nsp=False, short_seq_prob=0.0, document_shuffle_buffer=1, example_shuffle_buffer=1)
  first, second = (_numpy(element) for element in dataset.take(2))
  assert _sequences(*first) == _sequences(*second)
  assert len(set(_sequences(*first))) == documents
  assert not np.array_equal(first[0]["masked_positions"], second[0]["masked_positions"])
  assert not np.array_equal(first[0]["token_ids"], second[0]["token_ids"])


# Configuration errors

def test_too_few_predictions(corpus_pattern, vocab_file, data_dir):
  # ceil(0.15 * 128) = 20 predictions are needed; ceil(0.15 * 64) = 10.
  with pytest.raises(UserError, match="max_predictions_per_seq 19"):
    _dataset(corpus_pattern, vocab_file, data_dir, seq_length=128, max_predictions_per_seq=19)
  with pytest.raises(UserError, match="max_predictions_per_seq 9"):
    _dataset(corpus_pattern, vocab_file, data_dir, max_predictions_per_seq=9)
  with pytest.raises(UserError, match="max_predictions_per_seq 12"):
    _dataset(corpus_pattern, vocab_file, data_dir, max_predictions_per_seq=12,
             masked_lm_prob=0.2)
  PipelineConfig(seq_length=128, max_predictions_per_seq=20).check()
  PipelineConfig(seq_length=64, max_predictions_per_seq=10).check()


def test_other_configuration_errors(corpus_pattern, vocab_file, data_dir, tmp_path):
  bad = [dict(seq_length=4), dict(masked_lm_prob=0.0), dict(short_seq_prob=1.5),
         dict(mask_token_rate=0.9, random_token_rate=0.2), dict(input_format="xml")]
  for config in bad:
    with pytest.raises(UserError):
      _dataset(corpus_pattern, vocab_file, data_dir, **config)
  with pytest.raises(UserError, match="no file matches"):
    _dataset(str(tmp_path / "missing-*.txt"), vocab_file, data_dir)
  with pytest.raises(UserError, match="not found"):
    _dataset(corpus_pattern, str(tmp_path / "vocab.txt"), data_dir)

"""The hold-out split (--eval_fraction) on the built-in corpus: a document is held out or trained
on by its text alone, and no held-out text reaches the training stream."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import corpus, holdout, pieces
from bert_tf.data.pipeline import pretraining_dataset
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError

FRACTION = 0.3


def whole_files(files):
  """Each file as one range, in the order given."""
  return [pieces.FileRange(path, 0, size, size)
          for path, size in zip(files, pieces.file_sizes(files))]


def corpus_documents(corpus_pattern):
  """Every document of the corpus as its text (sentences joined by newlines)."""
  texts = []
  for path in corpus.list_files(corpus_pattern):
    documents = corpus.documents_from_text(tf.io.read_file(path), "sentence_per_line")
    texts += [t.decode() for t in
              tf.strings.reduce_join(documents, axis=1, separator="\n").numpy()]
  return texts


def split_by_holdout(documents: tf.data.Dataset, held_out: bool) -> set[str]:
  kept = holdout.Holdout(FRACTION, held_out)(documents)
  return {tf.strings.reduce_join(d, separator="\n").numpy().decode() for d in kept}


def test_split_is_a_partition_decided_by_the_text(corpus_pattern):
  texts = corpus_documents(corpus_pattern)
  files = corpus.list_files(corpus_pattern)
  in_order = corpus.read_ranges(whole_files(files), "sentence_per_line")
  # Another shard layout and order: files reversed, documents shuffled.
  reordered = corpus.read_ranges(whole_files(files[::-1]), "sentence_per_line").shuffle(
      500, seed=3)
  held_out = split_by_holdout(in_order, held_out=True)
  trained = split_by_holdout(in_order, held_out=False)
  assert held_out | trained == set(texts) and not held_out & trained
  assert split_by_holdout(reordered, held_out=True) == held_out
  assert split_by_holdout(reordered, held_out=False) == trained
  # 79 documents, each held out with chance 0.3: 23.7 expected, standard deviation 4.1.
  assert abs(len(held_out) - FRACTION * len(texts)) < 3 * 4.1, len(held_out)


def original_tokens(batch) -> list[np.ndarray]:
  """Each example's tokens before masking (masked positions given back their labels)."""
  features, labels, weights = batch
  token_ids = features["token_ids"].numpy().copy()
  positions = features["masked_positions"].numpy()
  real = weights["mlm"].numpy() > 0
  for row in range(token_ids.shape[0]):
    token_ids[row, positions[row][real[row]]] = labels["mlm"].numpy()[row][real[row]]
  lengths = features["padding_mask"].numpy().sum(axis=1)
  return [token_ids[row, :lengths[row]] for row in range(token_ids.shape[0])]


def stream_tokens(corpus_pattern, vocab_file, held_out: bool) -> set[int]:
  dataset = pretraining_dataset(
      corpus_pattern, vocab_file, seq_length=64, max_predictions_per_seq=10, batch_size=64,
      seed=1, repeat=False, holdout=holdout.Holdout(FRACTION, held_out))
  return {int(t) for batch in dataset for example in original_tokens(batch) for t in example}


@pytest.mark.e2e
def test_held_out_text_never_reaches_the_training_stream(corpus_pattern, vocab_file):
  texts = corpus_documents(corpus_pattern)
  is_held_out = holdout.held_out_mask(tf.constant(texts), FRACTION).numpy()
  tokenizer = Vocabulary(vocab_file).tokenizer(True)
  document_tokens = [set(tokenizer.tokenize([t]).flat_values.numpy().tolist()) for t in texts]
  held_out_tokens = set().union(*(t for t, h in zip(document_tokens, is_held_out) if h))
  trained_tokens = set().union(*(t for t, h in zip(document_tokens, is_held_out) if not h))
  only_held_out = held_out_tokens - trained_tokens  # words of held-out documents only
  only_trained = trained_tokens - held_out_tokens
  assert len(only_held_out) > 50 and len(only_trained) > 50  # the test has teeth

  training_stream = stream_tokens(corpus_pattern, vocab_file, held_out=False)
  eval_stream = stream_tokens(corpus_pattern, vocab_file, held_out=True)
  assert not training_stream & only_held_out
  assert not eval_stream & only_trained
  # Both streams do carry their own documents' words.
  assert len(training_stream & only_trained) > 0.5 * len(only_trained)
  assert len(eval_stream & only_held_out) > 0.5 * len(only_held_out)


def test_check_split_needs_documents_on_both_sides(corpus_pattern):
  files = corpus.list_files(corpus_pattern)
  holdout.check_split(files, "sentence_per_line", FRACTION, needed=2)
  with pytest.raises(UserError, match="holds out 0 of the corpus's 79 documents"):
    holdout.check_split(files, "sentence_per_line", 1e-9, needed=2)

"""Golden batches: `pretraining_dataset`'s output, bit for bit, for a fixed corpus and seed.

The pairing, masking and pipeline code may be rewritten for readers; what they make must not
change. The corpus and vocabulary are made here from fixed rules (Python's `random()` stream,
which Python keeps the same across versions), not from the built-in corpus, whose text changes
with the Python version. Each setting below is hashed batch by batch, every tensor's dtype,
shape and bytes, against tests/data/golden_batches.json.

When the output is meant to change, rewrite the file with `python tests/test_golden_batch.py`
and say why in the commit.
"""

import hashlib
import json
import os
import random
import sys
import tempfile

import pytest
import tensorflow as tf

import bert_tf
from bert_tf.data import stream_position

GOLDEN = os.path.join(os.path.dirname(__file__), "data", "golden_batches.json")
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "so", "vi", "de", "pu"]
# Whole words of two syllables in the vocabulary; longer words split into `##` pieces.
TWO_SYLLABLE_WORDS = ["kalo", "mine", "ruta", "sovi", "depu", "lomi", "neru", "tasa"]
PUNCTUATION = [".", ",", "!", "?"]
SENTENCE_ENDS = ".!?"

BASE = dict(seq_length=48, max_predictions_per_seq=8, batch_size=16, seed=3,
            documents_per_window=6, document_shuffle_buffer=40, example_shuffle_buffer=80,
            piece_bytes=8 << 10)
# name: (corpus layout, options, batches hashed; None for one whole pass). Each setting
# changes several options at once, to keep the test short.
SETTINGS = {
    "nsp_one_pass_with_pairs": ("sentence_per_line", dict(repeat=False, with_pairs=True), None),
    "whole_word_masking_other_rates": ("sentence_per_line", dict(
        whole_word_masking=True, seq_length=32, max_predictions_per_seq=12, masked_lm_prob=0.3,
        mask_token_rate=0.6, random_token_rate=0.3, short_seq_prob=0.5, seed=11), 3),
    "nonsp_paragraph_per_line": ("paragraph_per_line", dict(
        nsp=False, input_format="paragraph_per_line"), 3),
    "second_shard_resumed": ("sentence_per_line", dict(
        num_shards=2, shard_index=1, with_positions=True,
        start_position=stream_position.encode(1, 1, 7)), 3),
}


def _word(rng: random.Random) -> str:
  draw = rng.random()
  if draw < 0.05:
    return "xq" + SYLLABLES[int(rng.random() * len(SYLLABLES))]  # out of vocabulary: [UNK]
  if draw < 0.35:
    return TWO_SYLLABLE_WORDS[int(rng.random() * len(TWO_SYLLABLE_WORDS))]
  return "".join(SYLLABLES[int(rng.random() * len(SYLLABLES))]
                 for _ in range(1 + int(rng.random() * 4)))


def _sentence(rng: random.Random) -> str:
  length = 1 + int(rng.random() * 25) if rng.random() > 0.03 else 120
  words = [_word(rng) for _ in range(length)]
  words = [word + "," if rng.random() < 0.1 else word for word in words]
  return " ".join(words).capitalize() + SENTENCE_ENDS[int(rng.random() * len(SENTENCE_ENDS))]


def _documents(rng: random.Random) -> list[list[str]]:
  """About 240 documents of 1 to 12 sentences (some of one, some with a very long one)."""
  return [[_sentence(rng) for _ in range(1 + int(rng.random() ** 2 * 12))] for _ in range(240)]


def write_corpus(directory: str) -> dict:
  """Writes the vocabulary and the corpus in both layouts; returns their paths."""
  vocabulary = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]"] + PUNCTUATION
                + SYLLABLES + TWO_SYLLABLE_WORDS + ["##" + s for s in SYLLABLES])
  paths = {"vocab_file": os.path.join(directory, "vocab.txt")}
  with open(paths["vocab_file"], "w", encoding="utf-8") as f:
    f.write("\n".join(vocabulary) + "\n")
  documents = _documents(random.Random(0))
  for layout, between_sentences, between_documents in (
      ("sentence_per_line", "\n", "\n\n"), ("paragraph_per_line", " ", "\n")):
    os.makedirs(os.path.join(directory, layout))
    for part in range(3):
      with open(os.path.join(directory, layout, f"part-{part}.txt"), "w",
                encoding="utf-8") as f:
        f.write(between_documents.join(between_sentences.join(document)
                                       for document in documents[part::3]) + "\n")
    paths[layout] = os.path.join(directory, layout, "*.txt")
  return paths


def _digest(tensor: tf.Tensor) -> str:
  array = tensor.numpy()
  hashed = hashlib.sha256(f"{array.dtype} {array.shape}".encode())
  hashed.update(array.tobytes())
  return hashed.hexdigest()[:24]


def _batch_digests(batch) -> dict:
  """{"0/token_ids": digest, ...}: the element's position, then the feature's name."""
  return {f"{index}/{name}": _digest(tensor)
          for index, part in enumerate(batch) for name, tensor in sorted(part.items())}


def golden_digests(directory: str) -> dict:
  """{setting: [digests of each batch]} for every setting of SETTINGS."""
  paths = write_corpus(directory)
  digests = {}
  for name, (layout, options, num_batches) in SETTINGS.items():
    dataset = bert_tf.pretraining_dataset(
        paths[layout], paths["vocab_file"], data_dir=directory, **{**BASE, **options})
    if num_batches is not None:
      dataset = dataset.take(num_batches)
    digests[name] = [_batch_digests(batch) for batch in dataset]
  return digests


@pytest.fixture(scope="module")
def digests(tmp_path_factory):
  return golden_digests(str(tmp_path_factory.mktemp("golden")))


@pytest.fixture(scope="module")
def golden():
  with open(GOLDEN, encoding="utf-8") as f:
    return json.load(f)


def test_golden_covers_every_setting(golden):
  assert sorted(golden) == sorted(SETTINGS)
  for name, (_, _, num_batches) in SETTINGS.items():
    assert len(golden[name]) == (num_batches or len(golden[name])) > 0, name
  # The one pass holds the whole corpus: many batches, the last one short.
  assert len(golden["nsp_one_pass_with_pairs"]) > 20


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_batches_equal_the_golden_ones(name, digests, golden):
  assert len(digests[name]) == len(golden[name])
  for index, (made, expected) in enumerate(zip(digests[name], golden[name])):
    assert made == expected, f"{name}: batch {index} differs"


def test_the_settings_make_different_batches(digests):
  """A golden that ignored an option would not tell these settings apart."""
  first_batches = {name: digests[name][0]["0/token_ids"] for name in SETTINGS}
  assert len(set(first_batches.values())) == len(SETTINGS)
  assert {"0/stream_position"} < set(digests["second_shard_resumed"][0])
  assert {"3/window", "3/document_a", "3/is_short"} < set(
      digests["nsp_one_pass_with_pairs"][0])


def test_a_token_cache_gives_the_same_epochs(tmp_path):
  """Tokenized once and cached, later epochs pair and mask the cached tokens: the same
  batches as tokenizing every epoch (the first epoch writes the cache, most of the second
  reads it)."""
  paths = write_corpus(str(tmp_path))
  (tmp_path / "cache").mkdir()

  def stream(**options):
    dataset = bert_tf.pretraining_dataset(
        paths["sentence_per_line"], paths["vocab_file"], data_dir=str(tmp_path),
        with_positions=True, **{**BASE, **options})
    batches = list(dataset.take(50))
    assert stream_position.decode(int(batches[-1][0]["stream_position"][-1]))[0] == 1
    return [_batch_digests(batch) for batch in batches]

  assert stream(token_cache=str(tmp_path / "cache")) == stream()
  assert any(name.startswith("piece-") for name in os.listdir(tmp_path / "cache"))


if __name__ == "__main__":
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  with tempfile.TemporaryDirectory() as temporary:
    result = golden_digests(temporary)
  os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
  with open(GOLDEN, "w", encoding="utf-8") as f:
    json.dump(result, f, indent=1, sort_keys=True)
    f.write("\n")
  print(f"wrote {GOLDEN}: " + ", ".join(f"{k} {len(v)}" for k, v in result.items()),
        file=sys.stderr)

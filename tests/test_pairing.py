"""NSP pairs as original BERT's create_instances_from_document (docs/design.md#pairing)."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import pairing

_WINDOW = tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2)
_FIRST_ID = 100  # Token id = _FIRST_ID + the token's index in the window's flat token list.


def _truncate_seq_pair(len_a, len_b, max_num_tokens):
  """Original BERT's loop, on lengths: trims the longer segment, B on a tie."""
  while len_a + len_b > max_num_tokens:
    if len_a > len_b:
      len_a -= 1
    else:
      len_b -= 1
  return len_a, len_b


def _window(sentence_lengths):
  """A window of documents given as lists of sentence lengths; token ids count up."""
  documents, next_id = [], _FIRST_ID
  for lengths in sentence_lengths:
    document = []
    for length in lengths:
      document.append(list(range(next_id, next_id + length)))
      next_id += length
    documents.append(document)
  return tf.ragged.constant(documents, dtype=tf.int32, ragged_rank=2)


def _random_window(rng, max_sentences=8, max_tokens=15, documents=(6, 16)):
  return [[int(n) for n in rng.integers(1, max_tokens + 1, rng.integers(1, max_sentences + 1))]
          for _ in range(rng.integers(*documents))]


class _Layout:
  """Where each token of a window is: its document, and the window's sentence boundaries."""

  def __init__(self, sentence_lengths):
    self.document_of = np.array(
        [d for d, lengths in enumerate(sentence_lengths) for _ in range(sum(lengths))])
    ends = np.cumsum([n for lengths in sentence_lengths for n in lengths])
    self.boundaries = set(ends.tolist()) | {0}
    self.document_ends = {d: int(np.nonzero(self.document_of == d)[0][-1]) + 1
                          for d in range(len(sentence_lengths))}
    self.num_tokens = len(self.document_of)

  def inside(self, start, end, document):
    return start < end and all(self.document_of[start:end] == document)


_functions = {}


def _pairs_function(seq_length, short_seq_prob, nsp):
  key = (seq_length, short_seq_prob, nsp)
  if key not in _functions:
    @tf.function(input_signature=[_WINDOW, tf.TensorSpec([2], tf.int64)])
    def create(sentence_tokens, seed):
      return pairing.create_pairs(sentence_tokens, seed, seq_length=seq_length,
                                  short_seq_prob=short_seq_prob, nsp=nsp)
    _functions[key] = create
  return _functions[key]


def _pairs(sentence_lengths, seed, *, seq_length=32, short_seq_prob=0.1, nsp=True):
  create = _pairs_function(seq_length, short_seq_prob, nsp)
  pairs = create(_window(sentence_lengths), tf.constant(seed, tf.int64))
  return {name: getattr(pairs, name).numpy() for name in (
      "a_start", "a_end", "b_start", "b_end", "is_next", "document_a", "document_b",
      "is_short")}


# A window with documents of one to seven sentences, two documents of one sentence, an
# empty sentence inside a document, and one long sentence.
WINDOW = [[5, 3, 7, 2, 4], [6], [2, 2, 2, 9, 1, 3, 4], [8], [3, 0, 5], [4, 4], [1],
          [12, 3, 6, 2], [40, 2]]


# trimmed_lengths

@pytest.mark.parametrize("max_num_tokens", [1, 2, 5, 8, 13, 29, 61, 125])
def test_trimmed_lengths_match_truncate_seq_pair(max_num_tokens):
  lengths = list(itertools.product(range(41), repeat=2))
  len_a = tf.constant([a for a, _ in lengths], tf.int64)
  len_b = tf.constant([b for _, b in lengths], tf.int64)
  fit_a, fit_b = pairing.trimmed_lengths(len_a, len_b, tf.constant(max_num_tokens, tf.int64))
  got = list(zip(fit_a.numpy().tolist(), fit_b.numpy().tolist()))
  expected = [_truncate_seq_pair(a, b, max_num_tokens) for a, b in lengths]
  assert got == expected


def test_trimmed_lengths_python_ints():
  assert [int(x) for x in pairing.trimmed_lengths(30, 30, 29)] == [15, 14]
  assert [int(x) for x in pairing.trimmed_lengths(3, 30, 29)] == [3, 26]


# create_pairs: structure without trimming

@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_pairs_tile_the_window_without_trimming(seed):
  # seq_length 512 leaves room for any pair of these documents: no token is trimmed, so
  # every range is made of whole sentences. Short targets (short_seq_prob=1) vary the chunks.
  rng = np.random.default_rng(seed)
  lengths = _random_window(rng, max_sentences=20, max_tokens=12, documents=(4, 9))
  layout = _Layout(lengths)
  pairs = _pairs(lengths, [seed, 5], seq_length=512, short_seq_prob=1.0)
  covered = []
  for i in range(len(pairs["is_next"])):
    a_start, a_end, b_start, b_end = (int(pairs[k][i]) for k in (
        "a_start", "a_end", "b_start", "b_end"))
    document_a, document_b = int(pairs["document_a"][i]), int(pairs["document_b"][i])
    assert {a_start, a_end, b_start, b_end} <= layout.boundaries
    assert layout.inside(a_start, a_end, document_a)
    assert layout.inside(b_start, b_end, document_b)
    covered.append((a_start, a_end))
    if pairs["is_next"][i]:
      assert document_b == document_a
      assert b_start == a_end  # B is the rest of the chunk, right after A.
      covered.append((b_start, b_end))
    else:
      assert document_b != document_a
  # A and IsNext B ranges cover every token exactly once. (Instances come out in rounds, one
  # per document each, so they are sorted back into corpus order first.)
  assert [t for start, end in sorted(covered) for t in range(start, end)] == list(
      range(layout.num_tokens))
  assert pairs["is_short"].all()


def test_pairs_without_short_targets_take_the_rest_of_the_document():
  # With the whole document fitting the target, an IsNext chunk ends where its document ends.
  layout = _Layout(WINDOW)
  pairs = _pairs(WINDOW, [3, 4], seq_length=512, short_seq_prob=0.0)
  assert not pairs["is_short"].any()
  for i in np.nonzero(pairs["is_next"])[0]:
    assert pairs["b_end"][i] == layout.document_ends[pairs["document_a"][i]]


def test_mlm_only_chunks_tile_the_window():
  layout = _Layout(WINDOW)
  pairs = _pairs(WINDOW, [9, 9], seq_length=512, short_seq_prob=1.0, nsp=False)
  assert (pairs["b_start"] == pairs["b_end"]).all()
  assert (pairs["document_a"] == pairs["document_b"]).all()
  assert [t for start, end in zip(pairs["a_start"], pairs["a_end"])
          for t in range(start, end)] == list(range(layout.num_tokens))
  for start, end, document in zip(pairs["a_start"], pairs["a_end"], pairs["document_a"]):
    assert layout.inside(start, end, document)


# create_pairs: trimmed pairs

def _check_pairs(lengths, pairs, seq_length):
  layout = _Layout(lengths)
  len_a = pairs["a_end"] - pairs["a_start"]
  len_b = pairs["b_end"] - pairs["b_start"]
  assert len(len_a) > 0
  assert (len_a > 0).all() and (len_b > 0).all()
  assert (len_a + len_b <= seq_length - 3).all()
  is_next = pairs["is_next"].astype(bool)
  assert set(pairs["is_next"].tolist()) <= {0, 1}
  assert (pairs["document_a"][is_next] == pairs["document_b"][is_next]).all()
  assert (pairs["document_a"][~is_next] != pairs["document_b"][~is_next]).all()
  for i in range(len(len_a)):
    assert layout.inside(pairs["a_start"][i], pairs["a_end"][i], pairs["document_a"][i])
    assert layout.inside(pairs["b_start"][i], pairs["b_end"][i], pairs["document_b"][i])
    if is_next[i]:
      assert pairs["b_start"][i] >= pairs["a_end"][i]


@pytest.mark.parametrize("seq_length", [8, 16, 32])
def test_pairs_fit_and_come_from_the_right_documents(seq_length):
  for seed in range(5):
    pairs = _pairs(WINDOW, [seed, 11], seq_length=seq_length)
    _check_pairs(WINDOW, pairs, seq_length)


def test_random_windows_fit_and_come_from_the_right_documents():
  rng = np.random.default_rng(1)
  for window in range(20):
    lengths = _random_window(rng)
    _check_pairs(lengths, _pairs(lengths, [window, 0], short_seq_prob=0.3), 32)


def test_is_next_share_is_half():
  # About 11,000 instances from 150 windows of 32 documents (the pipeline's window) of one to
  # ten sentences, about 500 of them one-sentence documents, where original BERT's share falls
  # well below 0.5. The standard deviation of a fair share over n instances is
  # 0.5 / sqrt(n) = 0.0048; the tolerance, 0.02, is 4 of them.
  rng = np.random.default_rng(2)
  is_next = []
  one_sentence_documents = 0
  for window in range(150):
    lengths = _random_window(rng, max_sentences=10, documents=(32, 33))
    one_sentence_documents += sum(len(d) == 1 for d in lengths)
    is_next.append(_pairs(lengths, [window, 1])["is_next"])
  is_next = np.concatenate(is_next)
  assert len(is_next) > 10_000
  assert one_sentence_documents > 400
  assert abs(is_next.mean() - 0.5) < 0.02, is_next.mean()


def _short_document_windows(rng, sizes, windows):
  """`windows` windows of 32 documents whose sentence counts are drawn from `sizes`, of
  sentences of 1 to 40 tokens: at seq_length 64 some chunks end before their document does."""
  return [[[int(n) for n in rng.integers(1, 41, rng.choice(sizes))] for _ in range(32)]
          for _ in range(windows)]


@pytest.mark.parametrize("sizes", [[2], [3], [1, 2, 2, 3, 3]],
                         ids=["two_sentences", "three_sentences", "mixture"])
def test_is_next_share_is_half_on_short_documents(sizes):
  # Documents of two or three sentences, and a mixture of one to three, in windows of 32 (the
  # pipeline's window). A NotNext that puts back a lone last sentence makes a second, forced
  # one: without taking that into account the share was 0.32 on two-sentence documents, 0.47
  # on three-sentence ones and 0.43 on the mixture, where few free choices were left to pay
  # the forced NotNexts back. Over n > 6,000 instances the
  # binomial standard deviation of a fair share is 0.5 / sqrt(n) < 0.0065; instances are not
  # independent (a NotNext on a two-sentence document comes with a second one), which widens
  # it by about 1.25 (the per-document variance): under 0.0081. The tolerance, 0.025, is over
  # 3 of those.
  rng = np.random.default_rng(len(sizes) * 10 + sizes[0])
  is_next = np.concatenate([
      _pairs(lengths, [window, 12], seq_length=64)["is_next"]
      for window, lengths in enumerate(_short_document_windows(rng, sizes, 160))])
  assert len(is_next) > 6_000
  assert abs(is_next.mean() - 0.5) < 0.025, is_next.mean()


def test_forced_not_next_is_paid_back():
  # Four one-sentence documents can only be NotNext; document 4's first four free choices are
  # made IsNext to pay them back, so the window's IsNext share stays 1/2. Without the
  # payback it would be about 5/14 (~10 free choices per window besides the 4 forced). Over
  # 200 windows of ~14 instances the share's standard deviation is under 0.01: tolerance 0.03.
  lengths = [[5]] * 4 + [[3] * 30]
  is_next = []
  for seed in range(200):
    pairs = _pairs(lengths, [seed, 8], seq_length=16, short_seq_prob=0.0)
    assert sorted(pairs["document_a"][pairs["document_a"] < 4].tolist()) == [0, 1, 2, 3]
    assert not pairs["is_next"][pairs["document_a"] < 4].any()
    is_next.extend(pairs["is_next"].tolist())
  assert abs(np.mean(is_next) - 0.5) < 0.03, np.mean(is_next)


def test_not_next_document_is_uniform_among_the_others():
  # Document 0 of a 5-document window: NotNext B from documents 1-4 equally often.
  lengths = [[3, 3, 3, 3, 3, 3, 3, 3]] + [[4, 4]] * 4
  counts = np.zeros(5)
  for seed in range(300):
    pairs = _pairs(lengths, [seed, 2], seq_length=12)
    chosen = pairs["document_b"][(pairs["is_next"] == 0) & (pairs["document_a"] == 0)]
    counts += np.bincount(chosen, minlength=5)
  assert counts[0] == 0
  share = counts[1:] / counts.sum()
  # Binomial standard deviation of each share: sqrt(0.25 * 0.75 / n), n > 300: under 0.025.
  # (300 windows: document 0 makes about 4 instances a window, half of them NotNext.)
  assert counts.sum() > 300
  assert np.abs(share - 0.25).max() < 0.1, share


def test_trimming_takes_from_front_and_back_equally():
  # Sentences of 50 tokens, pairs into 29 tokens: A keeps 15, B 14 (B is trimmed on the tie).
  # A loses 35 tokens, a Binomial(35, 0.5) number of them from its front: mean 17.5,
  # standard deviation 2.96; B loses 36, mean 18, sd 3. The mean of n > 400 draws has a
  # standard deviation under 0.15: the tolerance, 0.75, is 5 of them.
  lengths = [[50, 50], [50, 50]]
  a_front, b_front = [], []
  for seed in range(200):
    pairs = _pairs(lengths, [seed, 3], seq_length=32, short_seq_prob=0.0)
    assert (pairs["a_end"] - pairs["a_start"] == 15).all()
    assert (pairs["b_end"] - pairs["b_start"] == 14).all()
    a_front.extend((pairs["a_start"] % 50).tolist())  # Tokens trimmed off the front.
    b_front.extend((pairs["b_start"] % 50).tolist())
  assert len(a_front) >= 400
  assert abs(np.mean(a_front) - 17.5) < 0.75 and abs(np.mean(b_front) - 18) < 0.75
  assert 2.4 < np.std(a_front) < 3.5 and 2.4 < np.std(b_front) < 3.5


def test_one_sentence_chunk_takes_the_next_sentence():
  # A long first sentence fills the target alone; the chunk still takes the next sentence,
  # so that the instance can be IsNext.
  # (Original BERT makes such a chunk NotNext every time.)
  # (Two sentences follow the chunk, so neither label leaves the document's last sentence
  # alone, and the window has no one-sentence document to pay for: the choice is a free draw.)
  lengths = [[40, 2, 2, 2], [3, 3, 3, 3]]
  first_is_next = []
  for seed in range(20):
    pairs = _pairs(lengths, [seed, 4], seq_length=16, short_seq_prob=0.0)
    first = {k: v[0] for k, v in pairs.items()}
    assert first["document_a"] == 0 and first["a_end"] <= 40
    if first["is_next"]:
      assert first["b_start"] >= 40 and first["b_end"] == 42
    first_is_next.append(first["is_next"])
  assert 0 < sum(first_is_next) < 20


def test_single_document_window_is_all_is_next():
  pairs = _pairs([[5, 6, 7, 8]], [0, 0], seq_length=16)
  assert len(pairs["is_next"]) > 0
  assert (pairs["is_next"] == 1).all()
  assert (pairs["document_a"] == 0).all() and (pairs["document_b"] == 0).all()


def test_single_one_sentence_document_gives_no_pair():
  assert len(_pairs([[5]], [0, 0])["is_next"]) == 0


def test_is_short_share():
  draws = np.concatenate([
      _pairs(WINDOW, [seed, 6], short_seq_prob=0.5)["is_short"] for seed in range(40)])
  assert len(draws) > 300
  # sd of the share over n > 300 draws: under 0.029; tolerance 0.12 (over 4 sd).
  assert abs(draws.mean() - 0.5) < 0.12
  assert not _pairs(WINDOW, [0, 6], short_seq_prob=0.0)["is_short"].any()
  assert _pairs(WINDOW, [0, 6], short_seq_prob=1.0)["is_short"].all()


# Seeds

def _same(p, q):
  return p.keys() == q.keys() and all(np.array_equal(p[k], q[k]) for k in p)


def test_same_seed_same_pairs():
  assert _same(_pairs(WINDOW, [5, 7]), _pairs(WINDOW, [5, 7]))


def test_different_seed_different_pairs():
  first = _pairs(WINDOW, [5, 7])
  assert not _same(first, _pairs(WINDOW, [5, 8]))
  assert not _same(first, _pairs(WINDOW, [6, 7]))


def test_eager_matches_tf_function():
  eager = pairing.create_pairs(_window(WINDOW), tf.constant([5, 7], tf.int64), seq_length=32,
                               short_seq_prob=0.1)
  eager = {k: getattr(eager, k).numpy() for k in _pairs(WINDOW, [5, 7])}
  assert _same(eager, _pairs(WINDOW, [5, 7]))


# MLM only

def test_mlm_only_has_no_segment_b():
  layout = _Layout(WINDOW)
  for seq_length in (8, 16, 64):
    pairs = _pairs(WINDOW, [1, 1], seq_length=seq_length, nsp=False)
    len_a = pairs["a_end"] - pairs["a_start"]
    assert (pairs["b_end"] == pairs["b_start"]).all()
    assert (len_a > 0).all() and (len_a <= seq_length - 2).all()
    for start, end, document in zip(pairs["a_start"], pairs["a_end"], pairs["document_a"]):
      assert layout.inside(start, end, document)


def test_gather_segments():
  window = _window(WINDOW)
  pairs = pairing.create_pairs(window, tf.constant([2, 2], tf.int64), seq_length=16,
                               short_seq_prob=0.1)
  segment_a, segment_b = pairing.gather_segments(window.flat_values, pairs)
  assert segment_a.to_list() == [
      list(range(_FIRST_ID + s, _FIRST_ID + e))
      for s, e in zip(pairs.a_start.numpy(), pairs.a_end.numpy())]
  assert segment_b.to_list() == [
      list(range(_FIRST_ID + s, _FIRST_ID + e))
      for s, e in zip(pairs.b_start.numpy(), pairs.b_end.numpy())]

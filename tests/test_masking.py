"""Masked-LM targets as original BERT's create_masked_lm_predictions (docs/design.md#masking)."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import masking
from bert_tf.data.tokenization import Vocabulary

PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
NEVER_PREDICTED = (CLS, SEP, PAD)
VOCAB_SIZE = 300
WORDS = np.arange(10, 50)  # Ids of whole words in the test sequences.
PIECES = np.arange(50, 100)  # Ids of `##` pieces.
REPLACEMENTS = np.arange(200, 300)  # Random replacements: disjoint from what the rows hold.


def _continuation():
  flags = np.zeros(VOCAB_SIZE, bool)
  flags[PIECES] = True
  return tf.constant(flags)


def _rows(rng, lengths, seq_length, piece_rate=0.0):
  """[CLS] A [SEP] B [SEP] rows of the given lengths (at least 5), padded with 0."""
  token_ids = np.zeros((len(lengths), seq_length), np.int32)
  for row, length in enumerate(lengths):
    tokens = rng.choice(WORDS, length)
    pieces = rng.random(length) < piece_rate
    tokens[pieces] = rng.choice(PIECES, pieces.sum())
    split = rng.integers(2, length - 2)
    tokens[0], tokens[split], tokens[length - 1] = CLS, SEP, SEP
    tokens[1] = rng.choice(WORDS)  # A and B start with a word, not a piece.
    tokens[split + 1] = rng.choice(WORDS)
    token_ids[row, :length] = tokens
  return token_ids, np.array(lengths, np.int32)


def _ids(replacement_ids=REPLACEMENTS):
  return masking.MaskingIds(tf.constant(NEVER_PREDICTED, tf.int32), MASK,
                            tf.constant(replacement_ids, tf.int32), _continuation())


def _mask(token_ids, lengths, seed=(0, 0), *, max_predictions=8, masked_lm_prob=0.15,
          replacement_ids=REPLACEMENTS, **kwargs):
  masked = masking.mask_tokens(
      tf.constant(token_ids), tf.constant(lengths), tf.constant(seed, tf.int64),
      _ids(replacement_ids), masking.Masking(max_predictions, masked_lm_prob, **kwargs))
  return {k: getattr(masked, k).numpy() for k in (
      "token_ids", "masked_positions", "masked_ids", "masked_weights")}


def _expected_count(length, max_predictions, masked_lm_prob):
  """Original BERT's num_to_predict (Python 3's round is half to even, as tf.round)."""
  return min(max_predictions, max(1, int(round(length * masked_lm_prob))))


def _chosen(masked, row):
  count = int(masked["masked_weights"][row].sum())
  return masked["masked_positions"][row, :count]


# Shapes and counts

def test_shapes_and_dtypes():
  rng = np.random.default_rng(0)
  token_ids, lengths = _rows(rng, [5, 20, 32], 32)
  masked = _mask(token_ids, lengths, max_predictions=6)
  assert masked["token_ids"].shape == (3, 32) and masked["token_ids"].dtype == np.int32
  for name, dtype in (("masked_positions", np.int32), ("masked_ids", np.int32),
                      ("masked_weights", np.float32)):
    assert masked[name].shape == (3, 6) and masked[name].dtype == dtype, name


@pytest.mark.parametrize("masked_lm_prob", [0.15, 0.2, 0.5])
def test_count_per_row(masked_lm_prob):
  rng = np.random.default_rng(1)
  lengths = list(range(5, 65))
  token_ids, lengths = _rows(rng, lengths, 64)
  masked = _mask(token_ids, lengths, max_predictions=8, masked_lm_prob=masked_lm_prob)
  counts = masked["masked_weights"].sum(axis=1).astype(int).tolist()
  expected = [min(_expected_count(n, 8, masked_lm_prob), n - 3) for n in lengths]
  assert counts == expected
  assert 8 in counts  # Some rows reach max_predictions.


def test_count_rounds_half_to_even():
  # 10 * 0.25 = 2.5 -> 2; 14 * 0.25 = 3.5 -> 4; 18 * 0.25 = 4.5 -> 4; 6 * 0.25 = 1.5 -> 2.
  rng = np.random.default_rng(2)
  token_ids, lengths = _rows(rng, [10, 14, 18, 6], 20)
  masked = _mask(token_ids, lengths, max_predictions=20, masked_lm_prob=0.25)
  assert masked["masked_weights"].sum(axis=1).tolist() == [2, 4, 4, 2]


def test_count_matches_original_up_to_seq_512():
  # Phase 2 of pre-training: sequences of up to 512 tokens, 80 predictions. Original BERT
  # computes round(len(tokens) * masked_lm_prob) in float64.
  rng = np.random.default_rng(3)
  lengths = list(range(5, 513))
  token_ids, lengths = _rows(rng, lengths, 512)
  masked = _mask(token_ids, lengths, max_predictions=80, masked_lm_prob=0.15)
  counts = masked["masked_weights"].sum(axis=1).astype(int)
  expected = np.array([_expected_count(n, 80, 0.15) for n in lengths])
  wrong = [(int(n), int(c), int(e)) for n, c, e in zip(lengths, counts, expected) if c != e]
  assert not wrong, f"(length, count, original's count): {wrong}"


def test_count_limited_by_candidates():
  # [CLS] x [SEP] y [SEP] with 50% masking: round(2.5) = 2 predictions, 2 candidates;
  # [CLS] [SEP] alone has none.
  token_ids = np.array([[CLS, 11, SEP, 12, SEP, 0], [CLS, SEP, 0, 0, 0, 0]], np.int32)
  masked = _mask(token_ids, np.array([5, 2], np.int32), masked_lm_prob=0.5)
  assert masked["masked_positions"].tolist() == [[1, 3] + [0] * 6, [0] * 8]
  assert masked["masked_weights"].sum(axis=1).tolist() == [2, 0]


# What is chosen

def test_positions_sorted_padded_and_labelled():
  rng = np.random.default_rng(4)
  lengths = rng.integers(5, 49, 200).tolist()
  token_ids, lengths = _rows(rng, lengths, 48)
  masked = _mask(token_ids, lengths, seed=(4, 4), max_predictions=5)
  for row in range(len(lengths)):
    count = int(masked["masked_weights"][row].sum())
    weights, positions = masked["masked_weights"][row], masked["masked_positions"][row]
    assert weights.tolist() == [1.0] * count + [0.0] * (5 - count)
    assert (np.diff(positions[:count]) > 0).all()
    assert (positions[count:] == 0).all() and (masked["masked_ids"][row, count:] == 0).all()
    assert (masked["masked_ids"][row, :count] == token_ids[row, positions[:count]]).all()
    # Never [CLS], [SEP] or padding.
    assert (positions[:count] < lengths[row]).all()
    assert not np.isin(token_ids[row, positions[:count]], NEVER_PREDICTED).any()
    # Exactly the chosen positions change; the others keep their ids.
    unchosen = np.ones(48, bool)
    unchosen[positions[:count]] = False
    assert (masked["token_ids"][row, unchosen] == token_ids[row, unchosen]).all()


def test_positions_uniform_among_candidates():
  # 3,000 rows of 20 tokens ([SEP] at 9 and 19): 17 candidates, 3 predictions each. Each
  # candidate is chosen with p = 3/17; over 3,000 rows its count has mean 529 and sd 21;
  # the tolerance, 100, is almost 5 sd.
  rows = 3000
  token_ids = np.tile(np.arange(10, 30, dtype=np.int32), (rows, 1))
  token_ids[:, [0, 9, 19]] = [CLS, SEP, SEP]
  masked = _mask(token_ids, np.full(rows, 20, np.int32), seed=(5, 5))
  counts = np.bincount(masked["masked_positions"][masked["masked_weights"] > 0], minlength=20)
  assert counts[[0, 9, 19]].tolist() == [0, 0, 0]
  candidates = np.delete(counts, [0, 9, 19])
  assert candidates.sum() == rows * 3
  assert np.abs(candidates - rows * 3 / 17).max() < 100, candidates


def test_mask_and_unk_tokens_are_candidates():
  # Only [CLS], [SEP] and padding are excluded: an [UNK] or [MASK] in the text can be chosen.
  token_ids = np.array([[CLS, UNK, SEP, MASK, SEP]], np.int32)
  masked = _mask(token_ids, np.array([5], np.int32), masked_lm_prob=0.5)
  assert masked["masked_positions"][0, :2].tolist() == [1, 3]
  assert masked["masked_ids"][0, :2].tolist() == [UNK, MASK]


# 80/10/10

def _decisions(token_ids, masked):
  """Counts of chosen positions that became [MASK], a random token, or stayed."""
  rows, slots = np.nonzero(masked["masked_weights"])
  positions = masked["masked_positions"][rows, slots]
  new, old = masked["token_ids"][rows, positions], token_ids[rows, positions]
  is_mask, is_random = new == MASK, np.isin(new, REPLACEMENTS)
  is_kept = new == old
  assert (is_mask | is_random | is_kept).all()
  assert not (is_mask & is_kept).any() and not (is_random & is_kept).any()
  return is_mask.sum(), is_random.sum(), is_kept.sum()


def test_80_10_10():
  # About 24,000 chosen positions. The sd of a share p over n is sqrt(p (1 - p) / n): 0.0026
  # for 80%, 0.0019 for 10%; the tolerances are 5 of them.
  rng = np.random.default_rng(6)
  token_ids, lengths = _rows(rng, [64] * 2500, 64)
  masked = _mask(token_ids, lengths, seed=(6, 6), max_predictions=10)
  mask, random, kept = _decisions(token_ids, masked)
  n = mask + random + kept
  assert n == 2500 * 10
  assert abs(mask / n - 0.8) < 0.013
  assert abs(random / n - 0.1) < 0.01
  assert abs(kept / n - 0.1) < 0.01


def test_configurable_rates():
  rng = np.random.default_rng(7)
  token_ids, lengths = _rows(rng, [40] * 1000, 40)
  mask, random, kept = _decisions(token_ids, _mask(
      token_ids, lengths, mask_token_rate=0.5, random_token_rate=0.3))
  n = mask + random + kept  # 6,000: sd under 0.0065; tolerance 0.03.
  assert abs(mask / n - 0.5) < 0.03 and abs(random / n - 0.3) < 0.03
  assert abs(kept / n - 0.2) < 0.03
  assert _decisions(token_ids, _mask(token_ids, lengths, mask_token_rate=1.0,
                                     random_token_rate=0.0))[1:] == (0, 0)


def test_random_replacements_are_ordinary_tokens(tmp_path):
  tokens = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            + [f"[unused{i}]" for i in range(5)] + [f"w{i}" for i in range(10, 60)]
            + [f"##p{i}" for i in range(50)] + [f"[unused{i}]" for i in range(5, 10)])
  path = tmp_path / "vocab.txt"
  path.write_text("".join(t + "\n" for t in tokens))
  vocabulary = Vocabulary(str(path))
  replacement = vocabulary.replacement_ids()
  rng = np.random.default_rng(8)
  token_ids, lengths = _rows(rng, [60] * 400, 60)
  masked = _mask(token_ids, lengths, replacement_ids=replacement, max_predictions=9,
                 mask_token_rate=0.0, random_token_rate=1.0)
  rows, slots = np.nonzero(masked["masked_weights"])
  new = masked["token_ids"][rows, masked["masked_positions"][rows, slots]]
  assert len(new) == 400 * 9
  assert all(not (tokens[i].startswith("[") and tokens[i].endswith("]")) for i in new)
  # 3,600 draws from 100 ids: every id drawn (the chance that one is missing is 100 * e^-36).
  assert set(new.tolist()) == set(replacement)


# Whole-word masking

def _words(token_ids, length):
  """Spans [start, end) of the words of one row: a word and its following `##` pieces."""
  spans = []
  for position in range(length):
    token = token_ids[position]
    if token in NEVER_PREDICTED:
      continue
    if token in PIECES and spans and spans[-1][1] == position:
      spans[-1][1] = position + 1
    else:
      spans.append([position, position + 1])
  return spans


def test_whole_words_chosen_together_with_one_decision():
  rng = np.random.default_rng(9)
  token_ids, lengths = _rows(rng, rng.integers(8, 65, 1000).tolist(), 64, piece_rate=0.4)
  masked = _mask(token_ids, lengths, seed=(9, 9), max_predictions=10, whole_word_masking=True)
  outcomes = {"mask": 0, "random": 0, "kept": 0}
  multi_piece = 0
  for row in range(len(lengths)):
    chosen = set(_chosen(masked, row).tolist())
    new, old = masked["token_ids"][row], token_ids[row]
    for start, end in _words(token_ids[row], lengths[row]):
      span = set(range(start, end))
      assert span <= chosen or not span & chosen, (row, start, end)
      if not span <= chosen:
        continue
      multi_piece += end - start > 1
      if (new[start:end] == MASK).all():
        outcomes["mask"] += 1
      elif np.isin(new[start:end], REPLACEMENTS).all():
        outcomes["random"] += 1
      else:
        assert (new[start:end] == old[start:end]).all(), (row, start, end)
        outcomes["kept"] += 1
  assert multi_piece > 1000
  n = sum(outcomes.values())  # About 3,800 words: sd of the 80% share 0.0065.
  assert abs(outcomes["mask"] / n - 0.8) < 0.035
  assert abs(outcomes["random"] / n - 0.1) < 0.03


def test_whole_word_masking_counts_pieces():
  # [CLS] w ##p ##p w [SEP] w [SEP]: round(8 * 0.5) = 4 pieces to predict, from the words
  # {1, 2, 3}, {4} and {6}. When both one-piece words come first the three-piece word no
  # longer fits (in original BERT too): 2 predictions.
  token_ids = np.array([[CLS, 10, 50, 51, 11, SEP, 12, SEP]], np.int32)
  seen = set()
  for seed in range(30):
    masked = _mask(token_ids, np.array([8], np.int32), seed=(seed, 0), masked_lm_prob=0.5,
                   whole_word_masking=True)
    chosen = tuple(_chosen(masked, 0).tolist())
    assert chosen in {(1, 2, 3, 4), (1, 2, 3, 6), (4, 6)}
    seen.add(chosen)
  assert len(seen) == 3


def test_whole_word_masking_fills_the_count_with_words_that_fit():
  # Original BERT skips a word that no longer fits and goes on with the next: a row with at
  # least num_to_predict one-piece words always gets exactly num_to_predict predictions.
  rng = np.random.default_rng(10)
  token_ids, lengths = _rows(rng, [40] * 400, 40, piece_rate=0.3)
  masked = _mask(token_ids, lengths, seed=(10, 10), max_predictions=8, whole_word_masking=True)
  short = []
  for row in range(len(lengths)):
    words = _words(token_ids[row], lengths[row])
    if sum(end - start == 1 for start, end in words) >= 6:  # round(40 * 0.15) = 6
      count = len(_chosen(masked, row))
      if count != 6:
        short.append(count)
  assert not short, f"{len(short)} rows got fewer than 6 predictions: {short[:10]}"


def test_piece_after_special_token_starts_a_word():
  # A `##` piece right after [SEP] does not join the word before [SEP].
  token_ids = np.array([[CLS, 10, SEP, 50, SEP]], np.int32)
  for seed in range(10):
    masked = _mask(token_ids, np.array([5], np.int32), seed=(seed, 1), masked_lm_prob=0.2,
                   whole_word_masking=True)
    assert len(_chosen(masked, 0)) == 1


def test_without_whole_word_masking_pieces_are_separate():
  # round(20 * 0.15) = 3 predictions in a row of three 6-piece words: without whole-word
  # masking each piece is a word; with it no word fits (original BERT predicts nothing too).
  token_ids = np.array([[CLS] + [10, 50, 51, 52, 53, 54] * 3 + [SEP]], np.int32)
  lengths = np.array([20], np.int32)
  for seed in range(10):
    assert len(_chosen(_mask(token_ids, lengths, seed=(seed, 2)), 0)) == 3
    assert len(_chosen(_mask(token_ids, lengths, seed=(seed, 2), whole_word_masking=True),
                       0)) == 0


# Seeds

def test_deterministic_for_a_seed():
  rng = np.random.default_rng(11)
  token_ids, lengths = _rows(rng, rng.integers(5, 33, 50).tolist(), 32, piece_rate=0.3)
  for wwm in (False, True):
    first = _mask(token_ids, lengths, seed=(3, 4), whole_word_masking=wwm)
    again = _mask(token_ids, lengths, seed=(3, 4), whole_word_masking=wwm)
    other = _mask(token_ids, lengths, seed=(3, 5), whole_word_masking=wwm)
    assert all(np.array_equal(first[k], again[k]) for k in first)
    assert not np.array_equal(first["masked_positions"], other["masked_positions"])
    assert not np.array_equal(first["token_ids"], other["token_ids"])


def test_in_a_tf_function():
  rng = np.random.default_rng(12)
  token_ids, lengths = _rows(rng, [10, 30, 32], 32)

  @tf.function
  def mask(token_ids, lengths):
    return masking.mask_tokens(
        token_ids, lengths, tf.constant([1, 2], tf.int64), _ids(),
        masking.Masking(max_predictions=8, masked_lm_prob=0.15))

  graph = mask(tf.constant(token_ids), tf.constant(lengths))
  eager = _mask(token_ids, lengths, seed=(1, 2))
  assert np.array_equal(graph.token_ids.numpy(), eager["token_ids"])
  assert np.array_equal(graph.masked_positions.numpy(), eager["masked_positions"])


def test_whole_words_in_a_tf_function_of_static_shape():
  """A caller with token ids of a known batch size (a remasking step, say) traces whole-word
  masking with static shapes, a batch of one the corner case; the result equals the eager
  one."""
  rng = np.random.default_rng(13)
  token_ids, lengths = _rows(rng, [30], 32, piece_rate=0.4)

  @tf.function
  def mask(token_ids, lengths):
    return masking.mask_tokens(
        token_ids, lengths, tf.constant([1, 2], tf.int64), _ids(),
        masking.Masking(max_predictions=8, masked_lm_prob=0.15, whole_word_masking=True))

  graph = mask(tf.constant(token_ids), tf.constant(lengths))
  eager = _mask(token_ids, lengths, seed=(1, 2), whole_word_masking=True)
  for name in eager:
    assert np.array_equal(getattr(graph, name).numpy(), eager[name]), name

"""Random bytes and random Unicode never crash the pipeline nor give an out-of-range id."""

import numpy as np
import pytest

import bert_tf
from bert_tf.data.tokenization import Vocabulary

SEQ, PREDICTIONS = 32, 5


def random_file(rng, path):
  kind = rng.integers(4)
  if kind == 0:  # raw bytes, newlines included
    data = rng.integers(0, 256, rng.integers(0, 5000), dtype=np.uint8).tobytes()
  else:
    if kind == 1:  # any code point, lone surrogates too (invalid UTF-8 once encoded)
      points = rng.integers(0, 0x110000, rng.integers(0, 2000))
    elif kind == 2:  # control characters, spaces, line ends, BOMs and a few letters
      points = rng.choice([0, 7, 9, 10, 13, 32, 0x85, 0xA0, 0x200B, 0xFEFF, 0xFFFD, 65, 97],
                          rng.integers(0, 3000))
    else:  # CJK, accents, punctuation, with lines and blank lines
      points = rng.choice(list(range(0x4E00, 0x4E40)) + [0xE9, 0x301, 0x2014, 46, 10, 10, 32],
                          rng.integers(0, 3000))
    data = "".join(chr(p) for p in points).encode("utf-8", errors="surrogatepass")
  path.write_bytes(data)


@pytest.mark.e2e
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_files_never_crash(tmp_path, vocab_file, seed):
  rng = np.random.default_rng(seed)
  for i in range(24):
    random_file(rng, tmp_path / f"random-{i:02d}.txt")
  # Two ordinary documents so that NotNext pairs are possible at all.
  (tmp_path / "plain.txt").write_text("One sentence.\nTwo.\n\nAnother document.\nEnd.\n")
  size = len(Vocabulary(vocab_file))
  dataset = bert_tf.pretraining_dataset(
      str(tmp_path / "*.txt"), vocab_file, seq_length=SEQ, max_predictions_per_seq=PREDICTIONS,
      batch_size=16, seed=seed, repeat=False, whole_word_masking=bool(seed % 2))
  examples = 0
  for features, labels, _weights in dataset.as_numpy_iterator():
    examples += len(labels["nsp"])
    assert features["token_ids"].shape[1] == SEQ
    assert ((features["token_ids"] >= 0) & (features["token_ids"] < size)).all()
    assert ((labels["mlm"] >= 0) & (labels["mlm"] < size)).all()
    assert ((features["masked_positions"] >= 0) & (features["masked_positions"] < SEQ)).all()
    assert set(np.unique(labels["nsp"])) <= {0, 1}
  assert examples > 0

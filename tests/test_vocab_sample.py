"""`bert_tf.vocab` learns from a bounded sample spread over the whole corpus."""

from bert_tf.data import corpus, vocabulary_learner


def test_vocabulary_learned_from_a_bounded_sample_spread_over_the_corpus(tmp_path, monkeypatch):
  # 8 files of 4 KB, each with its own word: the sample may read 8 KB of the 32 KB.
  files = []
  for i in range(8):
    path = tmp_path / f"part-{i}.txt"
    path.write_text("".join(f"The word{'abcdefgh'[i]} is here {j}.\n\n" for j in range(180)))
    files.append(str(path))
  monkeypatch.setattr(vocabulary_learner, "SAMPLE_BYTES", 8 << 10)
  read = []
  read_ranges = corpus.read_ranges

  def spy(ranges, input_format):
    read.extend(ranges)
    return read_ranges(ranges, input_format)

  monkeypatch.setattr(corpus, "read_ranges", spy)
  vocabulary = vocabulary_learner.build_vocabulary(
      str(tmp_path / "*.txt"), str(tmp_path / "vocab.txt"), vocab_size=200)
  assert sum(r.length for r in read) <= (8 << 10) * 17 // 16
  assert sum(r.length for r in read) >= (8 << 10) * 3 // 4
  # Spread: every file is sampled, so every file's word is learned.
  assert {r.path for r in read} == set(files)
  assert {f"word{c}" for c in "abcdefgh"} <= set(vocabulary.tokens)

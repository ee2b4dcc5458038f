"""The realised IsNext share of the pipeline's pairs on corpora of different shapes
(docs/design.md#pairing): documents of 2, 3, 4, ... sentences, mixtures with long documents
and with one-sentence documents, at several sequence lengths, packed and not.

    python benchmarks/nsp_share.py --seq_lengths=64,128,512 --pairs=10000

Each corpus is the built-in corpus's sentences (Python's language reference), in order, cut
into documents whose sizes cycle through a shape's list, so the text is real and only the
documents' lengths change. For each corpus, sequence length and layout (--packing or not),
counts the first --pairs pairs of `bert_tf.pretraining_dataset` (--seed, short_seq_prob 0.1)
and prints their IsNext share in a table. The standard deviation of a fair share over n pairs
is 0.5 / sqrt(n): 0.005 over 10,000.
"""

import argparse
import os
import tempfile

# Sentences a document, cycled ("+" between sizes): documents of two sentences, of three, ...,
# mixtures of short documents, with long ones, with one-sentence ones; "topics" is the built-in
# corpus itself, a help topic a document (3 to 553 sentences).
SHAPES = ["2", "3", "4", "6", "2+3", "1+2+3", "2+3+2+3+40", "1+2+1+2+40", "topics"]


def write_corpus(path: str, shape: str) -> None:
  """The built-in corpus's sentences as documents of `shape`'s sizes (`SHAPES`)."""
  from pydoc_data import topics

  from bert_tf.data.builtin_corpus import topic_sentences
  by_topic = [topic_sentences(text) for _, text in sorted(topics.topics.items())]
  if shape == "topics":
    documents = by_topic
  else:
    sizes = [int(size) for size in shape.split("+")]
    sentences = [s for topic in by_topic for s in topic]
    documents, start = [], 0
    while start < len(sentences):
      size = sizes[len(documents) % len(sizes)]
      documents.append(sentences[start:start + size])
      start += size
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n\n".join("\n".join(document) for document in documents) + "\n")


def is_next_share(path: str, vocab_file: str, seq_length: int, packing: bool,
                  num_pairs: int, seed: int = 0) -> float:
  """The IsNext share of the first `num_pairs` pairs (or a few more: whole batches)."""
  import numpy as np

  import bert_tf
  from bert_tf.audit import pairs_present
  batches = bert_tf.pretraining_dataset(
      path, vocab_file, seq_length=seq_length, max_predictions_per_seq=seq_length * 20 // 128,
      batch_size=64, packing=packing, seed=seed)
  is_next = pairs = 0
  for features, labels, _ in batches.as_numpy_iterator():
    real = pairs_present(features, labels)
    is_next += int((np.asarray(labels["nsp"])[real] == 1).sum())
    pairs += int(real.sum())
    if pairs >= num_pairs:
      return is_next / pairs
  raise AssertionError("the stream ended")


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--seq_lengths", default="64,128,512")
  parser.add_argument("--pairs", type=int, default=10_000)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--shapes", default=",".join(SHAPES), help="corpus shapes, as SHAPES")
  parser.add_argument("--vocab_file", default="",
                      help="a vocabulary to use (default: one learned from the built-in corpus)")
  args = parser.parse_args(argv)
  seq_lengths = [int(n) for n in args.seq_lengths.split(",")]

  from bert_tf.data import builtin_corpus
  from bert_tf.data.vocabulary_learner import build_vocabulary
  with tempfile.TemporaryDirectory() as directory:
    vocab_file = args.vocab_file
    if not vocab_file:
      vocab_file = os.path.join(directory, "vocab.txt")
      build_vocabulary(builtin_corpus.corpus_pattern(directory), vocab_file, vocab_size=8000)
    columns = [(n, packing) for n in seq_lengths for packing in (False, True)]
    print("| sentences a document | " + " | ".join(
        f"{n}{' packed' if packing else ''}" for n, packing in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for shape in args.shapes.split(","):
      path = os.path.join(directory, f"corpus-{shape}.txt")
      write_corpus(path, shape)
      shares = [is_next_share(path, vocab_file, n, packing, args.pairs, args.seed)
                for n, packing in columns]
      print(f"| {shape} | " + " | ".join(f"{share:.3f}" for share in shares) + " |", flush=True)


if __name__ == "__main__":
  main()

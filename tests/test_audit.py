"""Golden statistics: what the pipeline realises on real text, within stated tolerances.

Over 10,240 examples at sequence 128 there are about 180,000 predicted tokens, so a share
drawn at rate p has a standard deviation below 0.0012; the tolerances (0.01) are over 8 of
them. IsNext is not drawn freely (forced NotNexts are paid back), and the short-sequence share
is over examples (10,240, standard deviation 0.003).

On the built-in corpus (seed 0), measured on 2026-12-01: 118.92 tokens per example (padding
0.0710), 871 (window, document) pairs. An example's length varies by about 20 tokens (short
sequences, document ends), so over 10,240 examples the mean moves by about 0.2: 1.5 tokens
is over 7 of that, room for a tokenizer that splits a little differently. Each document used
in a window counts once, so the count is about 79 documents times the epochs the examples
hold (their tokens over the corpus's): within 10% (truncation drops tokens, the last windows
are only partly drawn).
"""

import ast
import collections
import json
import os
import sysconfig

import pytest

import bert_tf.audit
from bert_tf.audit import audit
from bert_tf.data.builtin_corpus import topic_sentences
from bert_tf.training.train_settings import TrainConfig
from helpers import NOISE, run


def stdlib_docstring_corpus(path: str, max_modules: int = 150) -> None:
  """A second real-text corpus: the long docstrings of standard-library modules, one document
  per module (API prose, unlike the language reference)."""
  root = sysconfig.get_paths()["stdlib"]
  documents = []
  for name in sorted(os.listdir(root)):
    if not name.endswith(".py") or len(documents) >= max_modules:
      continue
    try:
      tree = ast.parse(open(os.path.join(root, name), encoding="utf-8").read())
    except (SyntaxError, UnicodeDecodeError):
      continue
    texts = [ast.get_docstring(node) for node in _statements(tree)
             if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))]
    sentences = [s for text in texts if text and len(text) > 200
                 for s in topic_sentences(text)]
    if len(sentences) >= 5:
      documents.append("\n".join(sentences))
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n\n".join(documents) + "\n")


# The fields of a node that hold statements (a definition is a statement, found only there).
_BODIES = {"body", "orelse", "handlers", "finalbody", "cases"}


def _statements(tree):
  """The module and its statements in `ast.walk`'s order (breadth first), without walking
  into expressions, where no definition is: `ast.walk` restricted to what can hold one."""
  queue = collections.deque([tree])
  while queue:
    node = queue.popleft()
    yield node
    for field in node._fields:
      value = getattr(node, field, None)
      if field in _BODIES and isinstance(value, list):
        queue.extend(value)


def check_golden(stats, examples):
  assert stats["examples"] == examples
  assert stats["masked_share"] == pytest.approx(0.15, abs=0.01)
  assert stats["mask_token_share"] == pytest.approx(0.8, abs=0.01)
  assert stats["random_token_share"] == pytest.approx(0.1, abs=0.01)
  assert stats["kept_share"] == pytest.approx(0.1, abs=0.01)
  assert stats["is_next_share"] == pytest.approx(0.5, abs=0.01)
  assert stats["not_next_other_document_share"] == 1.0
  assert stats["short_sequence_share"] == pytest.approx(0.1, abs=0.012)


def corpus_tokens(pattern: str, vocab_file: str) -> int:
  """WordPiece tokens in a sentence-per-line corpus."""
  import glob

  import tensorflow as tf

  from bert_tf.data.tokenization import Vocabulary
  lines = [line for path in glob.glob(pattern) for line in open(path, encoding="utf-8")
           if line.strip()]
  tokenizer = Vocabulary(vocab_file).tokenizer(lower_case=True)
  return int(tokenizer.tokenize(tf.constant(lines)).row_lengths().numpy().sum())


@pytest.fixture(scope="module")
def builtin_audit(tmp_path_factory, data_dir, vocab_file):
  """`audit` of the built-in corpus over 10,000 examples (batches of 256): (its texts, its
  statistics, and the statistics of its first batch alone, which are what `audit` finds over
  256 examples of the same deterministic stream)."""
  made = []

  class WithFirstBatch(bert_tf.audit.Statistics):
    """audit's running totals, which also keep the summary of the first batch."""

    def __init__(self, *args):
      super().__init__(*args)
      self.first_batch = None
      made.append(self)

    def add(self, *args):
      super().add(*args)
      if self.first_batch is None:
        self.first_batch = self.summary()

  with pytest.MonkeyPatch.context() as patch:
    patch.setattr(bert_tf.audit, "Statistics", WithFirstBatch)
    texts, stats = audit(TrainConfig(data_dir=data_dir, vocab_file=vocab_file,
                                     model_dir=str(tmp_path_factory.mktemp("audit"))),
                         num_examples=10_000, show_examples=2)
  (statistics,) = made
  return texts, stats, statistics.first_batch


@pytest.mark.e2e
def test_golden_statistics_on_the_builtin_corpus(builtin_audit, corpus_pattern, vocab_file):
  texts, stats, _ = builtin_audit
  check_golden(stats, 10_240)
  # Most examples fill the sequence; short ones (10%) and document ends pull the mean down.
  assert stats["mean_tokens"] == pytest.approx(118.92, abs=1.5)
  assert stats["padding_share"] == pytest.approx(1 - 118.92 / 128, abs=1.5 / 128)
  epochs = 10_240 * (stats["mean_tokens"] - 3) / corpus_tokens(corpus_pattern, vocab_file)
  assert 10 < epochs < 13
  assert stats["documents"] == pytest.approx(79 * epochs, rel=0.1)
  assert len(texts) == 2 and texts[0].startswith(("IsNext: [CLS]", "NotNext: [CLS]"))
  assert "[MASK](" in texts[0] and " | " in texts[0]


@pytest.mark.e2e
def test_golden_statistics_on_stdlib_docstrings(tmp_path, vocab_file):
  corpus = str(tmp_path / "docstrings.txt")
  stdlib_docstring_corpus(corpus)
  _, stats = audit(TrainConfig(input_files=corpus, vocab_file=vocab_file,
                               model_dir=str(tmp_path / "run")),
                   num_examples=10_000, show_examples=0)
  check_golden(stats, 10_240)


@pytest.mark.e2e
def test_command_line_json(data_dir, vocab_file, tmp_path, builtin_audit):
  """`python -m bert_tf.audit --json`, with the environment a user has: the JSON line only,
  nothing on stderr."""
  result = run(["-m", "bert_tf.audit", f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
                f"--model_dir={tmp_path}", "--num_examples=256", "--json"], timeout=300,
               as_user=True)
  assert result.returncode == 0, result.stderr[-2000:]
  assert not NOISE.search(result.stdout + result.stderr), NOISE.search(result.stderr)
  assert result.stderr == ""
  stats = json.loads(result.stdout.strip().splitlines()[-1])
  assert set(stats) == {
      "examples", "masked_share", "mask_token_share", "random_token_share", "kept_share",
      "is_next_share", "not_next_other_document_share", "mean_tokens", "padding_share",
      "short_sequence_share", "documents"}
  # The command prints what audit() finds for the same flags (the stream is deterministic:
  # the first batch of the golden audit's)...
  _, _, expected = builtin_audit
  assert stats == pytest.approx(expected, rel=1e-12)
  # ...and its values are the golden ones, within what 256 examples allow (about 4,500
  # predicted tokens: standard deviation of a share below 0.007; 256 IsNext draws: 0.03).
  assert stats["examples"] == 256
  for name, golden, tolerance in (("masked_share", 0.15, 0.03), ("mask_token_share", 0.8, 0.04),
                                  ("random_token_share", 0.1, 0.03), ("kept_share", 0.1, 0.03),
                                  ("is_next_share", 0.5, 0.1), ("mean_tokens", 118.92, 6)):
    assert stats[name] == pytest.approx(golden, abs=tolerance), name
  assert stats["not_next_other_document_share"] == 1.0


@pytest.mark.e2e
def test_a_vocabulary_still_to_learn_is_learned_for_the_audit_and_not_written(
    tmp_path, monkeypatch, caplog):
  """A run whose --vocab_file does not exist yet learns it; its audit learns the same to show
  what the run would see, and writes nothing: not the vocabulary (a mistyped path would
  otherwise leave a vocabulary of the corpus there), nor anything else where it runs."""
  monkeypatch.chdir(tmp_path)
  corpus = tmp_path / "corpus.txt"
  corpus.write_text("\n\n".join(
      "\n".join(f"Sentence {i} of document {d} says {'abc'[i % 3]} word." for i in range(6))
      for d in range(8)) + "\n")
  before = sorted(os.listdir(tmp_path))
  with caplog.at_level("INFO", logger="bert_tf"):
    texts, stats = audit(TrainConfig(input_files="corpus.txt", vocab_file="vocab.txt",
                                     vocab_size=200, seq_length=32, max_predictions_per_seq=5),
                         num_examples=8, show_examples=1)
  assert len(texts) == 1 and stats["examples"] > 0
  assert sorted(os.listdir(tmp_path)) == before
  assert any("does not exist: learning one from the corpus for the audit" in record.getMessage()
             for record in caplog.records)

"""`--add_vocabulary`: a published vocabulary grown with a corpus's words, its weights kept
(`data/vocabulary_growth.py`, `interop/grown_embeddings.py`, `training/grown_vocabulary.py`),
from each kind of --init_checkpoint; and `--init_weights_only`, the new schedule."""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data import vocabulary_fit
from bert_tf.data.tokenization import REQUIRED_TOKENS, Vocabulary
from bert_tf.data.vocabulary_growth import grown_tokens, new_tokens
from bert_tf.errors import UserError
from bert_tf.interop import grown_embeddings
from bert_tf.interop.huggingface import export_huggingface
from bert_tf.interop.source import open_source
from bert_tf.interop.state import model_state
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from bert_tf.serving import verification
from bert_tf.training import grown_vocabulary
from bert_tf.training.train_settings import TrainConfig
from helpers import Logged, docstring_corpus, run

UNUSED = 20  # [unusedK] slots of the published vocabulary
ADDED = 30  # words added: 20 into the slots, 10 appended
EMBEDDINGS, OUTPUT_BIAS = grown_embeddings.EMBEDDINGS, grown_embeddings.OUTPUT_BIAS
TINY = ["--seq_length=32", "--max_predictions_per_seq=5", "--global_batch_size=4",
        "--checkpoint_every=2", "--warmup_steps=1", "--eval_steps=1"]


def test_grown_tokens_fill_the_unused_slots_then_append():
  tokens = ["[PAD]", "[unused0]", "[UNK]", "[unused1]", "the"]
  grown, into_unused = grown_tokens(tokens, ["server", "smtp", "mailbox"])
  assert grown == ["[PAD]", "server", "[UNK]", "smtp", "the", "mailbox"]
  assert into_unused == 2
  assert grown_tokens(tokens, []) == (tokens, 0)


def test_new_tokens_are_read_back_from_the_two_vocabularies(tmp_path):
  def vocabulary(name, tokens):
    (tmp_path / name).write_text("".join(t + "\n" for t in [*REQUIRED_TOKENS, *tokens]))
    return Vocabulary(str(tmp_path / name))

  base = vocabulary("base.txt", ["[unused0]", "the", "##s"])
  grown = vocabulary("grown.txt", ["server", "the", "##s", "smtp"])
  assert new_tokens(base, grown) == {5: "server", 8: "smtp"}
  assert new_tokens(base, base) == {}
  assert new_tokens(base, vocabulary("other.txt", ["[unused0]", "a", "##s"])) is None
  assert new_tokens(grown, base) is None


@pytest.fixture(scope="module")
def published(tmp_path_factory, vocab_file, write_tf1_checkpoint):
  """A random one-layer BERT over the built-in corpus's vocabulary with UNUSED [unusedK] slots
  after the special tokens, as Google lays them out: {its Hugging Face directory, its original
  checkpoint}, its vocabulary, config and canonical state."""
  root = tmp_path_factory.mktemp("published")
  tokens = Vocabulary(vocab_file).tokens
  (root / "vocab.txt").write_text("".join(t + "\n" for t in [
      *tokens[:5], *(f"[unused{i}]" for i in range(UNUSED)), *tokens[5:]]))
  vocabulary = Vocabulary(str(root / "vocab.txt"))
  config = BertConfig.from_preset("bert_tiny", vocab_size=len(vocabulary), num_hidden_layers=1,
                                  max_position_embeddings=64)
  model = pretraining_model(config)
  rng = np.random.default_rng(0)
  for variable in model.weights:
    variable.assign(rng.normal(0, 0.2, variable.shape).astype("float32"))
  state = model_state(model, config)
  export_huggingface(model, config, vocabulary, str(root / "hf"), lower_case=True)
  write_tf1_checkpoint(state, config, str(root / "uncased_tf1"))
  tf.io.gfile.copy(vocabulary.path, str(root / "uncased_tf1" / "vocab.txt"))
  sources = {"hf": str(root / "hf"), "tf1": str(root / "uncased_tf1" / "bert_model.ckpt")}
  return sources, vocabulary, config, state


@pytest.fixture(scope="module")
def domain(tmp_path_factory):
  return docstring_corpus(tmp_path_factory.mktemp("domain"))


def grow(base: Vocabulary, corpus: str, directory, added: int = ADDED) -> Vocabulary:
  """`base` grown by `added` words of `corpus`, as a run's first start does."""
  config = TrainConfig(input_files=corpus, vocab_file=base.path, model_dir=str(directory),
                       init_checkpoint="unused-here", add_vocabulary=added)
  return grown_vocabulary.run_vocabulary(config, base)


def check_grown_state(state: dict, before: dict, base: Vocabulary, grown: Vocabulary) -> None:
  """Every weight as it was; each new row the mean of its pieces' rows."""
  added = new_tokens(base, grown)
  assert len(added) == min(ADDED, len(grown) - len(base) + UNUSED) and added
  pieces = vocabulary_fit.piece_ids(list(added.values()), base, True)
  for name in (EMBEDDINGS, OUTPUT_BIAS):
    kept = [i for i in range(len(base)) if i not in added]
    np.testing.assert_allclose(state[name][kept], before[name][kept], atol=1e-6)
    assert len(state[name]) == len(grown)
    for token_id, piece_ids in zip(added, pieces):
      assert len(piece_ids) >= 2
      np.testing.assert_allclose(state[name][token_id], before[name][piece_ids].mean(axis=0),
                                 atol=1e-6)
  for name in before:
    if name not in (EMBEDDINGS, OUTPUT_BIAS):
      np.testing.assert_allclose(state[name], before[name], atol=1e-6, err_msg=name)


@pytest.fixture(scope="module")
def grown_published(published, domain, tmp_path_factory):
  """The published vocabulary grown by the domain corpus, once for the tests that read it:
  (the grown vocabulary, the directory it was written to, what the growth logged)."""
  _, base, _, _ = published
  directory = tmp_path_factory.mktemp("grown")
  with Logged() as logged:
    grown = grow(base, domain, directory)
  return grown, directory, logged.text


def test_a_published_vocabulary_grows_into_its_unused_slots_then_appended(published,
                                                                         grown_published):
  _, base, _, _ = published
  grown, directory, logged = grown_published
  assert grown.path == str(directory / "vocab.txt") and len(grown) == len(base) + ADDED - UNUSED
  assert not any(t.startswith("[unused") for t in grown.tokens)
  assert (f"Vocabulary grown by {ADDED} words: {UNUSED} into [unusedK] slots, "
          f"{ADDED - UNUSED} appended ({len(base)} -> {len(grown)} tokens") in logged
  assert "WordPieces per word" in logged and "Most frequent words cut by before" in logged


@pytest.mark.parametrize("kind", ["hf", "tf1"])
def test_a_published_checkpoint_grows_its_weights_with_its_vocabulary(published,
                                                                      grown_published, kind):
  sources, base, config, state = published
  grown, _, _ = grown_published
  grown_config = config.replace(vocab_size=len(grown))
  model = pretraining_model(grown_config)
  grown_embeddings.load_grown(open_source(sources[kind]), model, grown_config, base, grown, True)
  check_grown_state(model_state(model, grown_config), state, base, grown)


def test_a_bert_tf_run_grows_by_appending(model_dir, domain, tmp_path):
  """conftest's model_dir, whose vocabulary has no unused slot: every word appended."""
  source = open_source(model_dir)
  base = source.vocabulary
  grown = grow(base, domain, tmp_path)
  assert grown.tokens[:len(base)] == base.tokens and len(grown) == len(base) + ADDED
  model = pretraining_model(source.config)
  source.load_weights(model, source.config)
  before = model_state(model, source.config)
  grown_config = source.config.replace(vocab_size=len(grown))
  model = pretraining_model(grown_config)
  grown_embeddings.load_grown(source, model, grown_config, base, grown, True)
  check_grown_state(model_state(model, grown_config), before, base, grown)


def test_no_words_added_changes_nothing(published, domain, tmp_path):
  _, base, _, _ = published
  assert grow(base, domain, tmp_path, added=0) is base
  assert not os.path.exists(tmp_path / "vocab.txt")


def test_the_grown_words_are_whole_words_to_every_tokenizer(published, grown_published, domain,
                                                           tmp_path):
  """transformers' BertTokenizer over the grown vocab.txt gives our ids on the corpus: each
  grown word whole, the rest as before."""
  import transformers
  _, base, config, _ = published
  grown, _, _ = grown_published
  model = pretraining_model(config.replace(vocab_size=len(grown)))
  export_huggingface(model, config.replace(vocab_size=len(grown)), grown,
                     str(tmp_path / "hf"), lower_case=True)
  theirs = transformers.BertTokenizer.from_pretrained(str(tmp_path / "hf"))
  sentences = [s for s in open(domain, encoding="utf-8").read().splitlines() if s][:400]
  tokenizer = grown.tokenizer(True)
  ours = tokenizer.tokenize(tf.constant(sentences)).to_list()
  assert [theirs(s, add_special_tokens=False)["input_ids"] for s in sentences] == ours
  added = set(new_tokens(base, grown))
  assert len(added & {i for row in ours for i in row}) > ADDED // 2
  # The exports' verification tokenizes every whole word of the vocabulary the same way: it
  # would catch a vocab.txt whose grown words moved.
  words = verification.word_texts(grown)
  expected = [verification.text_ids(tokenizer, text) for text in words]
  assert verification.huggingface_text_ids(str(tmp_path / "hf"), words, True) == expected
  first, last = len(base), len(grown) - 1  # two appended words swapped
  lines = open(tmp_path / "hf" / "vocab.txt", encoding="utf-8").read().splitlines()
  lines[first], lines[last] = lines[last], lines[first]
  (tmp_path / "hf" / "vocab.txt").write_text("".join(line + "\n" for line in lines))
  assert verification.huggingface_text_ids(str(tmp_path / "hf"), words, True) != expected


def test_settings_that_cannot_grow_are_one_line():
  for settings, message in (
      (dict(add_vocabulary=-1, init_checkpoint="x"), "add_vocabulary -1 is negative"),
      (dict(add_vocabulary=5), "--add_vocabulary needs --init_checkpoint"),
      (dict(init_weights_only=True), "--init_weights_only needs --init_checkpoint"),
      (dict(add_vocabulary=5, init_checkpoint="x", input_format="tfrecord"),
       "--add_vocabulary is not for records")):
    with pytest.raises(UserError, match=message):
      TrainConfig(**settings).check()


@pytest.mark.e2e
def test_train_py_grows_once_and_its_exports_verify(published, domain, tmp_path):
  """From the Hugging Face directory: the grown model trains, its SavedModel verifies; a re-run
  resumes without growing again; another --add_vocabulary on it is one line; its Hugging Face
  export verifies (every whole word of the grown vocabulary through transformers' tokenizer)."""
  sources, base, config, _ = published
  config.to_json_file(str(tmp_path / "bert_config.json"))
  model_dir = tmp_path / "run"
  command = ["train.py", f"--config={tmp_path / 'bert_config.json'}", f"--vocab_file={base.path}",
             f"--init_checkpoint={sources['hf']}", f"--input_files={domain}",
             f"--model_dir={model_dir}", f"--add_vocabulary={ADDED}", *TINY]
  first = run([*command, "--train_steps=2"])
  assert first.returncode == 0, first.stderr[-3000:]
  assert f"{UNUSED} into [unusedK] slots, {ADDED - UNUSED} appended" in first.stderr
  assert "the optimizer and the learning-rate schedule start afresh" in first.stderr
  assert "verified: savedmodel ids equal" in first.stdout + first.stderr
  grown = Vocabulary(str(model_dir / "vocab.txt"))
  assert len(grown) == len(base) + ADDED - UNUSED
  again = run([*command, "--train_steps=4", "--noserving_export"])
  assert again.returncode == 0, again.stderr[-3000:]
  assert "grew its vocabulary at its start" in again.stderr and "into [unusedK]" not in again.stderr
  assert "Resumed from the checkpoint at step 2" in again.stderr
  twice = run([*command[:-len(TINY) - 1], "--add_vocabulary=40", *TINY, "--train_steps=6"])
  assert twice.returncode == 2
  assert twice.stderr.strip().splitlines()[-1].startswith(
      f"error: --add_vocabulary=40: {model_dir} has checkpoints of a model of a vocabulary "
      f"grown by --add_vocabulary={ADDED}; a vocabulary grows once")
  exported = run(["-m", "bert_tf.export", f"--model_dir={model_dir}", "--format=hf",
                  f"--output={tmp_path / 'hf'}"])
  assert exported.returncode == 0, exported.stderr[-3000:]
  assert "verified: hf ids equal" in exported.stdout + exported.stderr
  assert open(tmp_path / "hf" / "vocab.txt").read() == open(model_dir / "vocab.txt").read()


@pytest.mark.e2e
def test_bad_vocabularies_are_one_line(published, domain, tmp_path):
  sources, base, config, _ = published
  bad = tmp_path / "vocab.txt"
  bad.write_text("".join(t + "\n" for t in base.tokens if t != "[MASK]"))
  result = run(["train.py", f"--vocab_file={bad}", f"--init_checkpoint={sources['hf']}",
                f"--input_files={domain}", f"--model_dir={tmp_path / 'run'}",
                "--add_vocabulary=5", *TINY, "--train_steps=2"])
  assert result.returncode == 2, result.stderr[-2000:]
  assert result.stderr.strip().splitlines()[-1] == (
      f"error: vocabulary {bad} lacks the special tokens [MASK]")


def test_grow_state_refuses_a_vocabulary_that_is_not_a_growth(published, tmp_path):
  _, base, _, state = published
  other = tmp_path / "other.txt"
  other.write_text("".join(t + "\n" for t in [*base.tokens[:30], "zzz", *base.tokens[31:]]))
  with pytest.raises(UserError, match="is not .* grown"):
    grown_embeddings.grow_state(state, base, Vocabulary(str(other)), True)


@pytest.mark.e2e
def test_a_bert_tf_run_continues_from_its_weights_alone_on_a_new_schedule(
    finished_run, data_dir, domain, tmp_path):
  """--init_weights_only: the run's final weights, step 0 and a fresh optimizer with its own
  warm-up, on another corpus; without it, the run would go on at its step (phase 2)."""
  source, _ = finished_run
  model_dir = tmp_path / "adapted"
  result = run(["train.py", f"--data_dir={data_dir}", f"--init_checkpoint={source}",
                f"--vocab_file={os.path.join(source, 'vocab.txt')}", "--init_weights_only",
                f"--input_files={domain}", f"--model_dir={model_dir}", "--config=bert_tiny",
                *TINY, "--train_steps=2", "--noserving_export"])
  assert result.returncode == 0, result.stderr[-3000:]
  assert (f"Initialising from {source} (a bert_tf model_dir): its weights; the optimizer and "
          "the learning-rate schedule start afresh (warm-up 1 step)") in result.stderr
  assert "Going on from" not in result.stderr
  assert tf.train.latest_checkpoint(str(model_dir / "checkpoints")).endswith("ckpt-2")

"""Corpora mixed by weight (--input_weights, `bert_tf/data/mixture.py`) on the built-in corpus
cut into two groups (its first two files, about 235 KB, and its last two, about 180 KB): the
shares realised, NotNext partners within each group, the exact restart (packed too), the
held-out share of each group, the audit's shares, a run that records and resumes the mixture,
bad input.

Which group an example's text comes from is told by its tokens: a token that occurs in one
group's files only cannot appear in an example of the other group (the masked positions given
back their true tokens)."""

import dataclasses
import glob
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import audit
from bert_tf.data import builtin_corpus, corpus, holdout, input_plan, stream_position
from bert_tf.data.data_position import DataPosition
from bert_tf.data.data_settings import MixtureConfig
from bert_tf.data.pipeline import pretraining_dataset
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.prepare import PrepareConfig
from bert_tf.training import resizing, trainer
from bert_tf.training.train_settings import TrainConfig
from helpers import one_layer_config, run

WEIGHTS = (3, 1)
SEQ, PREDICTIONS, BATCH, BATCHES = 32, 5, 64, 24
FAST = dict(document_shuffle_buffer=100, example_shuffle_buffer=200)
FRACTION = 0.2


@pytest.fixture(scope="module")
def groups(tmp_path_factory, corpus_pattern):
  """The two groups' directories, and --input_files naming them as two groups."""
  directory = tmp_path_factory.mktemp("groups")
  files = sorted(glob.glob(corpus_pattern))
  for name, group in (("first", files[:2]), ("last", files[2:])):
    os.mkdir(directory / name)
    for path in group:
      shutil.copy(path, directory / name)
  return [str(directory / "first"), str(directory / "last")], (
      f"{directory / 'first' / '*.txt'},{directory / 'last' / '*.txt'}")


def mixed(input_files, vocab_file, **options):
  defaults = dict(seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, batch_size=BATCH)
  return pretraining_dataset(input_files, vocab_file, weights=WEIGHTS, seed=7,
                             **{**defaults, **FAST, **options})


def as_numpy(dataset, batches):
  return [tf.nest.map_structure(lambda t: t.numpy(), batch) for batch in dataset.take(batches)]


def concatenated(batches):
  return tf.nest.map_structure(lambda *arrays: np.concatenate(arrays), *batches)


def restored_tokens(features, labels, weights):
  """Each example's real token ids, the masked positions given back their true ids."""
  token_ids = features["token_ids"].copy()
  rows, slots = np.nonzero(weights["mlm"])
  token_ids[rows, features["masked_positions"][rows, slots]] = labels["mlm"][rows, slots]
  return [set(row[:n].tolist()) for row, n in zip(token_ids, features["padding_mask"].sum(1))]


def token_sets(vocab_file, texts: list[str]) -> list[set[int]]:
  """The token ids of each text (the files of a group, documents...)."""
  tokenizer = Vocabulary(vocab_file).tokenizer(True)
  return [set(tokenizer.tokenize(tf.strings.split(text, "\n")).flat_values.numpy().tolist())
          for text in texts]


def group_text(directory: str) -> str:
  return "\n".join(open(path, encoding="utf-8").read()
                   for path in sorted(glob.glob(os.path.join(directory, "*.txt"))))


@pytest.fixture(scope="module")
def stream(groups, vocab_file, data_dir):
  """BATCHES batches of the mixed stream, with positions and the facts of the pairs."""
  _, input_files = groups
  return as_numpy(mixed(input_files, vocab_file, data_dir=data_dir, with_positions=True,
                        with_pairs=True), BATCHES)


def test_realised_shares_follow_the_weights(stream):
  group = concatenated([facts["group"] for *_, facts in stream])
  share = np.mean(group == 0)
  # 1,536 draws of p = 0.75: a standard deviation of 0.011.
  assert abs(share - WEIGHTS[0] / sum(WEIGHTS)) < 0.035, share


def test_every_example_and_its_negatives_come_from_its_own_group(groups, stream, vocab_file):
  first, last = token_sets(vocab_file, [group_text(d) for d in groups[0]])
  only_in = (first - last, last - first)  # tokens of one group's files alone
  features, labels, weights, facts = concatenated(stream)
  tokens = restored_tokens(features, labels, weights)
  own = [0, 0]
  for example_tokens, group in zip(tokens, facts["group"]):
    assert not example_tokens & only_in[1 - group], "a token of the other group's text"
    own[group] += bool(example_tokens & only_in[group])
  counts = np.bincount(facts["group"], minlength=2)
  assert min(np.bincount(facts["group"][facts["is_next"] == 0], minlength=2)) > 100
  # The test could fail: many examples show a token that only their group's text has.
  assert own[0] > 0.3 * counts[0] and own[1] > 0.3 * counts[1], (own, counts)
  # NotNext's B is another document of the same window of the same group's stream.
  not_next = facts["is_next"] == 0
  assert (facts["document_a"][not_next] != facts["document_b"][not_next]).all()


def test_a_restart_anywhere_gives_the_same_batches(groups, stream, vocab_file, data_dir):
  """The data position records each group's position and the choices' (a vector a replica);
  the stream started after batch k gives what the uninterrupted stream gave after it."""
  _, input_files = groups
  position = DataPosition(1, width=len(WEIGHTS) + 1)
  k = 17
  position.record(tf.constant(stream[k][0][stream_position.FEATURE]))
  start = position.start(1, 0)
  assert start[-1] == (k + 1) * BATCH  # the choices: one per example
  # Each group's stream starts inside a piece: the restart recomputes that piece up to it.
  assert all(stream_position.decode(key)[2] > 0 for key in start[:-1]), start
  restarted = as_numpy(mixed(input_files, vocab_file, data_dir=data_dir, with_positions=True,
                             with_pairs=True, start_position=start), 2)
  for again, uninterrupted in zip(restarted, stream[k + 1:k + 3]):
    tf.nest.map_structure(np.testing.assert_array_equal, again, uninterrupted)


@pytest.mark.e2e
def test_a_packed_mixture_restarts_after_its_last_batch(vocab_file, data_dir):
  """Packed (--packing), a mixed stream's batch is a run of consecutive examples too, its
  position each entry's largest: started after batch k it gives the batches that followed.
  The groups: the files of the built-in corpus cut into two-sentence documents, which pack
  several pairs a row at 64 tokens."""
  directory = os.path.dirname(builtin_corpus.corpus_pattern(data_dir, sentences_per_document=2))
  input_files = ",".join(os.path.join(directory, f"pydoc_topics-{files}-*.txt")
                         for files in ("0[01]", "0[23]"))
  packed = dict(data_dir=data_dir, with_positions=True, packing=True, batch_size=8,
                seq_length=64, max_predictions_per_seq=10)
  stream = as_numpy(mixed(input_files, vocab_file, **packed), 5)
  assert sum(weights["nsp"].sum() for _, _, weights in stream) > 1.1 * 5 * 8  # shared rows
  position = DataPosition(1, width=len(WEIGHTS) + 1)
  position.record(tf.constant(stream[2][0][stream_position.FEATURE]))
  restarted = as_numpy(mixed(input_files, vocab_file, start_position=position.start(1, 0),
                             **packed), 2)
  for again, uninterrupted in zip(restarted, stream[3:], strict=True):
    tf.nest.map_structure(np.testing.assert_array_equal, again, uninterrupted)


def test_each_group_holds_out_its_share(groups, vocab_file, data_dir):
  """--eval_fraction holds out documents of each group: the held-out stream draws from both
  groups as weighted, and shows no token that only the trained documents have."""
  documents = {True: [], False: []}
  for directory in groups[0]:
    for path in sorted(glob.glob(os.path.join(directory, "*.txt"))):
      texts = tf.strings.reduce_join(corpus.documents_from_text(
          tf.io.read_file(path), "sentence_per_line"), axis=1, separator="\n")
      for text, is_held_out in zip(texts.numpy(), holdout.held_out_mask(texts, FRACTION)):
        documents[bool(is_held_out)].append(text.decode())
  held_out_tokens, trained_tokens = token_sets(
      vocab_file, ["\n".join(documents[True]), "\n".join(documents[False])])
  only_trained = trained_tokens - held_out_tokens
  assert len(only_trained) > 500
  _, input_files = groups
  batches = as_numpy(mixed(input_files, vocab_file, data_dir=data_dir, with_pairs=True,
                           holdout=holdout.Holdout(FRACTION, held_out=True)), 8)
  features, labels, weights, facts = concatenated(batches)
  assert not set().union(*restored_tokens(features, labels, weights)) & only_trained
  assert abs(np.mean(facts["group"] == 0) - WEIGHTS[0] / sum(WEIGHTS)) < 0.06


def config_of(groups, tmp_path, vocab_file, data_dir, **settings):
  _, input_files = groups
  return TrainConfig(
      model_dir=str(tmp_path / "run"), data_dir=data_dir, vocab_file=vocab_file,
      input_files=input_files, input_weights=",".join(map(str, WEIGHTS)),
      config=one_layer_config(vocab_file), seq_length=SEQ, max_predictions_per_seq=PREDICTIONS,
      global_batch_size=8, train_steps=4, checkpoint_every=2, warmup_steps=2, eval_steps=1,
      verbose=False, seed=5, serving_export=False, **FAST, **settings)


@pytest.mark.parametrize("packing", [False, pytest.param(True, marks=pytest.mark.e2e)])
def test_the_audit_prints_each_groups_share(groups, tmp_path, vocab_file, data_dir, capsys,
                                            packing):
  """Packed too: a packed row's pairs carry the facts of their pairs."""
  run = dataclasses.replace(config_of(groups, tmp_path, vocab_file, data_dir), packing=packing)
  config = audit.AuditConfig(**dataclasses.asdict(run), num_examples=1024)
  audit.show(config)
  (line,) = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("group_shares")]
  names = [f"{directory}/*.txt" for directory in groups[0]]
  shares = dict(item.rsplit(" ", 1) for item in line.split(None, 1)[1].split(", "))
  assert list(shares) == names
  assert abs(float(shares[names[0]]) - 0.75) < 0.04 and abs(
      sum(map(float, shares.values())) - 1) < 1e-3


def checkpointed_position(model_dir, step):
  reader = tf.train.load_checkpoint(os.path.join(model_dir, "checkpoints", f"ckpt-{step}"))
  return reader.get_tensor("data_position/.ATTRIBUTES/VARIABLE_VALUE")


@pytest.mark.e2e
def test_a_run_records_the_mixture_and_resumes_where_it_stood(groups, tmp_path, vocab_file,
                                                              data_dir):
  """A mixed run's checkpoints hold where each group's stream and the choices stood; a re-run
  goes on from there: its positions are the uninterrupted stream's, batch after batch. New
  weights start a new stream; another number of groups is refused."""
  config = config_of(groups, tmp_path, vocab_file, data_dir)
  trainer.train(config)
  trainer.train(dataclasses.replace(config, train_steps=6))
  _, input_files = groups
  uninterrupted = as_numpy(pretraining_dataset(
      input_files, vocab_file, seq_length=SEQ, max_predictions_per_seq=PREDICTIONS,
      batch_size=8, weights=WEIGHTS, seed=5, data_dir=data_dir, with_positions=True, **FAST), 6)
  for step in (2, 4, 6):
    expected = uninterrupted[step - 1][0][stream_position.FEATURE].max(axis=0)
    np.testing.assert_array_equal(checkpointed_position(config.model_dir, step), [expected])
  # New weights: a new stream, each group from the start of its next epoch, the draws anew.
  trainer.train(dataclasses.replace(config, input_weights="1,1", train_steps=8))
  (*keys, draws), = checkpointed_position(config.model_dir, 8)
  assert [stream_position.decode(key)[0] for key in keys] == [1, 1] and draws == 2 * 8 - 1
  with pytest.raises(UserError, match="a mixture of 2 group.* one corpus: .*new --model_dir"):
    trainer.train(dataclasses.replace(config, input_weights="", train_steps=8))


def test_a_mixed_run_goes_on_on_any_number_of_replicas(groups, tmp_path, vocab_file, data_dir):
  """A mixture's positions saved by two replicas in two pipelines: a run of as many goes on
  from them as saved; a run of one deals each group's unread pieces within the group and
  draws on from the largest number drawn (the documents counted: test_resizing.py); a changed
  stream starts every group at its next epoch on any number, the draws from their first."""
  plan = input_plan.from_settings(config_of(groups, tmp_path, vocab_file, data_dir),
                                  Vocabulary(vocab_file))
  two = DataPosition(2, 2, width=len(WEIGHTS) + 1)
  saved_keys = [[stream_position.encode(0, 0, 5), stream_position.encode(1, 0, 2), 40],
                [stream_position.encode(0, 0, 9), -1, 41]]
  two.last_consumed.assign(saved_keys)
  saved = tf.train.Checkpoint(data_position=two.saved, data_layout=two.saved_layout).save(
      str(tmp_path / "two"))
  same = DataPosition(2, 2, width=len(WEIGHTS) + 1)
  tf.train.Checkpoint(data_position=same.saved).restore(saved).expect_partial()
  assert resizing.carry_on(same, saved, plan) == ""
  assert same.start(2, 1) == [stream_position.encode(0, 0, 10), 0, 42]
  one = DataPosition(1, 1, width=len(WEIGHTS) + 1)
  tf.train.Checkpoint(data_position=one.saved).restore(saved).expect_partial()
  assert resizing.carry_on(one, saved, plan).startswith(
      "2 replicas -> 1 (input pipelines 2 -> 1): the ")
  assert [group.carried_epoch for group in one.layout.groups] == [0, 1]
  assert one.start(1, 0)[-1] == 42
  one.start_all_at(stream_position.encode(2, 0, 0))
  assert one.start(1, 0) == [stream_position.encode(2, 0, 0)] * len(WEIGHTS) + [0]


@pytest.mark.parametrize("input_files, weights, message", [
    ("a/*.txt,b/*.txt", "4", "1 weight.* for 2 group"),
    ("a/*.txt|c/*.txt,b/*.txt", "4,1,1", "3 weight.* for 2 group"),
    ("a/*.txt,b/*.txt", "4,0", "positive"),
    ("a/*.txt,b/*.txt", "4,-1", "positive"),
    ("a/*.txt,b/*.txt", "4,x", "not a comma list of numbers"),
    ("a/*.txt,b/*.txt", "4,nan", "positive"),
])
def test_weights_that_do_not_fit_the_groups(input_files, weights, message):
  with pytest.raises(UserError, match=message):
    MixtureConfig(input_files=input_files, input_weights=weights).check()


def test_a_group_that_matches_no_file_is_named(groups, tmp_path):
  (first, last), _ = groups
  with pytest.raises(UserError, match=r"group 2 of --input_files \(.*nothing/\*.txt\): no "
                                      "file matches"):
    corpus.list_groups(f"{first}/*.txt|{last}/*.txt,{tmp_path}/nothing/*.txt")
  with pytest.raises(UserError, match="in groups 1 and 2"):
    corpus.list_groups(f"{first}/*.txt,{first}/*00*.txt")
  assert corpus.list_files(f"{first}/*.txt|{last}/*.txt") == corpus.list_files(
      f"{first}/*.txt,{last}/*.txt")


def test_a_group_too_small_to_pair_is_named(groups, tmp_path, vocab_file, data_dir):
  (one := tmp_path / "one").mkdir()
  (one / "a.txt").write_text("A single document.\nOf two sentences.\n")
  config = dataclasses.replace(config_of(groups, tmp_path, vocab_file, data_dir),
                               input_files=f"{groups[0][0]}/*.txt,{one}/*.txt")
  with pytest.raises(UserError, match=r"group 2 of --input_files \(.*one/\*.txt\): the corpus "
                                      "has only 1 document"):
    trainer.train(config)
  with pytest.raises(UserError, match="records are not mixed"):
    dataclasses.replace(config, input_format="tfrecord").check()
  with pytest.raises(UserError, match="bert_tf.prepare writes one corpus's records"):
    PrepareConfig(**dataclasses.asdict(config), output=str(tmp_path / "records")).check()


def test_bad_weights_on_the_command_line(groups, tmp_path, vocab_file, data_dir):
  _, input_files = groups
  result = run(["train.py", f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
                f"--model_dir={tmp_path / 'run'}", f"--input_files={input_files}",
                "--input_weights=4,1,2"])
  assert result.returncode == 2 and "Traceback" not in result.stderr
  assert result.stderr.strip().splitlines()[-1] == (
      "error: --input_weights gives 3 weight(s) for 2 group(s) of --input_files (one per "
      "comma-separated item; the patterns of one group are separated by `|`)")

"""`python -m bert_tf.prepare`: the text pipeline's examples written as original BERT's
records, read back by `records_dataset` (the built-in corpus and its vocabulary)."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.audit import Statistics
from bert_tf.data import records, stream_position
from bert_tf.data.pipeline import pretraining_dataset
from bert_tf.data.record_dataset import records_dataset
from bert_tf.data.remasking import restore
from bert_tf.data.tokenization import Vocabulary
from bert_tf.data.vocabulary_learner import build_vocabulary
from bert_tf.errors import UserError
from bert_tf.prepare import DESCRIPTION, PrepareConfig, prepare_records, record_file_names
from helpers import original_spec, run

# Every test writes records through the pipeline: minutes in all.
pytestmark = pytest.mark.e2e

SEQ, PREDICTIONS, EPOCHS, FILES = 64, 10, 2, 3
SETTINGS = dict(seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, seed=4,
                document_shuffle_buffer=100, example_shuffle_buffer=200)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, corpus_pattern, vocab_file, data_dir):
  """Two epochs of the built-in corpus written into three files; prepare.json's contents."""
  directory = tmp_path_factory.mktemp("prepared")
  config = PrepareConfig(input_files=corpus_pattern, data_dir=data_dir, vocab_file=vocab_file,
                         output=str(directory / "records"), model_dir=str(directory / "run"),
                         dupe_factor=EPOCHS, num_output_files=FILES, **SETTINGS)
  return config.output, prepare_records(config)


@pytest.fixture(scope="module")
def pipeline_examples(corpus_pattern, vocab_file, data_dir):
  """The first two epochs of the text pipeline with the same settings, as one batch."""
  end = stream_position.encode(EPOCHS, 0, 0)
  batches = []
  for features, labels, weights in pretraining_dataset(
      corpus_pattern, vocab_file, batch_size=256, data_dir=data_dir, with_positions=True,
      **SETTINGS).as_numpy_iterator():
    rows = features.pop(stream_position.FEATURE) < end
    batches.append(tf.nest.map_structure(lambda a, rows=rows: a[rows], (features, labels, weights)))
    if not rows.all():
      break
  return tf.nest.map_structure(lambda *arrays: np.concatenate(arrays), *batches)


def _file_examples(files, vocab_file, **options):
  batches = [b for b in records_dataset(files, vocab_file, batch_size=256, repeat=False,
                                        shuffle=False, **options).as_numpy_iterator()]
  return tf.nest.map_structure(lambda *arrays: np.concatenate(arrays), *batches)


def _read_back(directory, vocab_file, **options):
  """Every record of the directory's files, read unshuffled: interleaved round-robin, the
  turn prepare dealt them in."""
  return _file_examples(record_file_names(directory, FILES), vocab_file, **options)


def test_read_back_equals_the_pipelines_examples(prepared, pipeline_examples, vocab_file):
  directory, description = prepared
  examples = _read_back(directory, vocab_file)
  assert description["records"] == len(pipeline_examples[1]["nsp"]) > 2500
  assert tf.nest.map_structure(np.array_equal, examples, pipeline_examples) == (
      tf.nest.map_structure(lambda _: True, examples))
  assert set(examples[1]["nsp"].tolist()) == {0, 1}  # both labels, converted both ways


def test_records_are_original_berts(prepared, pipeline_examples):
  directory, description = prepared
  assert sorted(os.listdir(directory)) == [
      "part-00000-of-00003.tfrecord", "part-00001-of-00003.tfrecord",
      "part-00002-of-00003.tfrecord", DESCRIPTION]
  with open(os.path.join(directory, DESCRIPTION)) as f:
    assert json.load(f) == description
  assert (description["seq_length"], description["max_predictions_per_seq"]) == (SEQ,
                                                                                 PREDICTIONS)
  features, labels, weights = pipeline_examples
  path = record_file_names(directory, FILES)[0]
  for row, record in enumerate(tf.data.TFRecordDataset(path).take(20)):
    parsed = tf.io.parse_single_example(record, original_spec(SEQ, PREDICTIONS))
    stream_row = row * FILES  # the first file holds examples 0, 3, 6, ...
    assert parsed["input_ids"].numpy().tolist() == features["token_ids"][stream_row].tolist()
    assert parsed["input_mask"].numpy().tolist() == features["padding_mask"][stream_row].tolist()
    assert parsed["masked_lm_weights"].numpy().tolist() == weights["mlm"][stream_row].tolist()
    assert parsed["next_sentence_labels"].numpy()[0] == 1 - labels["nsp"][stream_row]


def _statistics(examples, vocabulary):
  features, labels, weights = examples
  facts = {"document_a": np.zeros_like(labels["nsp"]), "document_b": np.ones_like(labels["nsp"]),
           "is_short": np.zeros_like(labels["nsp"]), "window": np.zeros_like(labels["nsp"])}
  statistics = Statistics(vocabulary.mask_id)
  statistics.add(features, labels, weights, facts)
  return statistics.summary()


def test_remasked_records_have_the_pipelines_statistics(prepared, pipeline_examples,
                                                        vocab_file):
  directory, _ = prepared
  vocabulary = Vocabulary(vocab_file)
  remasked = _read_back(directory, vocab_file, remask=True, seed=9)
  pipeline = _statistics(pipeline_examples, vocabulary)
  realised = _statistics(remasked, vocabulary)
  # The same examples: the same token counts, labels and number of predictions.
  for name in ("examples", "mean_tokens", "padding_share", "is_next_share", "masked_share"):
    assert realised[name] == pipeline[name], name
  assert pipeline["is_next_share"] == pytest.approx(0.5, abs=0.03)
  # About 30,000 predictions each: a share's standard deviation is below 0.003; 0.015 is 5.
  for name, share in (("mask_token_share", 0.8), ("random_token_share", 0.1),
                      ("kept_share", 0.1)):
    assert realised[name] == pytest.approx(pipeline[name], abs=0.015), name
    assert realised[name] == pytest.approx(share, abs=0.015), name
  # Other masks on the same true tokens.
  def restored(examples):
    features, labels, weights = examples
    return restore(features["token_ids"], features["masked_positions"], labels["mlm"],
                   weights["mlm"]).numpy()
  assert np.array_equal(restored(remasked), restored(pipeline_examples))
  same = np.mean(np.all(remasked[0]["masked_positions"] == pipeline_examples[0][
      "masked_positions"], axis=1))
  assert same < 0.05


@pytest.fixture(scope="module")
def small_vocabularies(corpus_pattern, data_dir, tmp_path_factory):
  """Vocabularies of about 1,000 tokens learned from the corpus, uncased and cased: many
  words of several pieces."""
  directory = tmp_path_factory.mktemp("small_vocabularies")
  paths = {}
  for name, lower_case in (("uncased", True), ("cased", False)):
    paths[name] = str(directory / f"{name}.txt")
    build_vocabulary(corpus_pattern, paths[name], vocab_size=1000, lower_case=lower_case)
  return paths


@pytest.fixture(scope="module")
def small_vocabulary_records(small_vocabularies, corpus_pattern, data_dir, tmp_path_factory):
  """512 examples of the pipeline with the small uncased vocabulary, as original records."""
  features, labels, weights = next(pretraining_dataset(
      corpus_pattern, small_vocabularies["uncased"], batch_size=512, data_dir=data_dir,
      **SETTINGS).as_numpy_iterator())
  path = str(tmp_path_factory.mktemp("small") / "records.tfrecord")
  with tf.io.TFRecordWriter(path) as writer:
    for record in records.serialize(features, labels, weights).numpy():
      writer.write(record)
  return path


def test_whole_word_remasking_keeps_words_whole(small_vocabularies, small_vocabulary_records):
  vocab_file = small_vocabularies["uncased"]
  features, labels, weights = _file_examples(small_vocabulary_records, vocab_file, remask=True,
                                             whole_word_masking=True)
  vocabulary = Vocabulary(vocab_file)
  continuation = np.array(vocabulary.continuation_flags())
  token_ids = restore(features["token_ids"], features["masked_positions"], labels["mlm"],
                      weights["mlm"]).numpy()
  chosen = np.zeros_like(token_ids, bool)
  rows, slots = np.nonzero(weights["mlm"])
  chosen[rows, features["masked_positions"][rows, slots]] = True
  # A `##` piece is chosen exactly when the piece before it is: words are chosen whole (but
  # for a segment cut inside a word, which starts with a `##` piece of its own).
  follows = continuation[token_ids[:, 1:]] & ~np.isin(token_ids[:, :-1],
                                                       [vocabulary.cls_id, vocabulary.sep_id])
  assert np.all(chosen[:, 1:][follows] == chosen[:, :-1][follows])
  assert follows[chosen[:, 1:]].sum() > 100  # words of several pieces were masked


def test_a_cased_vocabulary_does_not_fit(small_vocabularies, small_vocabulary_records):
  records_dataset(small_vocabulary_records, small_vocabularies["uncased"])  # it fits
  with pytest.raises(UserError, match=f"vocabulary {small_vocabularies['cased']}") as error:
    records_dataset(small_vocabulary_records, small_vocabularies["cased"])
  assert "\n" not in str(error.value)


def test_command_without_output_is_one_line(vocab_file, data_dir):
  result = run(["-m", "bert_tf.prepare", f"--vocab_file={vocab_file}", f"--data_dir={data_dir}"])
  assert result.returncode == 2
  lines = [line for line in result.stderr.splitlines() if "cuInit" not in line]
  assert lines == ["error: --output is required: the directory to write the records to"]

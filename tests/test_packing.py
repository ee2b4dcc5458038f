"""Packing (docs/pipeline.md#packing): several pairs a row, each the pair an unpacked row holds,
in a run of consecutive examples that resumes exactly; the model gives each pair of a packed
row what it gives the pair alone, so the losses are the unpacked ones."""

import collections
import dataclasses
import os
import pickle
import signal

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.audit import AuditConfig, audit, pairs_present
from bert_tf.data import builtin_corpus, packing, records
from bert_tf.data.record_dataset import records_dataset
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.runtime import precision
from bert_tf.training.trainer import TrainConfig, train
from helpers import (
  RESUMABLE_CONFIG,
  TWO_CPUS_TINY_BERT,
  one_layer_config,
  randomised_model,
  resumable_run,
  run,
  run_script,
  start,
  wait_for_checkpoint,
  weights,
)

ROWS, SEQ, PREDICTIONS = 8, 64, 10
FAST = dict(document_shuffle_buffer=100, example_shuffle_buffer=200)


@pytest.fixture(scope="module")
def short_documents(data_dir):
  """The built-in corpus cut into documents of two sentences: most pairs are short."""
  return builtin_corpus.corpus_pattern(data_dir, sentences_per_document=2)


def _dataset(pattern, vocab_file, data_dir, **options):
  options = {**dict(seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, batch_size=ROWS,
                    data_dir=data_dir, **FAST), **options}
  return bert_tf.pretraining_dataset(pattern, vocab_file, **options)


def _numpy(batches):
  return [tf.nest.map_structure(lambda t: t.numpy(), batch) for batch in batches]


def _unpacked_pairs(features, labels, weights):
  """Each row's pair: (tokens, segments, {position: (label, weight)}, is_next)."""
  pairs = []
  for row in range(len(labels["nsp"])):
    length = features["padding_mask"][row].sum()
    masked = {int(p): (int(label), float(w)) for p, label, w in zip(
        features["masked_positions"][row], labels["mlm"][row], weights["mlm"][row]) if w}
    pairs.append((tuple(features["token_ids"][row][:length]),
                  tuple(features["segment_ids"][row][:length]), tuple(sorted(masked.items())),
                  int(labels["nsp"][row])))
  return pairs


def _packed_pairs(features, labels, weights):
  """Each packed pair, read back as `_unpacked_pairs` reads an unpacked row's; checks that a
  pair's tokens are one run from its [CLS], numbered, positioned from 0."""
  pairs = []
  for row in range(len(labels["nsp"])):
    for slot in np.flatnonzero(pairs_present(features, labels)[row]):
      start = features["cls_positions"][row][slot]
      (where,) = np.nonzero(features["pair_ids"][row] == slot + 1)
      assert where[0] == start and np.all(np.diff(where) == 1)
      np.testing.assert_array_equal(features["position_ids"][row][where], np.arange(len(where)))
      masked = {int(p) - start: (int(label), float(w)) for p, label, w in zip(
          features["masked_positions"][row], labels["mlm"][row], weights["mlm"][row])
          if w and start <= p <= where[-1]}
      pairs.append((tuple(features["token_ids"][row][where]),
                    tuple(features["segment_ids"][row][where]), tuple(sorted(masked.items())),
                    int(labels["nsp"][row][slot])))
  return pairs


@pytest.mark.parametrize("stream", [{}, dict(nsp=False, whole_word_masking=True)],
                         ids=["nsp", "mlm_only_whole_words"])
def test_packed_batches_hold_runs_of_consecutive_pairs(short_documents, vocab_file, data_dir,
                                                       stream):
  """Each packed batch holds exactly the next run of the unpacked stream's pairs (masks,
  labels and all), padding falls from most of each row to a few percent, and a row's tokens,
  predictions and pairs stay within its shape; so too MLM only with whole-word masks."""
  unpacked = _numpy(_dataset(short_documents, vocab_file, data_dir, batch_size=160,
                             **stream).take(1))
  stream_pairs = [pair for batch in unpacked for pair in _unpacked_pairs(*batch)]
  packed = _numpy(_dataset(short_documents, vocab_file, data_dir, packing=True,
                           **stream).take(6))
  taken = 0
  for features, labels, sample_weights in packed:
    pairs = _packed_pairs(features, labels, sample_weights)
    assert collections.Counter(pairs) == collections.Counter(
        stream_pairs[taken:taken + len(pairs)])
    taken += len(pairs)
    assert features["token_ids"].shape == (ROWS, SEQ)
    assert labels["nsp"].shape == (ROWS, packing.max_pairs(SEQ))
    np.testing.assert_array_equal(features["padding_mask"], features["pair_ids"] > 0)
  assert taken > 6 * ROWS  # more than one pair a row
  unpacked_padding = 1 - np.mean([f["padding_mask"].mean() for f, _, _ in unpacked])
  packed_padding = 1 - np.mean([f["padding_mask"].mean() for f, _, _ in packed])
  assert packed_padding < unpacked_padding / 2


def test_one_pass_packs_every_pair_once(short_documents, vocab_file, data_dir, tmp_path):
  """A finite stream's last batch is closed too, with only the rows that hold pairs."""
  corpus = tmp_path / "short.txt"
  text = open(tf.io.gfile.glob(short_documents)[0]).read()
  corpus.write_text(text[:text.index("\n\n", 12_000)] + "\n")
  one_pass = dict(repeat=False, seed=3)
  unpacked = [pair for batch in _numpy(_dataset(str(corpus), vocab_file, data_dir, **one_pass))
              for pair in _unpacked_pairs(*batch)]
  packed_batches = _numpy(_dataset(str(corpus), vocab_file, data_dir, packing=True,
                                   **one_pass))
  packed = [pair for batch in packed_batches for pair in _packed_pairs(*batch)]
  assert collections.Counter(packed) == collections.Counter(unpacked)
  last_features = packed_batches[-1][0]
  assert 0 < len(last_features["token_ids"]) and last_features["padding_mask"].any(axis=1).all()


def test_packed_stream_resumes_after_its_last_batch(short_documents, vocab_file, data_dir):
  """Started after a batch's largest stream position, the stream gives the batches that
  followed it: a packed batch is a run of consecutive examples."""
  options = dict(packing=True, with_positions=True)
  batches = _numpy(_dataset(short_documents, vocab_file, data_dir, **options).take(5))
  last = int(batches[1][0]["stream_position"].max())
  resumed = _numpy(_dataset(short_documents, vocab_file, data_dir, start_position=last + 1,
                            **options).take(3))
  for expected, got in zip(batches[2:], resumed, strict=True):
    tf.nest.map_structure(np.testing.assert_array_equal, expected, got)


def test_records_pack_as_text_does(short_documents, vocab_file, data_dir, tmp_path):
  """Original BERT's records (as `prepare` writes them) pack into the same rows: every
  record's pair once, its masks and labels kept."""
  batches = _numpy(_dataset(short_documents, vocab_file, data_dir, batch_size=20).take(3))
  path = str(tmp_path / "part.tfrecord")
  with tf.io.TFRecordWriter(path) as writer:
    for batch in batches:
      for record in records.serialize(*batch).numpy():
        writer.write(record)
  read = records_dataset(path, vocab_file, packing=True, batch_size=4, repeat=False,
                         shuffle=False)
  packed = [pair for batch in _numpy(read) for pair in _packed_pairs(*batch)]
  unpacked = [pair for batch in batches for pair in _unpacked_pairs(*batch)]
  assert len(unpacked) == 60 and collections.Counter(packed) == collections.Counter(unpacked)


def test_audit_counts_pairs_of_packed_rows(short_documents, vocab_file, data_dir, tmp_path):
  """`bert_tf.audit --packing`: the shares per pair, the padding and the pairs a row, and the
  facts of each packed pair (its documents, a short target); each row's text shows its
  pairs."""
  config = AuditConfig(data_dir=data_dir, vocab_file=vocab_file, model_dir=str(tmp_path),
                       input_files=short_documents, packing=True)
  texts, stats = audit(config, num_examples=64, show_examples=2, batch_size=32)
  assert stats["pairs_per_row"] > 1.5 and stats["examples"] > 96
  assert stats["padding_share"] < 0.1
  assert stats["masked_share"] == pytest.approx(0.15, abs=0.02)
  # Each NotNext's B is from another document; the documents are those of its pairs.
  assert stats["not_next_other_document_share"] == 1.0
  assert stats["examples"] / 2 < stats["documents"] < 2 * stats["examples"]
  assert len(texts) == 2 and all(" || " in text for text in texts)


@pytest.mark.parametrize("packed", [False, True], ids=["unpacked", "packed"])
def test_audit_of_mlm_only_counts_its_pairs(short_documents, vocab_file, data_dir, tmp_path,
                                            packed):
  """MLM only, the NSP weights are all 0: the audit finds the pairs by their tokens."""
  config = AuditConfig(data_dir=data_dir, vocab_file=vocab_file, model_dir=str(tmp_path),
                       input_files=short_documents, packing=packed, nsp=False)
  texts, stats = audit(config, num_examples=32, show_examples=2, batch_size=16)
  assert stats["examples"] >= 32 and 5 < stats["mean_tokens"] <= SEQ, stats
  assert stats["pairs_per_row"] > 1.5 if packed else "pairs_per_row" not in stats
  assert all(text.count("[CLS]") == text.count(" || ") + 1 > 0 for text in texts), texts


CONFIG = BertConfig(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=32)


def _row(token_ids, segment_ids, masked_positions, is_next, seq=16, slots=4):
  """One unpacked example, padded."""
  length = len(token_ids)
  features = {"token_ids": token_ids + [0] * (seq - length),
              "segment_ids": segment_ids + [0] * (seq - length),
              "padding_mask": [1] * length + [0] * (seq - length),
              "masked_positions": masked_positions + [0] * (slots - len(masked_positions))}
  labels = {"mlm": [5 + p for p in masked_positions] + [0] * (slots - len(masked_positions)),
            "nsp": is_next}
  weights = {"mlm": [1.0] * len(masked_positions) + [0.0] * (slots - len(masked_positions)),
             "nsp": 1.0}
  return tuple({name: np.asarray(value) for name, value in part.items()}
               for part in (features, labels, weights))


PAIRS = [_row([2, 11, 12, 3, 13, 3], [0, 0, 0, 0, 1, 1], [1, 4], 1),
         _row([2, 21, 22, 23, 3, 24, 25, 3], [0, 0, 0, 0, 0, 1, 1, 1], [2, 3, 6], 0),
         _row([2, 31, 3, 32, 33, 34, 35, 3], [0, 0, 0, 1, 1, 1, 1, 1], [5], 1)]


def _batches(pairs, packed: bool):
  examples = tf.data.Dataset.from_tensor_slices(tf.nest.map_structure(
      lambda *values: np.stack(values), *pairs))
  if packed:
    return packing.packed(examples, rows=2, keyed=False, finite=True)
  return examples.batch(len(pairs))


def test_each_pair_of_a_packed_row_gets_its_unpacked_outputs():
  """Every pair of a packed row gets from the encoder and both heads what it gets alone in an
  unpacked row; without the pairs' attention mask (one pair for all) it would not."""
  model = randomised_model(CONFIG)
  unpacked_x, _, _ = next(iter(_batches(PAIRS, packed=False)))
  packed_x, packed_y, packed_w = next(iter(_batches(PAIRS, packed=True)))
  assert int(packed_w["nsp"].numpy().sum()) == 3 and packed_x["token_ids"].shape[0] == 2
  alone, together = model(unpacked_x), model(packed_x)
  for row, slot, pair in [(0, 0, 0), (0, 1, 1), (1, 0, 2)]:  # best fit in 16: 6 + 8, then 8
    np.testing.assert_allclose(together["nsp"][row, slot], alone["nsp"][pair], atol=1e-5)
  # Row-major, the masked tokens of pairs 0, 1 and 2 in both layouts.
  mlm_alone = alone["mlm"].numpy()[np.stack([w["mlm"] for _, _, w in PAIRS]) > 0]
  mlm_together = together["mlm"].numpy()[packed_w["mlm"].numpy() > 0]
  np.testing.assert_allclose(mlm_together, mlm_alone, atol=1e-5)
  one_pair = {**packed_x, "pair_ids": tf.cast(packed_x["pair_ids"] > 0, tf.int32)}
  assert not np.allclose(model(one_pair)["nsp"][0, 1], alone["nsp"][1], atol=1e-2)


def test_packed_losses_and_metrics_are_the_unpacked_ones():
  """Evaluated on the same pairs, packed and unpacked give the same losses (MLM over masked
  tokens, NSP over pairs) and accuracies."""
  model = pretraining_model(CONFIG)
  compile_for_pretraining(model, "adam")
  unpacked, packed = (model.evaluate(_batches(PAIRS, packed=layout), steps=1, verbose=0,
                                     return_dict=True) for layout in (False, True))
  assert packed.keys() == unpacked.keys()
  for name, value in unpacked.items():
    assert packed[name] == pytest.approx(value, abs=1e-5), name


@pytest.mark.e2e
def test_packed_run_resumes_exactly_and_exports_the_same_bert(
    short_documents, vocab_file, data_dir, tmp_path):
  """A packed run (train.py --packing) killed after a checkpoint and run again ends with the
  weights of an uninterrupted one, and its export is the unpacked BERT's SavedModel, checked
  as every run's is."""
  whole, killed = str(tmp_path / "whole"), str(tmp_path / "killed")
  train(TrainConfig(model_dir=whole, data_dir=data_dir, vocab_file=vocab_file,
                    config=one_layer_config(vocab_file), input_files=short_documents,
                    packing=True, **{**RESUMABLE_CONFIG, "serving_export": True}))
  args = resumable_run(killed, data_dir, vocab_file, "--packing",
                       f"--input_files={short_documents}")
  process = start(args)
  wait_for_checkpoint([killed], 6, [process])
  process.send_signal(signal.SIGKILL)
  process.wait()
  result = run(args)
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Resumed from the checkpoint at step" in result.stderr
  expected, got = weights(whole), weights(killed)
  assert expected.keys() == got.keys()
  for name in expected:
    np.testing.assert_allclose(got[name], expected[name], atol=1e-5, err_msg=name)
  encoder = tf.saved_model.load(os.path.join(whole, "export"))
  assert "fill_mask" in encoder.signatures


def _one_step(model_weights, batch, accumulation_steps=1, config=CONFIG):
  """The weights after one SGD step (learning rate 1: the update is the gradient) on `batch`,
  from `model_weights`, the batch split into `accumulation_steps` accumulated parts."""
  model = pretraining_model(config)
  model.set_weights(model_weights)
  compile_for_pretraining(model, keras.optimizers.SGD(learning_rate=1.0),
                          gradient_accumulation_steps=accumulation_steps)
  model.train_step(tf.nest.map_structure(tf.convert_to_tensor, batch))  # eagerly: no tracing
  return model.get_weights()


def test_a_packed_step_is_the_unpacked_one_also_accumulated_and_in_half_precision():
  """One update on a packed batch is the update on its pairs unpacked, also when the packed
  rows are split into accumulated parts (each part holding another number of pairs and masked
  tokens: the losses are normalised over the whole batch). In bf16 and fp16 each pair's outputs
  are its unpacked ones within their rounding."""
  config = dataclasses.replace(CONFIG, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  initial = randomised_model(config, stddev=0.05).get_weights()
  unpacked, packed = (next(iter(_batches(PAIRS, packed=layout))) for layout in (False, True))
  expected = _one_step(initial, unpacked, config=config)
  for parts in (1, 2):
    for want, got in zip(expected, _one_step(initial, packed, parts, config), strict=True):
      np.testing.assert_allclose(got, want, atol=1e-5)
  random_weights = randomised_model(config).get_weights()
  for name in ("bf16", "fp16"):
    with precision.policy(name):
      model = pretraining_model(config)
    model.set_weights(random_weights)
    alone, together = model(unpacked[0]), model(packed[0])
    mlm_alone = alone["mlm"].numpy()[np.stack([w["mlm"] for _, _, w in PAIRS]) > 0]
    mlm_together = together["mlm"].numpy()[packed[2]["mlm"].numpy() > 0]
    # bf16's rounding is 2^-8 of a value (fp16's 2^-11); pairs run together (the mask off)
    # differ by 0.2 of the largest logit (measured: packed and unpacked give the same logits).
    np.testing.assert_allclose(mlm_together, mlm_alone, atol=1e-2 * np.abs(mlm_alone).max(),
                               err_msg=name)
    for row, slot, pair in [(0, 0, 0), (0, 1, 1), (1, 0, 2)]:
      np.testing.assert_allclose(together["nsp"][row, slot], alone["nsp"][pair], atol=1e-2,
                                 err_msg=name)


# One SGD step (learning rate 1: the update is the gradient) on the three pairs of `PAIRS` (the
# two batches pickled in the file given): unpacked on one device, and packed in two rows over
# two replicas (one row each: two pairs on one replica, one on the other), dropout off; prints
# the largest difference of the updates over the largest update, and of the losses.
TWO_REPLICAS_PACKED = TWO_CPUS_TINY_BERT + r"""
import pickle, sys
with open(sys.argv[1], "rb") as file:
  unpacked_batch, packed_batch = pickle.load(file)
keras.utils.set_random_seed(0)
initial = pretraining_model(CONFIG).get_weights()

def update(strategy, batch):
  with strategy.scope():
    model = pretraining_model(CONFIG)
    model.set_weights(initial)
    compile_for_pretraining(model, keras.optimizers.SGD(learning_rate=1.0))
  logs = model.fit(tf.data.Dataset.from_tensors(batch).repeat(), steps_per_epoch=1,
                   verbose=0).history
  return [w - w0 for w, w0 in zip(model.get_weights(), initial)], logs

alone, alone_logs = update(tf.distribute.get_strategy(), unpacked_batch)
packed, packed_logs = update(tf.distribute.MirroredStrategy(["CPU:0", "CPU:1"]), packed_batch)
scale = max(np.abs(d).max() for d in alone)
print(json.dumps({"scale": float(scale),
                  "update": float(max(np.abs(a - p).max() for a, p in zip(alone, packed)) / scale),
                  "losses": float(max(abs(alone_logs[k][0] - packed_logs[k][0])
                                      for k in alone_logs if "loss" in k))}))
"""


@pytest.mark.e2e
def test_packed_rows_over_two_replicas_make_the_unpacked_step(tmp_path):
  """Two replicas, one packed row each (two pairs and one): the step is the one-device step on
  the pairs unpacked, the losses normalised over the global batch's pairs and masked tokens."""
  batches = tmp_path / "batches.pickle"
  batches.write_bytes(pickle.dumps([_numpy(_batches(PAIRS, packed=layout).take(1))[0]
                                    for layout in (False, True)]))
  results = run_script(TWO_REPLICAS_PACKED, str(batches))
  assert results["scale"] > 1e-3
  assert results["update"] < 1e-5 and results["losses"] < 1e-5, results

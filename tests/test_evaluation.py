"""Held-out evaluation during `fit`: at the right steps, the same batches each time, and written
to TensorBoard's `eval` run and history.jsonl."""

import json
import logging
import os

import keras
import pytest
import tensorflow as tf

from bert_tf.data.holdout import Holdout
from bert_tf.data.pipeline import pretraining_dataset
from bert_tf.data.tokenization import Vocabulary
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.training.watching import evaluation, summaries
from bert_tf.training.watching.callbacks import TrainingCurves

pytestmark = pytest.mark.e2e  # one fit with held-out evaluations, for all its tests

EVAL_STEPS = 2


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, corpus_pattern, vocab_file):
  """A two-layer BERT of width 32 trained 7 steps in intervals of 2, evaluated every 4."""
  keras.utils.set_random_seed(0)
  model_dir = str(tmp_path_factory.mktemp("run"))
  vocabulary = Vocabulary(vocab_file)

  def batches(held_out: bool, seed: int):
    return pretraining_dataset(corpus_pattern, vocabulary, seq_length=32,
                               max_predictions_per_seq=5, batch_size=8, seed=seed,
                               holdout=Holdout(0.3, held_out))

  model = pretraining_model(BertConfig(
      vocab_size=len(vocabulary), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
      intermediate_size=64))
  compile_for_pretraining(model, keras.optimizers.Adam(1e-3))
  curves = TrainingCurves(os.path.join(model_dir, "history.jsonl"))
  callback = evaluation.HeldOutEvaluation(
      lambda: batches(held_out=True, seed=0), steps=EVAL_STEPS, every=4, train_steps=7,
      log_dir=os.path.join(model_dir, "logs", "eval"), curves=curves)
  records = []
  handler = logging.Handler()
  handler.emit = records.append
  logger = logging.getLogger("bert_tf")
  logger.addHandler(handler)
  level = logger.level
  logger.setLevel(logging.INFO)
  try:
    # Epoch ends at steps 2, 4, 6, 7 (the last interval cut short, as the trainer does).
    model.fit(batches(held_out=False, seed=1), epochs=4, steps_per_epoch=2, verbose=0,
              callbacks=[callback, curves, StopAt(7)])
  finally:
    logger.removeHandler(handler)
    logger.setLevel(level)
  return model, callback, model_dir, [r.getMessage() for r in records]


class StopAt(keras.callbacks.Callback):
  def __init__(self, step):
    super().__init__()
    self.step = step

  def on_train_batch_end(self, batch, logs=None):
    if int(self.model.optimizer.iterations.numpy()) >= self.step:
      self.model.stop_training = True


def test_evaluates_at_multiples_of_every_and_at_the_end(fitted):
  _, _, model_dir, messages = fitted
  with open(os.path.join(model_dir, "history.jsonl")) as f:
    records = [json.loads(line) for line in f]
  assert [r["step"] for r in records] == [4, 7]
  for record in records:
    assert set(record) == {"step", "eval_loss", "eval_mlm_loss", "eval_nsp_loss",
                           "eval_mlm_accuracy", "eval_nsp_accuracy"}
    assert record["eval_loss"] == pytest.approx(
        record["eval_mlm_loss"] + record["eval_nsp_loss"], rel=1e-5)
    assert 0 <= record["eval_mlm_accuracy"] <= 1 and 0 <= record["eval_nsp_accuracy"] <= 1
  assert [m.split(":")[0] for m in messages] == ["held-out at step 4", "held-out at step 7"]


def test_eval_run_in_tensorboard_beside_train(fitted):
  from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
  _, _, model_dir, _ = fitted
  events = EventAccumulator(os.path.join(model_dir, "logs", "eval"))
  events.Reload()
  tags = events.Tags()["tensors"]
  assert set(tags) == {"loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy"}
  # The x axis is the global step, as in the `train` run: the steps evaluated at.
  assert [event.step for event in events.Tensors("loss")] == [4, 7]


def test_each_evaluation_measures_the_same_batches(fitted):
  """The held-out batches are made once and read again at each evaluation: the last
  evaluation (the dataset's second reading) gives what a new dataset's first reading gives;
  asked again at the same step, the callback answers with that evaluation."""
  model, callback, model_dir, _ = fitted
  with open(os.path.join(model_dir, "history.jsonl")) as f:
    last = json.loads(f.readlines()[-1])  # the evaluation at the last step, same weights
  last.pop("step")
  assert evaluation.evaluate(model, callback.make_dataset(), EVAL_STEPS) == last
  assert callback.evaluate(model) == last


def test_a_resumed_run_evaluates_the_step_a_kill_left_unevaluated(tmp_path, vocab_file,
                                                                    corpus_pattern):
  """Killed after the checkpoint at step 4 and before its evaluation was recorded, a run
  resumed there evaluates step 4 before training on: one point at step 4 in history.jsonl
  and TensorBoard (the earlier run's point, flushed before the kill, replaced), and training's
  metrics start from zero."""
  vocabulary = Vocabulary(vocab_file)
  model = pretraining_model(BertConfig(
      vocab_size=len(vocabulary), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
      intermediate_size=64))
  compile_for_pretraining(model, keras.optimizers.Adam(1e-3))
  model.optimizer.iterations.assign(4)  # restored from the checkpoint at step 4
  history = tmp_path / "history.jsonl"
  history.write_text(json.dumps({"step": 4, "loss": 9.0}) + "\n")  # no evaluation at 4
  log_dir = str(tmp_path / "logs" / "eval")
  stale = summaries.ScalarWriter(log_dir)
  stale.write(4, {"loss": 99.0})
  stale.write(6, {"loss": 99.0})
  stale.close()

  def batches(held_out: bool):
    return pretraining_dataset(corpus_pattern, vocabulary, seq_length=32,
                               max_predictions_per_seq=5, batch_size=8, seed=0,
                               holdout=Holdout(0.3, held_out))

  curves = TrainingCurves(str(history))
  callback = evaluation.HeldOutEvaluation(lambda: batches(True), steps=1, every=4,
                                          train_steps=5, log_dir=log_dir, curves=curves)
  metrics_at_start = []
  watch = keras.callbacks.LambdaCallback(on_epoch_begin=lambda *_: metrics_at_start.append(
      [float(keras.ops.sum(v)) for m in model.metrics for v in m.variables]))
  model.fit(batches(False), epochs=1, steps_per_epoch=1, verbose=0,
            callbacks=[callback, curves, watch])
  records = [json.loads(line) for line in history.read_text().splitlines()]
  assert [(r["step"], "eval_loss" in r) for r in records] == [(4, False), (4, True), (5, True)]
  assert records[1]["eval_loss"] != records[2]["eval_loss"]  # the weights of two steps
  assert not any(metrics_at_start[0])  # the evaluation's figures did not reach training's

  from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
  events = EventAccumulator(log_dir)
  events.Reload()
  points = [(e.step, float(tf.make_ndarray(e.tensor_proto))) for e in events.Tensors("loss")]
  assert [step for step, _ in points] == [4, 5]
  assert points[0][1] == pytest.approx(records[1]["eval_loss"])

  # Owed only where an evaluation was due and is not on record (the final step aside).
  callback.train_steps = 100
  assert not callback._owed(5)  # evaluated at 5
  assert not callback._owed(7) and callback._owed(8)  # 8 passes a multiple of 4, 7 does not

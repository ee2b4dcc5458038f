"""The regression, tagging and span heads on a real tiny encoder: their shapes, the layer names
a Hugging Face export maps, the span logits masked to [CLS] and the context, and each loss
equal to its definition computed by hand, also as a compiled model's `evaluate` computes it."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.finetune import losses
from bert_tf.finetune.heads import NOT_AN_ANSWER
from bert_tf.finetune.kinds.answer.head import span_loss, span_model
from bert_tf.finetune.kinds.choose.head import choice_model
from bert_tf.finetune.kinds.regress.head import regression_loss, regression_model
from bert_tf.finetune.kinds.tag.head import tagging_loss, tagging_model
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.encoder import bert_encoder

HIDDEN, SEQ = 16, 10
# [CLS] q q [SEP] c c c c [SEP] [PAD] and [CLS] q [SEP] c c c [SEP] [PAD] [PAD] [PAD]
FEATURES = {
    "token_ids": np.array([[2, 7, 8, 3, 9, 10, 11, 12, 3, 0], [2, 7, 3, 13, 14, 15, 3, 0, 0, 0]],
                          np.int32),
    "segment_ids": np.array([[0, 0, 0, 0, 1, 1, 1, 1, 1, 0], [0, 0, 0, 1, 1, 1, 1, 0, 0, 0]],
                            np.int32),
    "padding_mask": np.array([[1] * 9 + [0], [1] * 7 + [0] * 3], np.int32),
}
CONTEXT = np.array([[0, 0, 0, 0, 1, 1, 1, 1, 0, 0], [0, 0, 0, 1, 1, 1, 0, 0, 0, 0]], bool)


@pytest.fixture
def encoder():
  keras.utils.set_random_seed(0)
  return bert_encoder(BertConfig(vocab_size=20, hidden_size=HIDDEN, num_hidden_layers=1,
                                 num_attention_heads=2, intermediate_size=32,
                                 max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
                                 attention_probs_dropout_prob=0.0))


def log_softmax(logits):
  return tf.nn.log_softmax(logits).numpy()


def test_regression_head(encoder):
  model = regression_model(encoder)
  scores = model(FEATURES).numpy()
  assert scores.shape == (2, 1) and scores.dtype == np.float32
  assert model.get_layer("classifier").kernel.shape == (HIDDEN, 1)
  labels = np.array([0.5, 4.0], np.float32)
  assert float(regression_loss()(labels, scores)) == pytest.approx(
      np.mean((labels - scores[:, 0]) ** 2), rel=1e-6)


def test_classification_loss_is_the_mean_cross_entropy():
  logits = np.array([[2.0, -1.0, 0.5], [0.0, 0.0, 3.0], [1.0, 1.0, 1.0]], np.float32)
  labels = np.array([0, 1, 2], np.int32)
  expected = -np.mean(log_softmax(logits)[[0, 1, 2], labels])
  assert float(losses.classification_loss()(labels, logits)) == pytest.approx(expected,
                                                                              rel=1e-6)


def test_tagging_head_and_its_loss_over_first_pieces_only(encoder):
  model = tagging_model(encoder, 5)
  logits = model(FEATURES).numpy()
  assert logits.shape == (2, SEQ, 5)
  assert model.get_layer("classifier").kernel.shape == (HIDDEN, 5)
  labels = np.full((2, SEQ), -100, np.int32)
  labels[0, [1, 2, 5]] = [4, 0, 2]
  labels[1, [3]] = [1]
  picked = log_softmax(logits)[[0, 0, 0, 1], [1, 2, 5, 3], [4, 0, 2, 1]]
  expected = -np.mean(picked)  # over the 4 labelled tokens, not the 20 positions
  assert float(tagging_loss()(labels, logits)) == pytest.approx(expected, rel=1e-5)
  model.compile(optimizer="sgd", loss=tagging_loss(), jit_compile=False)
  assert model.evaluate(FEATURES, labels, verbose=0) == pytest.approx(expected, rel=1e-5)


def test_span_head_is_masked_to_cls_and_the_context(encoder):
  model = span_model(encoder)
  logits = model(FEATURES).numpy()
  assert logits.shape == (2, 2, SEQ)
  kernel, bias = model.get_layer("qa_outputs").get_weights()
  assert kernel.shape == (HIDDEN, 2) and bias.shape == (2,)
  sequence = encoder(FEATURES)["sequence_output"].numpy()  # [batch, seq, hidden]
  raw = np.transpose(sequence @ kernel + bias, (0, 2, 1))  # [batch, 2, seq]
  allowed = CONTEXT.copy()
  allowed[:, 0] = True  # [CLS]: no answer
  for row in range(2):
    np.testing.assert_allclose(logits[row][:, allowed[row]], raw[row][:, allowed[row]],
                               rtol=1e-5, atol=1e-6)
    assert (logits[row][:, ~allowed[row]] == NOT_AN_ANSWER).all()


def test_span_loss_is_the_mean_of_start_and_end_cross_entropy(encoder):
  model = span_model(encoder)
  logits = model(FEATURES).numpy()
  positions = np.array([[5, 7], [0, 0]], np.int32)  # an answer; no answer ([CLS])
  log_probabilities = log_softmax(logits)
  start = log_probabilities[[0, 1], 0, positions[:, 0]]
  end = log_probabilities[[0, 1], 1, positions[:, 1]]
  expected = -np.mean((start + end) / 2)
  assert float(span_loss()(positions, logits)) == pytest.approx(expected, rel=1e-5)
  model.compile(optimizer="sgd", loss=span_loss(), jit_compile=False)
  assert model.evaluate(FEATURES, positions, verbose=0) == pytest.approx(expected, rel=1e-5)


def test_logits_are_float32_under_mixed_precision(encoder):
  keras.config.set_dtype_policy("mixed_float16")
  try:
    mixed = bert_encoder(BertConfig(vocab_size=20, hidden_size=HIDDEN, num_hidden_layers=1,
                                    num_attention_heads=2, intermediate_size=32,
                                    max_position_embeddings=SEQ))
    models = [regression_model(mixed), tagging_model(mixed, 3),
              span_model(mixed)]
  finally:
    keras.config.set_dtype_policy("float32")
  assert mixed(FEATURES)["sequence_output"].dtype == tf.float16
  for model in models:
    assert model(FEATURES).dtype == tf.float32, model.name
  masked = models[2](FEATURES).numpy()
  assert (masked[0, :, 9] == NOT_AN_ANSWER).all()  # not float16's -inf


def test_choice_head_scores_each_ending_on_its_pooled_output(encoder):
  model = choice_model(encoder)
  # Two contexts of three endings, the second's last ending absent (all 0).
  features = {name: np.stack([value, value[::-1]])[:, [0, 1, 0]] for name, value in
              FEATURES.items()}
  for name in features:
    features[name][1, 2] = 0
  logits = model(features).numpy()
  assert logits.shape == (2, 3) and logits.dtype == np.float32
  kernel, bias = model.get_layer("classifier").get_weights()
  assert kernel.shape == (HIDDEN, 1) and bias.shape == (1,)
  pooled = encoder(FEATURES)["pooled_output"].numpy()  # [2, hidden]: one per pair
  scores = (pooled @ kernel + bias)[:, 0]
  np.testing.assert_allclose(logits[0], scores[[0, 1, 0]], rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(logits[1, :2], scores[[1, 0]], rtol=1e-5, atol=1e-6)
  assert logits[1, 2] == NOT_AN_ANSWER  # absent: no probability
  labels = np.array([1, 0], np.int32)
  expected = -np.mean(log_softmax(logits)[[0, 1], labels])
  assert float(losses.classification_loss()(labels, logits)) == pytest.approx(expected, rel=1e-5)
  model.compile(optimizer="sgd", loss=losses.classification_loss(), jit_compile=False)
  assert model.evaluate(features, labels, verbose=0) == pytest.approx(expected, rel=1e-5)

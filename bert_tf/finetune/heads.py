"""The heads of the task kinds beside classification, each on a pre-trained encoder (their
losses are in `losses.py`). Layers are named as transformers names them, so that a Hugging
Face export maps each weight one to one:

- Regression (STS-B): BERT's classification head with one output, `classifier` [hidden, 1] on
  the pooled `[CLS]` output (transformers' `BertForSequenceClassification`, `num_labels=1`,
  `problem_type="regression"`).
- Token tagging (CoNLL-2003): dropout, then `classifier` [hidden, tags] on every token
  (`BertForTokenClassification`).
- Spans (SQuAD): `qa_outputs` [hidden, 2] on every token, no dropout
  (`BertForQuestionAnswering`), its start and end logits set to `NOT_AN_ANSWER` outside
  `[CLS]` (no answer) and the context.
- Multiple choice (SWAG): each (context, ending) pair through the encoder, dropout, then
  `classifier` [hidden, 1] on its pooled `[CLS]` output, a score per ending, the scores of a
  context's endings side by side (`BertForMultipleChoice`); an absent ending's (a row with
  fewer endings than the task's) set to `NOT_AN_ANSWER`.

Logits are float32 under mixed precision, as the classifier's.
"""

import keras
from keras import ops

from bert_tf.finetune.model import classifier_model
from bert_tf.model import encoder as encoder_lib

NOT_AN_ANSWER = -10000.0  # a logit whose softmax is 0 in float32, as BERT's attention mask


def _inputs() -> dict:
  return {name: keras.Input(shape=(None,), dtype="int32", name=name)
          for name in encoder_lib.INPUT_NAMES}


def _dense(units: int, initializer_range: float, name: str) -> keras.layers.Dense:
  return keras.layers.Dense(
      units, kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
      dtype="float32", name=name)


# === Regression ===


def regression_model(encoder: keras.Model, *, initializer_range: float = 0.02) -> keras.Model:
  """features -> score [batch, 1]."""
  return classifier_model(encoder, 1, initializer_range=initializer_range)



# === Token tagging ===


def tagging_model(encoder: keras.Model, num_tags: int, *,
                  initializer_range: float = 0.02) -> keras.Model:
  """features -> logits [batch, seq, num_tags]; dropout at the encoder's own rate."""
  inputs = _inputs()
  sequence = encoder(inputs)["sequence_output"]  # [batch, seq, hidden]
  rate = encoder.get_layer("embeddings_dropout").rate
  sequence = keras.layers.Dropout(rate, name="classifier_dropout")(sequence)
  logits = _dense(num_tags, initializer_range, "classifier")(sequence)
  return keras.Model(inputs, logits, name="bert_tagger")



# === Spans ===


@keras.saving.register_keras_serializable(package="bert_tf")
class ContextOnly(keras.layers.Layer):
  """Span logits [batch, 2, seq] -> the same, `NOT_AN_ANSWER` where an answer can neither
  start nor end: anywhere but `[CLS]` and the context (segment 1, its final `[SEP]` excepted)."""

  def call(self, logits, segment_ids, padding_mask):
    # expand_dims, not [None, :]: LiteRT's converter cannot take a strided slice that adds an
    # axis when the length is not fixed (the export takes any length).
    positions = ops.expand_dims(ops.arange(ops.shape(logits)[-1]), 0)  # [1, seq]
    final_sep = ops.sum(padding_mask, axis=-1, keepdims=True) - 1  # [batch, 1]
    allowed = (positions == 0) | ((segment_ids == 1) & (positions < final_sep))  # [batch, seq]
    return ops.where(ops.expand_dims(allowed, 1), logits, NOT_AN_ANSWER)


def span_model(encoder: keras.Model, *, initializer_range: float = 0.02) -> keras.Model:
  """features -> span logits [batch, 2, seq]: row 0 the start's, row 1 the end's."""
  inputs = _inputs()
  sequence = encoder(inputs)["sequence_output"]  # [batch, seq, hidden]
  logits = _dense(2, initializer_range, "qa_outputs")(sequence)  # [batch, seq, 2]
  logits = keras.layers.Permute((2, 1), dtype="float32", name="start_end")(logits)
  logits = ContextOnly(dtype="float32", name="context_only")(
      logits, inputs["segment_ids"], inputs["padding_mask"])
  return keras.Model(inputs, logits, name="bert_span_labeler")


# === Multiple choice ===


@keras.saving.register_keras_serializable(package="bert_tf")
class EachEnding(keras.layers.Layer):
  """Features [batch, endings, seq] -> [batch * endings, seq]: each pair an example."""

  def call(self, features):
    return ops.reshape(features, (-1, ops.shape(features)[-1]))


@keras.saving.register_keras_serializable(package="bert_tf")
class ScorePerEnding(keras.layers.Layer):
  """Scores [batch * endings, 1] -> [batch, endings], an absent ending's (no token) set to
  `NOT_AN_ANSWER`."""

  def call(self, scores, padding_mask):
    scores = ops.reshape(scores, ops.shape(padding_mask)[:2])
    return ops.where(padding_mask[:, :, 0] > 0, scores, NOT_AN_ANSWER)


def choice_model(encoder: keras.Model, *, initializer_range: float = 0.02) -> keras.Model:
  """features [batch, endings, seq] -> logits [batch, endings]: a softmax over them gives each
  ending's probability; dropout at the encoder's own rate."""
  inputs = {name: keras.Input(shape=(None, None), dtype="int32", name=name)
            for name in encoder_lib.INPUT_NAMES}
  pairs = {name: EachEnding(name=f"each_{name}")(value) for name, value in inputs.items()}
  pooled = encoder(pairs)["pooled_output"]  # [batch * endings, hidden]
  rate = encoder.get_layer("embeddings_dropout").rate
  pooled = keras.layers.Dropout(rate, name="classifier_dropout")(pooled)
  scores = _dense(1, initializer_range, "classifier")(pooled)  # [batch * endings, 1]
  logits = ScorePerEnding(dtype="float32", name="choice_logits")(scores,
                                                                 inputs["padding_mask"])
  return keras.Model(inputs, logits, name="bert_multiple_choice")

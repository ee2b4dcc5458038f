"""choose's head: each (context, ending) pair through the encoder, dropout, then `classifier`
[hidden, 1] on its pooled `[CLS]` output, a score per ending, the scores of a context's endings
side by side (transformers' `BertForMultipleChoice`); an absent ending's (a row with fewer
endings than the task's) set to `NOT_AN_ANSWER`. Its loss is classification's, the right
ending's number against the endings' logits."""

import keras
from keras import ops

from bert_tf.finetune.heads import NOT_AN_ANSWER, encoder_dropout, encoder_inputs, logits_layer


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
  inputs = encoder_inputs(axes=2)
  pairs = {name: EachEnding(name=f"each_{name}")(value) for name, value in inputs.items()}
  pooled = encoder(pairs)["pooled_output"]  # [batch * endings, hidden]
  pooled = encoder_dropout(encoder)(pooled)
  scores = logits_layer(1, initializer_range, "classifier")(pooled)  # [batch * endings, 1]
  logits = ScorePerEnding(dtype="float32", name="choice_logits")(scores,
                                                                 inputs["padding_mask"])
  return keras.Model(inputs, logits, name="bert_multiple_choice")

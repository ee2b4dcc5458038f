"""answer's head and loss: `qa_outputs` [hidden, 2] on every token, no dropout (transformers'
`BertForQuestionAnswering`), its start and end logits set to `NOT_AN_ANSWER` outside `[CLS]`
(no answer) and the context; the cross-entropy of the start and of the end position, per
example, both averaged (run_squad.py's loss), a mean over the global batch."""

import keras
from keras import ops

from bert_tf.finetune.heads import NOT_AN_ANSWER, encoder_inputs, logits_layer
from bert_tf.finetune.losses import GlobalMean, cross_entropy


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
  inputs = encoder_inputs()
  sequence = encoder(inputs)["sequence_output"]  # [batch, seq, hidden]
  logits = logits_layer(2, initializer_range, "qa_outputs")(sequence)  # [batch, seq, 2]
  logits = keras.layers.Permute((2, 1), dtype="float32", name="start_end")(logits)
  logits = ContextOnly(dtype="float32", name="context_only")(
      logits, inputs["segment_ids"], inputs["padding_mask"])
  return keras.Model(inputs, logits, name="bert_span_labeler")


def span_loss() -> keras.losses.Loss:
  """positions [batch, 2] (start, end) against span logits [batch, 2, seq]."""
  return GlobalMean(cross_entropy, "span_loss")

"""The BERT encoder (docs/design.md#model), assembled from keras-hub layers.

keras-hub's `BertBackbone` hard-codes the tanh approximation of GELU; original BERT's
checkpoints as released and Hugging Face's `hidden_act="gelu"` use the erf form, so the
encoder is built here from the same keras-hub layers, under the same layer names, with the erf
GELU. Its weights therefore map one to one onto `BertBackbone`'s.
"""

import keras
import keras_hub
import tensorflow as tf

from bert_tf.model.bert_config import BertConfig

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable(package="bert_tf")
class TiedEmbedding(keras.layers.ReversibleEmbedding):
  """Keras's `ReversibleEmbedding` (the same weights) whose reverse projection, the MLM head's
  tied vocabulary projection, runs in the layer's compute dtype under mixed precision (bf16)
  and returns the caller's dtype (the head's float32 logits). Keras's own multiplies in the
  caller's float32 and transposes the matrix first, so that each step also transposed the
  [hidden, vocab] gradient back; here the transpose is inside one bf16 matmul. That made a
  bert_small bf16 step 1.28x faster (batch 8, docs/measured.md, "bf16 training on AMD EPYC").
  In float32 Keras's own is kept: oneDNN's float32 matmul transposed inside was 8% slower."""

  def call(self, inputs, reverse=False):
    if not reverse or self.compute_dtype == "float32":
      return super().call(inputs, reverse=reverse)
    rows = tf.cast(tf.reshape(inputs, [-1, self.output_dim]), self.compute_dtype)
    embeddings = tf.cast(self.embeddings, self.compute_dtype)
    logits = tf.matmul(rows, embeddings, transpose_b=True)  # [rows, vocab]
    return tf.cast(tf.reshape(logits, tf.concat([tf.shape(inputs)[:-1], [self.input_dim]], 0)),
                   inputs.dtype)


def initializer(config: BertConfig):
  return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


def bert_encoder(config: BertConfig, name: str = "bert_encoder") -> keras.Model:
  """A functional model: {token_ids, segment_ids, padding_mask} ->
  {sequence_output [batch, seq, hidden], pooled_output [batch, hidden]}."""
  # === Layers ===
  token_embedding = TiedEmbedding(
      config.vocab_size, config.hidden_size, embeddings_initializer=initializer(config),
      name="token_embedding")
  position_embedding = keras_hub.layers.PositionEmbedding(
      sequence_length=config.max_position_embeddings, initializer=initializer(config),
      name="position_embedding")
  segment_embedding = keras.layers.Embedding(
      config.type_vocab_size, config.hidden_size, embeddings_initializer=initializer(config),
      name="segment_embedding")
  embeddings_layer_norm = keras.layers.LayerNormalization(
      epsilon=config.layer_norm_epsilon, name="embeddings_layer_norm")
  embeddings_dropout = keras.layers.Dropout(
      config.hidden_dropout_prob, name="embeddings_dropout")
  transformer_layers = [
      keras_hub.layers.TransformerEncoder(
          intermediate_dim=config.intermediate_size,
          num_heads=config.num_attention_heads,
          dropout=config.hidden_dropout_prob,
          activation=keras.activations.gelu,  # erf form: approximate=False
          layer_norm_epsilon=config.layer_norm_epsilon,
          kernel_initializer=initializer(config),
          normalize_first=False,  # post-layer-norm, as original BERT
          name=f"transformer_layer_{i}")
      for i in range(config.num_hidden_layers)
  ]
  pooled_dense = keras.layers.Dense(
      config.hidden_size, activation="tanh", kernel_initializer=initializer(config),
      name="pooled_dense")

  # === Functional Model ===
  inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
  x = keras.layers.Add(name="embeddings_add")([
      token_embedding(inputs["token_ids"]),
      position_embedding(token_embedding(inputs["token_ids"])),
      segment_embedding(inputs["segment_ids"]),
  ])  # [batch, seq, hidden]
  x = embeddings_dropout(embeddings_layer_norm(x))
  for layer in transformer_layers:
    x = layer(x, padding_mask=inputs["padding_mask"])  # [batch, seq, hidden]
  pooled_output = pooled_dense(x[:, 0, :])  # [batch, hidden], from [CLS]
  encoder = keras.Model(inputs, {"sequence_output": x, "pooled_output": pooled_output},
                        name=name)
  encoder.token_embedding = token_embedding
  return encoder

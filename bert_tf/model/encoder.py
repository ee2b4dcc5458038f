"""The BERT encoder (docs/design.md#model), assembled from keras-hub layers.

keras-hub's `BertBackbone` hard-codes the tanh approximation of GELU; original BERT's
checkpoints as released and Hugging Face's `hidden_act="gelu"` use the erf form, so the
encoder is built here from the same keras-hub layers, under the same layer names, with the erf
GELU. Its weights therefore map one to one onto `BertBackbone`'s.
"""

import dataclasses

import keras
import keras_hub
import tensorflow as tf

from bert_tf.model.bert_config import BertConfig

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")
# A packed row's inputs besides (docs/design.md#packing): each token's position within its
# pair, its pair's number in the row (1, 2, ...; 0 on padding) and where each pair's [CLS] is.
PACKED_INPUT_NAMES = INPUT_NAMES + ("position_ids", "pair_ids", "cls_positions")


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


def same_pair_mask(pair_ids):
  """[batch, seq, seq]: whether query token i and key token j are real tokens of one pair."""
  same = keras.ops.equal(pair_ids[:, :, None], pair_ids[:, None, :])
  return keras.ops.logical_and(same, keras.ops.greater(pair_ids, 0)[:, None, :])


@dataclasses.dataclass(frozen=True)
class EncoderLayers:
  """The encoder's layers and their wiring (`encode`), one for both layouts of a batch: the
  functional encoder is `encode` traced on its inputs (`INPUT_NAMES`, one pair a row), and a
  batch of packed rows (`PACKED_INPUT_NAMES`) runs `encode` on the same layers, so that a
  packed run trains the encoder every checkpoint and export knows."""

  token_embedding: TiedEmbedding
  position_embedding: keras.layers.Layer
  segment_embedding: keras.layers.Embedding
  embeddings_add: keras.layers.Add
  embeddings_layer_norm: keras.layers.LayerNormalization
  embeddings_dropout: keras.layers.Dropout
  transformer_layers: tuple
  pooled_dense: keras.layers.Dense

  def encode(self, inputs: dict, training=None) -> dict:
    """{sequence_output [batch, seq, hidden], pooled_output}: pooled_output [batch, hidden]
    from the [CLS] of each row, or of a packed row's each pair [batch, pairs, hidden]. In a
    packed row, positions start again at each pair and a token attends only to its pair."""
    packed = "pair_ids" in inputs
    tokens = self.token_embedding(inputs["token_ids"])
    x = self.embeddings_add([
        tokens,
        self.position_embedding(tokens, positions=inputs.get("position_ids")),
        self.segment_embedding(inputs["segment_ids"]),
    ])  # [batch, seq, hidden]
    x = self.embeddings_dropout(self.embeddings_layer_norm(x), training=training)
    attention_mask = same_pair_mask(inputs["pair_ids"]) if packed else None  # [b, seq, seq]
    for layer in self.transformer_layers:
      x = layer(x, padding_mask=inputs["padding_mask"], attention_mask=attention_mask,
                training=training)  # [batch, seq, hidden]
    if packed:
      first_tokens = keras.ops.take_along_axis(x, inputs["cls_positions"][:, :, None], axis=1)
    else:
      first_tokens = x[:, 0, :]
    return {"sequence_output": x, "pooled_output": self.pooled_dense(first_tokens)}


def bert_encoder(config: BertConfig, name: str = "bert_encoder") -> keras.Model:
  """A functional model: {token_ids, segment_ids, padding_mask} ->
  {sequence_output [batch, seq, hidden], pooled_output [batch, hidden]}; its `layers_wired`
  (`EncoderLayers`) runs the same layers on packed rows."""
  layers = EncoderLayers(
      token_embedding=TiedEmbedding(
          config.vocab_size, config.hidden_size, embeddings_initializer=initializer(config),
          name="token_embedding"),
      position_embedding=keras_hub.layers.PositionEmbedding(
          sequence_length=config.max_position_embeddings, initializer=initializer(config),
          name="position_embedding"),
      segment_embedding=keras.layers.Embedding(
          config.type_vocab_size, config.hidden_size,
          embeddings_initializer=initializer(config), name="segment_embedding"),
      embeddings_add=keras.layers.Add(name="embeddings_add"),
      embeddings_layer_norm=keras.layers.LayerNormalization(
          epsilon=config.layer_norm_epsilon, name="embeddings_layer_norm"),
      embeddings_dropout=keras.layers.Dropout(
          config.hidden_dropout_prob, name="embeddings_dropout"),
      transformer_layers=tuple(
          keras_hub.layers.TransformerEncoder(
              intermediate_dim=config.intermediate_size,
              num_heads=config.num_attention_heads,
              dropout=config.hidden_dropout_prob,
              activation=keras.activations.gelu,  # erf form: approximate=False
              layer_norm_epsilon=config.layer_norm_epsilon,
              kernel_initializer=initializer(config),
              normalize_first=False,  # post-layer-norm, as original BERT
              name=f"transformer_layer_{i}")
          for i in range(config.num_hidden_layers)),
      pooled_dense=keras.layers.Dense(
          config.hidden_size, activation="tanh", kernel_initializer=initializer(config),
          name="pooled_dense"))
  inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in INPUT_NAMES}
  encoder = keras.Model(inputs, layers.encode(inputs), name=name)
  encoder.token_embedding = layers.token_embedding
  encoder.layers_wired = layers
  return encoder

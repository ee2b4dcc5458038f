"""The serving SavedModel: raw strings in, tokenized in-graph (docs/design.md#exports-and-interop).

Signatures:
  fill_mask(text)           -> tokens [batch, masks, top_k] string, probabilities (float32)
  is_next(text_a, text_b)   -> probability [batch] that text_b follows text_a
  encode(text_a, text_b)    -> pooled_output [batch, hidden], sequence_output [batch, seq, hidden]
  tokenize(text_a, text_b)  -> token_ids, segment_ids, padding_mask [batch, seq]: what `encode`
                               feeds the encoder
Inputs longer than the sequence length are truncated as in training (the longer segment
first), from the end. Loading needs `import tensorflow_text` first (its ops are in the graph).
"""

import os

import keras
import tensorflow as tf

from bert_tf import files
from bert_tf.data.text_pairs import combined_pair
from bert_tf.data.tokenization import MASK, Vocabulary


def serving_function(*names: str):
  """Decorates a serving function of batches of strings named `names`: traced without
  AutoGraph, since serving code is plain TensorFlow ops and converting it (the tokenizer's
  Python with it) would cost seconds at every export."""
  return tf.function(autograph=False,
                     input_signature=[tf.TensorSpec([None], tf.string, name=n) for n in names])


class ServingModule(tf.Module):
  """Tokenizer + pre-training model, with the three serving functions."""

  def __init__(self, model: keras.Model, vocabulary: Vocabulary, *, seq_length: int,
               lower_case: bool, top_k: int = 5):
    super().__init__(name="bert_serving")
    # The model's layers, not the model: through `model.optimizer` the model would bring the
    # optimizer's slots into variables/ (with Adam, twice the model again).
    self.encoder = model.get_layer("bert_encoder")
    self.mlm_head = model.get_layer("mlm")
    self.nsp_head = model.get_layer("nsp")
    self.tokenizer = vocabulary.tokenizer(lower_case)
    self.tokens = tf.constant(vocabulary.tokens)
    self.cls_id, self.sep_id, self.mask_id = (
        vocabulary.cls_id, vocabulary.sep_id, vocabulary.mask_id)
    self.seq_length = seq_length
    self.top_k = top_k

  def _tokenize(self, text):
    return tf.cast(self.tokenizer.tokenize(text), tf.int32)  # [batch, (tokens)]

  def _model_inputs(self, text_a, text_b):
    """[CLS] a [SEP] (b [SEP]) padded to the longest in the batch; b may be empty strings."""
    token_ids, segment_ids = combined_pair(
        self._tokenize(text_a), self._tokenize(text_b), seq_length=self.seq_length,
        cls_id=self.cls_id, sep_id=self.sep_id)
    return {
        "token_ids": token_ids.to_tensor(),
        "segment_ids": tf.cast(segment_ids.to_tensor(), tf.int32),
        "padding_mask": tf.cast(tf.ones_like(token_ids).to_tensor(), tf.int32),
    }

  @serving_function("text")
  def fill_mask(self, text):
    # Split at the literal "[MASK]" so the tokenizer never sees it; rejoin with its id.
    pieces = tf.strings.split(text, MASK)  # [batch, (pieces)]
    piece_tokens = self._tokenize(pieces.flat_values)  # [pieces, (tokens)]
    counts = pieces.row_lengths()  # a [MASK] after each piece but a text's last
    is_last = tf.ragged.range(counts).flat_values == tf.repeat(counts - 1, counts)  # [pieces]
    masks = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(1 - tf.cast(is_last, tf.int64))], self.mask_id),
        1 - tf.cast(is_last, tf.int64))
    token_ids = tf.RaggedTensor.from_row_splits(
        tf.concat([piece_tokens, masks], axis=1), pieces.row_splits).merge_dims(1, 2)
    token_ids, _ = combined_pair(token_ids, seq_length=self.seq_length, cls_id=self.cls_id,
                                 sep_id=self.sep_id)
    positions = tf.ragged.boolean_mask(
        tf.ragged.range(token_ids.row_lengths()),
        token_ids.with_flat_values(token_ids.flat_values == self.mask_id))
    is_slot = tf.ones_like(positions, tf.bool).to_tensor()  # [batch, masks]
    features = {
        "token_ids": token_ids.to_tensor(),
        "segment_ids": tf.zeros_like(token_ids).to_tensor(),
        "padding_mask": tf.ones_like(token_ids).to_tensor(),
    }
    encoded = self.encoder(features, training=False)
    logits = self.mlm_head(encoded["sequence_output"], training=False,
                           mask_positions=tf.cast(positions.to_tensor(), tf.int32))
    # [batch, masks, vocab]
    probabilities, ids = tf.math.top_k(tf.nn.softmax(logits), k=self.top_k)
    return {
        "tokens": tf.where(is_slot[..., None], tf.gather(self.tokens, ids), ""),
        "probabilities": tf.where(is_slot[..., None], probabilities, 0.0),
    }

  @serving_function("text_a", "text_b")
  def is_next(self, text_a, text_b):
    encoded = self.encoder(self._model_inputs(text_a, text_b), training=False)
    logits = self.nsp_head(encoded["pooled_output"])  # [batch, 2]
    return {"probability": tf.nn.softmax(logits)[:, 1]}  # class 1 = IsNext

  @serving_function("text_a", "text_b")
  def encode(self, text_a, text_b):
    encoded = self.encoder(self._model_inputs(text_a, text_b), training=False)
    return {"pooled_output": encoded["pooled_output"],
            "sequence_output": encoded["sequence_output"]}

  @serving_function("text_a", "text_b")
  def tokenize(self, text_a, text_b):
    return self._model_inputs(text_a, text_b)


def export_savedmodel(model: keras.Model, vocabulary: Vocabulary, directory: str, *,
                      seq_length: int, lower_case: bool, top_k: int = 5) -> str:
  """Writes the serving SavedModel to `directory` atomically; returns `directory`.

  The vocabulary is copied in as `assets/vocab.txt` so the export stands alone.
  """
  module = ServingModule(model, vocabulary, seq_length=seq_length, lower_case=lower_case,
                         top_k=top_k)
  temporary = files.temporary_directory(directory)
  tf.saved_model.save(module, temporary, signatures={
      "fill_mask": module.fill_mask, "is_next": module.is_next, "encode": module.encode,
      "tokenize": module.tokenize})
  tf.io.gfile.makedirs(os.path.join(temporary, "assets"))
  tf.io.gfile.copy(vocabulary.path, os.path.join(temporary, "assets", "vocab.txt"),
                   overwrite=True)
  files.replace_directory(temporary, directory)
  return directory

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model

CONFIG = BertConfig.from_preset("bert_tiny", vocab_size=97, max_position_embeddings=32)


def features(batch=3, seq=16, predictions=4, seed=0):
  rng = np.random.default_rng(seed)
  return {
      "token_ids": rng.integers(5, CONFIG.vocab_size, (batch, seq)).astype("int32"),
      "segment_ids": np.repeat([[0] * (seq // 2) + [1] * (seq - seq // 2)], batch, 0).astype(
          "int32"),
      "padding_mask": np.ones((batch, seq), "int32"),
      "masked_positions": rng.integers(1, seq, (batch, predictions)).astype("int32"),
  }


@pytest.fixture(scope="module")
def model():
  return pretraining_model(CONFIG)


def test_inputs_and_output_shapes(model):
  assert sorted(model.input.keys()) == [
      "masked_positions", "padding_mask", "segment_ids", "token_ids"]
  outputs = model(features(), training=False)
  assert outputs["mlm"].shape == (3, 4, CONFIG.vocab_size)  # [batch, P, vocab]
  assert outputs["nsp"].shape == (3, 2)
  assert outputs["mlm"].dtype == "float32" and outputs["nsp"].dtype == "float32"


def test_architecture_is_original_bert(model):
  encoder = model.get_layer("bert_encoder")
  layer = encoder.get_layer("transformer_layer_0")
  assert layer.normalize_first is False  # post-layer-norm
  assert layer.layer_norm_epsilon == 1e-12
  x = tf.constant([-2.0, -0.5, 0.5, 3.0])
  # erf GELU, not the tanh approximation (they differ by ~1e-3 at these points).
  np.testing.assert_allclose(layer.activation(x), keras.activations.gelu(x, approximate=False))
  assert encoder.get_layer("embeddings_layer_norm").epsilon == 1e-12
  assert model.get_layer("mlm").layer_norm_epsilon == 1e-12
  assert len([layer for layer in encoder.layers if layer.name.startswith("transformer_layer")]) == 2


def test_mlm_decoder_is_tied_to_token_embeddings(model):
  embedding = model.get_layer("bert_encoder").get_layer("token_embedding").embeddings
  mlm_weights = model.get_layer("mlm").weights
  assert any(w is embedding for w in mlm_weights)
  assert "output_bias" in [w.name for w in mlm_weights]
  # No separate vocabulary-sized kernel: the only [vocab, hidden] matrix is the embedding.
  vocab_sized = [w for w in model.weights if CONFIG.vocab_size in w.shape and len(w.shape) == 2]
  assert len(vocab_sized) == 1


def test_mlm_logits_only_depend_on_the_gathered_positions(model):
  batch = features()
  full = model(batch, training=False)["mlm"].numpy()
  batch_one = dict(batch, masked_positions=batch["masked_positions"][:, :1])
  np.testing.assert_allclose(
      model(batch_one, training=False)["mlm"].numpy(), full[:, :1], atol=1e-5)


def test_padding_does_not_change_real_positions(model):
  batch = features(batch=1, seq=12)
  padded = {name: np.pad(value, [[0, 0], [0, 4]]) for name, value in batch.items()
            if name != "masked_positions"}
  padded["masked_positions"] = batch["masked_positions"]
  np.testing.assert_allclose(model(padded, training=False)["mlm"],
                             model(batch, training=False)["mlm"], atol=1e-4)
  np.testing.assert_allclose(model(padded, training=False)["nsp"],
                             model(batch, training=False)["nsp"], atol=1e-4)

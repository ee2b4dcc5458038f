"""The training FLOP count of one sequence counts the model's own matrices: those of the
encoder at every position, the MLM head's at the masked positions only, the pooler once, plus
attention's two products."""

import math

import pytest

from bert_tf.model.bert_config import BertConfig
from bert_tf.model.flops import model_flops_per_sequence
from bert_tf.model.pretraining import pretraining_model


@pytest.mark.parametrize("seq_length, predictions", [(32, 5), (128, 20)])
def test_flops_are_six_per_weight_per_position_plus_attention(seq_length, predictions):
  config = BertConfig.from_preset("bert_tiny", vocab_size=1000)
  sizes = {w.path: math.prod(w.shape) for w in pretraining_model(config).weights}
  encoder = sum(size for path, size in sizes.items()
                if path.startswith("transformer_layer_") and path.endswith("/kernel"))
  head = sizes["mlm/intermediate_dense/kernel"] + sizes["token_embedding/embeddings"]
  attention = 3 * config.num_hidden_layers * 4 * seq_length**2 * config.hidden_size
  expected = (6 * encoder * seq_length + 6 * head * predictions
              + 6 * sizes["pooled_dense/kernel"] + attention)
  assert model_flops_per_sequence(config, seq_length, predictions) == expected

"""BERT's forward pass in numpy over a Hugging Face directory's weights, under their names
(`interop.state`'s canonical state, as `interop.huggingface.read_huggingface` reads it): what
transformers' `BertForPreTraining` and task classes compute, so that a Hugging Face export is
checked where transformers is not installed (`verification.py`).

One example at a time, without padding, in float64: embeddings and their layer norm, each
layer's self-attention and feed-forward (GELU, the erf form) with their residual layer norms,
the pooler (tanh on `[CLS]`), and the heads that the weights have: the MLM head (its decoder
tied to the word embeddings), the NSP head (row 0 = IsNext, as in Hugging Face) and a task
head (`classifier`, `qa_outputs`).
"""

import numpy as np

from bert_tf.errors import UserError
from bert_tf.model.bert_config import BertConfig

# erf by Abramowitz and Stegun's formula 7.1.26, absolute error below 1.5e-7 (numpy has no
# erf, and the check should not lean on the TensorFlow it checks).
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(x: np.ndarray) -> np.ndarray:
  t = 1.0 / (1.0 + _ERF_P * np.abs(x))
  polynomial = sum(a * t ** (power + 1) for power, a in enumerate(_ERF_A))
  return np.sign(x) * (1.0 - polynomial * np.exp(-x * x))


def gelu(x: np.ndarray) -> np.ndarray:
  return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def softmax(x: np.ndarray) -> np.ndarray:
  exponentials = np.exp(x - x.max(axis=-1, keepdims=True))
  return exponentials / exponentials.sum(axis=-1, keepdims=True)


class NumpyBert:
  """The forward pass of the model that `state` (canonical names) and `config` make; `source`
  names the weights in a missing weight's error."""

  def __init__(self, config: BertConfig, state: dict, source: str):
    self.config, self.source = config, source
    self.state = {name: np.asarray(value, np.float64) for name, value in state.items()}

  def _weight(self, name: str) -> np.ndarray:
    if name not in self.state:
      raise UserError(f"{self.source} has no weight {name}")
    return self.state[name]

  def linear(self, x: np.ndarray, name: str) -> np.ndarray:
    """torch's Linear `name`: x @ weight.T + bias."""
    return x @ self._weight(f"{name}.weight").T + self._weight(f"{name}.bias")

  def _layer_norm(self, x: np.ndarray, name: str) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    variance = np.square(x - mean).mean(axis=-1, keepdims=True)
    normalised = (x - mean) / np.sqrt(variance + self.config.layer_norm_epsilon)
    return normalised * self._weight(f"{name}.weight") + self._weight(f"{name}.bias")

  def _attention(self, x: np.ndarray, prefix: str) -> np.ndarray:
    heads = self.config.num_attention_heads
    size = self.config.hidden_size // heads

    def split(part):  # [tokens, hidden] -> [heads, tokens, size]
      return self.linear(x, f"{prefix}.attention.self.{part}").reshape(
          len(x), heads, size).transpose(1, 0, 2)

    query, key, value = split("query"), split("key"), split("value")
    weights = softmax(query @ key.transpose(0, 2, 1) / np.sqrt(size))
    context = (weights @ value).transpose(1, 0, 2).reshape(len(x), heads * size)
    return self.linear(context, f"{prefix}.attention.output.dense")

  def _layer(self, x: np.ndarray, prefix: str) -> np.ndarray:
    x = self._layer_norm(x + self._attention(x, prefix), f"{prefix}.attention.output.LayerNorm")
    inner = gelu(self.linear(x, f"{prefix}.intermediate.dense"))
    return self._layer_norm(x + self.linear(inner, f"{prefix}.output.dense"),
                            f"{prefix}.output.LayerNorm")

  def encode(self, token_ids: list[int], segment_ids: list[int]) -> np.ndarray:
    """The sequence output [tokens, hidden] of one example."""
    embeddings = "bert.embeddings"
    x = (self._weight(f"{embeddings}.word_embeddings.weight")[token_ids]
         + self._weight(f"{embeddings}.position_embeddings.weight")[:len(token_ids)]
         + self._weight(f"{embeddings}.token_type_embeddings.weight")[segment_ids])
    x = self._layer_norm(x, f"{embeddings}.LayerNorm")
    for i in range(self.config.num_hidden_layers):
      x = self._layer(x, f"bert.encoder.layer.{i}")
    return x

  def pooled(self, sequence: np.ndarray) -> np.ndarray:
    """The pooler's output [hidden]: tanh(dense([CLS]))."""
    return np.tanh(self.linear(sequence[0], "bert.pooler.dense"))

  def mlm_logits(self, sequence: np.ndarray) -> np.ndarray:
    """[tokens, hidden] -> [tokens, vocabulary]."""
    transformed = self._layer_norm(gelu(self.linear(sequence, "cls.predictions.transform.dense")),
                                   "cls.predictions.transform.LayerNorm")
    return (transformed @ self._weight("bert.embeddings.word_embeddings.weight").T
            + self._weight("cls.predictions.bias"))

  def nsp_logits(self, pooled: np.ndarray) -> np.ndarray:
    """[hidden] -> [2], row 0 = IsNext."""
    return self.linear(pooled, "cls.seq_relationship")

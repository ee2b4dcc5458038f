"""Our Keras model <-> the canonical state (Hugging Face `BertForPreTraining` names, layouts)."""

import logging

import keras
import numpy as np

from bert_tf.errors import UserError
from bert_tf.model.bert_config import BertConfig

log = logging.getLogger("bert_tf")


def _dense(prefix):
  """Keras Dense kernel [in, out] <-> torch Linear weight [out, in]."""
  return {f"{prefix}/kernel": ("weight", "transpose"), f"{prefix}/bias": ("bias", None)}


def _layer_norm(prefix):
  return {f"{prefix}/gamma": ("weight", None), f"{prefix}/beta": ("bias", None)}


def name_map(config: BertConfig) -> dict:
  """Our variable path -> (canonical name, transform)."""
  names = {
      "token_embedding/embeddings": ("bert.embeddings.word_embeddings.weight", None),
      "position_embedding/embeddings": ("bert.embeddings.position_embeddings.weight", None),
      "segment_embedding/embeddings": ("bert.embeddings.token_type_embeddings.weight", None),
      "embeddings_layer_norm/gamma": ("bert.embeddings.LayerNorm.weight", None),
      "embeddings_layer_norm/beta": ("bert.embeddings.LayerNorm.bias", None),
      "pooled_dense/kernel": ("bert.pooler.dense.weight", "transpose"),
      "pooled_dense/bias": ("bert.pooler.dense.bias", None),
      "mlm/intermediate_dense/kernel": ("cls.predictions.transform.dense.weight", "transpose"),
      "mlm/intermediate_dense/bias": ("cls.predictions.transform.dense.bias", None),
      "mlm/intermediate_layer_norm/gamma": ("cls.predictions.transform.LayerNorm.weight", None),
      "mlm/intermediate_layer_norm/beta": ("cls.predictions.transform.LayerNorm.bias", None),
      "mlm/output_bias": ("cls.predictions.bias", None),
      "nsp/kernel": ("cls.seq_relationship.weight", "nsp_kernel"),
      "nsp/bias": ("cls.seq_relationship.bias", "nsp_bias"),
  }
  for i in range(config.num_hidden_layers):
    ours, theirs = f"transformer_layer_{i}", f"bert.encoder.layer.{i}"
    attention = f"{ours}/self_attention_layer"
    for part in ("query", "key", "value"):
      names[f"{attention}/{part}/kernel"] = (
          f"{theirs}.attention.self.{part}.weight", "heads_in")
      names[f"{attention}/{part}/bias"] = (f"{theirs}.attention.self.{part}.bias", "flatten")
    names[f"{attention}/attention_output/kernel"] = (
        f"{theirs}.attention.output.dense.weight", "heads_out")
    names[f"{attention}/attention_output/bias"] = (
        f"{theirs}.attention.output.dense.bias", None)
    for ours_part, theirs_part in (
        (f"{ours}/self_attention_layer_norm", f"{theirs}.attention.output.LayerNorm"),
        (f"{ours}/feedforward_layer_norm", f"{theirs}.output.LayerNorm"),
        (f"{ours}/feedforward_intermediate_dense", f"{theirs}.intermediate.dense"),
        (f"{ours}/feedforward_output_dense", f"{theirs}.output.dense")):
      parts = (_layer_norm(ours_part) if "norm" in ours_part else _dense(ours_part))
      for path, (suffix, transform) in parts.items():
        names[path] = (f"{theirs_part}.{suffix}", transform)
  return names


def _to_canonical(value: np.ndarray, transform, hidden: int) -> np.ndarray:
  if transform == "transpose":
    return value.T
  if transform == "heads_in":  # [hidden, heads, head_dim] -> [hidden_out, hidden_in]
    return value.reshape(hidden, hidden).T
  if transform == "heads_out":  # [heads, head_dim, hidden] -> [hidden_out, hidden_in]
    return value.reshape(hidden, hidden).T
  if transform == "flatten":
    return value.reshape(-1)
  if transform == "nsp_kernel":  # [hidden, 2] (1 = IsNext) -> [2, hidden] (0 = IsNext)
    return value.T[::-1]
  if transform == "nsp_bias":
    return value[::-1]
  return value


def _from_canonical(value: np.ndarray, transform, shape) -> np.ndarray:
  if transform in ("transpose", "heads_in", "heads_out"):
    return value.T.reshape(shape)
  if transform == "flatten":
    return value.reshape(shape)
  if transform == "nsp_kernel":
    return value[::-1].T
  if transform == "nsp_bias":
    return value[::-1]
  return value


def model_state(model: keras.Model, config: BertConfig) -> dict:
  """The canonical state of our pre-training model (float32 numpy arrays)."""
  variables = {v.path: v for v in model.weights}
  return {name: np.ascontiguousarray(
              _to_canonical(np.asarray(variables[path].numpy(), np.float32), transform,
                            config.hidden_size))
          for path, (name, transform) in name_map(config).items()}


def encoder_state(model: keras.Model, config: BertConfig, *, pooler: bool) -> dict:
  """The canonical state of the encoder in `model` (a pre-training or a fine-tuned model),
  under `bert.`; the pooler's only with `pooler`."""
  variables = {v.path: v for v in model.weights}
  return {name: np.ascontiguousarray(
              _to_canonical(np.asarray(variables[path].numpy(), np.float32), transform,
                            config.hidden_size))
          for path, (name, transform) in name_map(config).items()
          if name.startswith("bert.") and (pooler or not name.startswith("bert.pooler."))}


# The parts of the pre-training model that a published checkpoint may lack, by the prefix of
# their canonical names: a base model (BertModel) has no heads, a masked-LM one
# (BertForMaskedLM) no NSP head and no pooler. Such a part starts from its initial weights.
OPTIONAL_PARTS = {"bert.pooler.": "the pooler", "cls.predictions.": "the MLM head",
                  "cls.seq_relationship.": "the NSP head"}
# Where the pre-training model's own weights live; anything else (a task head such as
# `classifier.*`) is another model's part, not read.
OWN_PREFIXES = ("bert.", "cls.predictions.", "cls.seq_relationship.")


def _absent_parts(missing: list[str], expected: set) -> tuple[list[str], list[str]]:
  """(names of the optional parts missing whole, the missing names outside them)."""
  parts = [prefix for prefix in OPTIONAL_PARTS
           if {name for name in expected if name.startswith(prefix)} <= set(missing)]
  return ([OPTIONAL_PARTS[prefix] for prefix in parts],
          [name for name in missing if not name.startswith(tuple(parts))])


def _listed(names: list[str]) -> str:
  return f"{', '.join(names[:5])}{' ...' if len(names) > 5 else ''}"


def load_state(model: keras.Model, config: BertConfig, state: dict, source: str) -> None:
  """Assigns the variables of `model` from `state`. A head or the pooler the checkpoint has
  none of keeps its initial weights, and weights of another model's task head are not read,
  each said in a line; any other weight missing or left over, or of the wrong shape, is an
  error that names it."""
  mapping = name_map(config)
  expected = {name for name, _ in mapping.values()}
  absent, missing = _absent_parts(sorted(expected - set(state)), expected)
  left_over = sorted(set(state) - expected)
  unexpected = [name for name in left_over if name.startswith(OWN_PREFIXES)]
  if missing or unexpected:
    problems = ([f"missing {_listed(missing)}"] if missing else []) + (
        [f"unexpected {_listed(unexpected)}"] if unexpected else [])
    raise UserError(f"{source} does not fit the model: {'; '.join(problems)}")
  if absent:
    log.warning("%s has no weights for %s: initialised at random", source, " or ".join(absent))
  other_models = [name for name in left_over if name not in unexpected]
  if other_models:
    log.warning("%s: weights of another model's head not read: %s", source,
                _listed(other_models))
  variables = {v.path: v for v in model.weights}
  for path, (name, transform) in mapping.items():
    if name not in state:
      continue  # an absent part
    variable = variables[path]
    value = np.asarray(state[name], np.float32)
    canonical_shape = _to_canonical(np.zeros(variable.shape, np.float32), transform,
                                    config.hidden_size).shape
    if value.shape != canonical_shape:
      raise UserError(f"{source}: {name} has shape {list(value.shape)}, the model needs "
                      f"{list(canonical_shape)}")
    variable.assign(_from_canonical(value, transform, variable.shape))

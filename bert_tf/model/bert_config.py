"""`BertConfig`: the shape of a BERT encoder, its presets and the original JSON format."""

import dataclasses
import json
import logging

import tensorflow as tf

from bert_tf import files
from bert_tf.errors import UserError

log = logging.getLogger("bert_tf")

# Keys of Google's released Chinese and multilingual `bert_config.json` files that original
# BERT's `BertConfig.from_dict` reads and its model never uses (they describe a pooler that was
# not built): they change nothing here either, so they are ignored, and said to be.
IGNORED_KEYS = ("directionality", "pooler_fc_size", "pooler_num_attention_heads",
                "pooler_num_fc_layers", "pooler_size_per_head", "pooler_type")
_IGNORED_SAID = set()  # the files whose ignored keys this process has named
# The fields that make the model: two configs that agree on them make the same weights (dropout
# and initialisation aside).
MODEL_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size",
                "layer_norm_epsilon")


@dataclasses.dataclass(frozen=True)
class BertConfig:
  """Hyper-parameters of a BERT encoder, named as in original BERT's `bert_config.json`."""

  vocab_size: int = 30522
  hidden_size: int = 768
  num_hidden_layers: int = 12
  num_attention_heads: int = 12
  intermediate_size: int = 3072
  hidden_act: str = "gelu"
  hidden_dropout_prob: float = 0.1
  attention_probs_dropout_prob: float = 0.1
  max_position_embeddings: int = 512
  type_vocab_size: int = 2
  initializer_range: float = 0.02
  layer_norm_epsilon: float = 1e-12  # Hugging Face's layer_norm_eps; original BERT's 1e-12

  def __post_init__(self):
    for field in dataclasses.fields(self):  # as read from a JSON file, say
      value, kind = getattr(self, field.name), field.type
      if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise UserError(f"{field.name} {value!r} is not a positive whole number")
      if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))
                            or not 0 <= value < 1):
        raise UserError(f"{field.name} {value!r} is not a number in [0, 1)")
    if self.hidden_size % self.num_attention_heads:
      raise UserError(
          f"hidden_size {self.hidden_size} is not divisible by "
          f"num_attention_heads {self.num_attention_heads}")
    if self.hidden_act != "gelu":
      raise UserError(f"hidden_act {self.hidden_act!r} is not supported (only 'gelu')")

  @classmethod
  def from_preset(cls, name: str, **changes) -> "BertConfig":
    """A preset (`bert_tiny`, `bert_mini`, `bert_base`, ...) with `changes` applied."""
    if name not in PRESETS:
      raise UserError(f"unknown preset {name!r}: use one of {', '.join(sorted(PRESETS))}")
    return PRESETS[name].replace(**changes)

  def replace(self, **changes) -> "BertConfig":
    return dataclasses.replace(self, **changes)

  def check_seq_length(self, seq_length: int) -> None:
    """Rejects examples longer than the model has position embeddings for."""
    if seq_length > self.max_position_embeddings:
      raise UserError(f"seq_length {seq_length} exceeds the model's "
                      f"{self.max_position_embeddings} position embeddings")

  def differences(self, other: "BertConfig") -> str:
    """The fields making the model on which `other` differs, as `name ours (not theirs)`; ""
    when the two make the same model (dropout and initialisation do not count)."""
    return ", ".join(f"{name} {getattr(self, name)} (not {getattr(other, name)})"
                     for name in self.differing(other))

  def differing(self, other: "BertConfig") -> list[str]:
    """The names of the fields making the model on which `other` differs."""
    return [name for name in MODEL_FIELDS if getattr(self, name) != getattr(other, name)]

  @property
  def shape(self) -> str:
    """Its shape in Google's names of the released models: `L-12_H-768_A-12`."""
    return f"L-{self.num_hidden_layers}_H-{self.hidden_size}_A-{self.num_attention_heads}"

  def to_dict(self) -> dict:
    return dataclasses.asdict(self)

  def to_json_file(self, path: str) -> None:
    files.write_json(path, self.to_dict())

  @classmethod
  def from_json_file(cls, path: str) -> "BertConfig":
    """Reads an original-format `bert_config.json`. The keys of `IGNORED_KEYS` are ignored
    (one log line names them); any other unknown key may change the model: an error."""
    if not tf.io.gfile.exists(path):
      raise UserError(f"config file not found: {path}")
    with tf.io.gfile.GFile(path) as f:
      try:
        values = json.load(f)
      except json.JSONDecodeError as e:
        raise UserError(f"config file {path} is not valid JSON: {e}") from None
    if not isinstance(values, dict):
      raise UserError(f"config file {path} is not a JSON object")
    known = {field.name for field in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known - set(IGNORED_KEYS))
    if unknown:
      raise UserError(f"config file {path} has unknown keys: {', '.join(unknown)} (keys that "
                      "would change the model are not ignored; this model has "
                      f"{', '.join(sorted(known))})")
    ignored = sorted(set(values) & set(IGNORED_KEYS))
    if ignored and path not in _IGNORED_SAID:  # a run reads the same file in several places
      _IGNORED_SAID.add(path)
      log.info("Ignored in %s (they do not change the model): %s", path, ", ".join(ignored))
    return cls(**{name: value for name, value in values.items() if name in known})


def _small_bert(layers: int, hidden: int) -> BertConfig:
  # The 24 small BERTs (Turc et al., 2019): 64-dimensional heads, 4x feed-forward.
  return BertConfig(
      hidden_size=hidden,
      num_hidden_layers=layers,
      num_attention_heads=hidden // 64,
      intermediate_size=4 * hidden)


PRESETS = {
    f"bert_uncased_L-{layers}_H-{hidden}_A-{hidden // 64}": _small_bert(layers, hidden)
    for layers in (2, 4, 6, 8, 10, 12)
    for hidden in (128, 256, 512, 768)
}
PRESETS.update({
    "bert_tiny": _small_bert(2, 128),
    "bert_mini": _small_bert(4, 256),
    "bert_small": _small_bert(4, 512),
    "bert_medium": _small_bert(8, 512),
    "bert_base": BertConfig(),
    "bert_large": BertConfig(
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096),
})


def resolve_config(name_or_path: str, vocab_size: int | None) -> BertConfig:
  """Returns the preset called `name_or_path`, or reads it as a `bert_config.json`.

  A preset takes the vocabulary's size; a JSON file must already agree with it. A vocabulary
  not learned yet (`vocab_size` None) is not compared: the shape is checked all the same.
  """
  if name_or_path in PRESETS:
    return BertConfig.from_preset(name_or_path, **(
        {} if vocab_size is None else {"vocab_size": vocab_size}))
  if name_or_path.endswith(".json"):
    config = BertConfig.from_json_file(name_or_path)
    if vocab_size is not None and config.vocab_size != vocab_size:
      raise UserError(
          f"vocab_size {config.vocab_size} in {name_or_path} does not match the "
          f"vocabulary's {vocab_size} tokens")
    return config
  raise UserError(
      f"unknown --config {name_or_path!r}: use a preset ({', '.join(sorted(PRESETS))}) "
      "or a bert_config.json path")

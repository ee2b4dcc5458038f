import json

import pytest

from bert_tf.config import PRESETS, BertConfig, resolve_config
from bert_tf.errors import UserError


def test_presets_cover_the_24_small_berts_base_and_large():
  small = [name for name in PRESETS if name.startswith("bert_uncased_L-")]
  assert len(small) == 24
  assert PRESETS["bert_uncased_L-4_H-256_A-4"] == PRESETS["bert_mini"]
  assert PRESETS["bert_base"].hidden_size == 768
  assert PRESETS["bert_base"].num_hidden_layers == 12
  assert PRESETS["bert_large"].num_attention_heads == 16


def test_preset_takes_the_vocabulary_size():
  config = resolve_config("bert_tiny", vocab_size=1234)
  assert (config.vocab_size, config.num_hidden_layers, config.hidden_size) == (1234, 2, 128)


def test_json_round_trip_in_the_original_format(tmp_path):
  path = str(tmp_path / "bert_config.json")
  config = BertConfig.from_preset("bert_mini", vocab_size=300)
  config.to_json_file(path)
  assert json.load(open(path))["num_attention_heads"] == 4
  assert resolve_config(path, vocab_size=300) == config


def test_json_vocab_size_must_match_the_vocabulary(tmp_path):
  path = str(tmp_path / "bert_config.json")
  BertConfig.from_preset("bert_tiny", vocab_size=300).to_json_file(path)
  with pytest.raises(UserError, match="vocab_size 300 .* does not match .* 301"):
    resolve_config(path, vocab_size=301)


def test_bad_configs_are_user_errors(tmp_path):
  with pytest.raises(UserError, match="unknown --config"):
    resolve_config("bert_huge", vocab_size=10)
  path = tmp_path / "bad.json"
  path.write_text('{"hidden_size": 128, "num_attention_heads": 3}')
  with pytest.raises(UserError, match="not divisible"):
    resolve_config(str(path), vocab_size=10)
  path.write_text('{"hidden_sizes": 128}')
  with pytest.raises(UserError, match="unknown keys: hidden_sizes"):
    resolve_config(str(path), vocab_size=10)

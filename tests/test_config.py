import json
import re

import pytest

from bert_tf.errors import UserError
from bert_tf.model.bert_config import PRESETS, BertConfig, resolve_config


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


@pytest.mark.parametrize("text, message", [
    ('{"hidden_size": "128"}', "hidden_size '128' is not a positive whole number"),
    ('{"num_hidden_layers": -1}', "num_hidden_layers -1 is not a positive whole number"),
    ('{"intermediate_size": 3072.5}', "intermediate_size 3072.5 is not a positive whole"),
    ('{"hidden_dropout_prob": 1.5}', "hidden_dropout_prob 1.5 is not a number in [0, 1)"),
])
def test_a_config_value_of_the_wrong_kind_is_named(tmp_path, text, message):
  path = tmp_path / "bad.json"
  path.write_text(text)
  with pytest.raises(UserError, match=re.escape(message)):
    resolve_config(str(path), vocab_size=10)


# bert_config.json of Google's chinese_L-12_H-768_A-12 release, key for key and value for value
# (multilingual_L-12_H-768_A-12 and multi_cased_L-12_H-768_A-12 differ only in vocab_size).
GOOGLE_CHINESE_CONFIG = {
    "attention_probs_dropout_prob": 0.1,
    "directionality": "bidi",
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "pooler_fc_size": 768,
    "pooler_num_attention_heads": 12,
    "pooler_num_fc_layers": 3,
    "pooler_size_per_head": 128,
    "pooler_type": "first_token_transform",
    "type_vocab_size": 2,
    "vocab_size": 21128,
}


def test_googles_chinese_and_multilingual_configs_load_as_published(tmp_path, caplog):
  path = tmp_path / "bert_config.json"
  path.write_text(json.dumps(GOOGLE_CHINESE_CONFIG, indent=2))
  with caplog.at_level("INFO", logger="bert_tf"):
    config = resolve_config(str(path), vocab_size=21128)
  assert config == BertConfig.from_preset("bert_base", vocab_size=21128)
  assert [r.getMessage() for r in caplog.records] == [
      f"Ignored in {path} (they do not change the model): directionality, pooler_fc_size, "
      "pooler_num_attention_heads, pooler_num_fc_layers, pooler_size_per_head, pooler_type"]


@pytest.mark.parametrize("key, value", [("num_hidden_groups", 1), ("embedding_size", 128)])
def test_a_key_that_would_change_the_model_stays_an_error(tmp_path, key, value):
  path = tmp_path / "bert_config.json"
  path.write_text(json.dumps({**GOOGLE_CHINESE_CONFIG, key: value}))
  with pytest.raises(UserError, match=f"has unknown keys: {key} \\(keys that would change the "
                     "model are not ignored"):
    resolve_config(str(path), vocab_size=21128)

"""Interop with Hugging Face transformers (torch, CPU), original BERT checkpoints and keras-hub:
same weights, same outputs, same token ids. torch and transformers (the `test` extra's: a
missing one fails, it is never skipped) are imported by the tests that use them, not by every
test process that collects this module (3 s each)."""

import functools
import json
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.normalization import BertNormalizer
from bert_tf.data.tokenization import REQUIRED_TOKENS, Vocabulary
from bert_tf.errors import UserError
from bert_tf.interop.huggingface import export_huggingface, load_huggingface, read_huggingface
from bert_tf.interop.keras_hub_preset import export_keras_hub, preset_tokenizer
from bert_tf.interop.state import model_state
from bert_tf.interop.tf1_checkpoint import load_tf1_checkpoint
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.encoder import bert_encoder
from bert_tf.model.pretraining import pretraining_model
from helpers import randomised_model

SENTENCES = [
    ("The \"if\" statement is used for conditional execution.",
     "It selects exactly one of the suites by evaluating the expressions one by one."),
    ("A class definition defines a class object.", "Literals are notations for constants."),
]


@pytest.fixture(scope="module")
def vocabulary(vocab_file):
  return Vocabulary(vocab_file)


@pytest.fixture(scope="module")
def config(vocabulary):
  return BertConfig.from_preset("bert_tiny", vocab_size=len(vocabulary),
                                max_position_embeddings=64)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, config, vocabulary):
  model = randomised_model(config)
  directory = str(tmp_path_factory.mktemp("hf") / "bert")
  export_huggingface(model, config, vocabulary, directory, lower_case=True)
  return model, directory


def encode(vocabulary, pairs, seq_length=32):
  """Features for sentence pairs with our tokenizer, two positions masked per example."""
  tokenizer = vocabulary.tokenizer(lower_case=True)
  rows = []
  for a, b in pairs:
    ids_a = tokenizer.tokenize([a]).flat_values.numpy().tolist()
    ids_b = tokenizer.tokenize([b]).flat_values.numpy().tolist()
    rows.append((([vocabulary.cls_id] + ids_a + [vocabulary.sep_id] + ids_b
                  + [vocabulary.sep_id])[:seq_length], len(ids_a) + 2))
  features = {name: np.zeros((len(rows), seq_length), "int32")
              for name in ("token_ids", "segment_ids", "padding_mask")}
  for i, (ids, a_length) in enumerate(rows):
    features["token_ids"][i, :len(ids)] = ids
    features["segment_ids"][i, a_length:len(ids)] = 1
    features["padding_mask"][i, :len(ids)] = 1
  features["masked_positions"] = np.array([[2, 5]] * len(rows), "int32")
  return features


def hf_outputs(directory, features):
  import torch
  import transformers
  model = transformers.BertForPreTraining.from_pretrained(directory).eval()
  with torch.no_grad():
    out = model(input_ids=torch.tensor(features["token_ids"], dtype=torch.long),
                token_type_ids=torch.tensor(features["segment_ids"], dtype=torch.long),
                attention_mask=torch.tensor(features["padding_mask"], dtype=torch.long))
  rows = np.arange(len(features["token_ids"]))[:, None]
  return (out.prediction_logits.numpy()[rows, features["masked_positions"]],
          out.seq_relationship_logits.numpy())


def test_hf_loads_with_no_missing_or_unexpected_keys(exported):
  import transformers
  _, directory = exported
  _, info = transformers.BertForPreTraining.from_pretrained(directory, output_loading_info=True)
  assert info["missing_keys"] == [] or set(info["missing_keys"]) <= {
      "cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
  assert not info["unexpected_keys"] and not info["mismatched_keys"]


def test_hf_tokenizer_loads_and_agrees(exported, vocabulary):
  import transformers
  _, directory = exported
  theirs = transformers.BertTokenizer.from_pretrained(directory)
  assert theirs.vocab_size == len(vocabulary)
  text = SENTENCES[0][0]
  ours = vocabulary.tokenizer(lower_case=True).tokenize([text]).flat_values.numpy().tolist()
  assert theirs.encode(text) == [vocabulary.cls_id] + ours + [vocabulary.sep_id]


def test_logits_equal_hf_bert_for_pretraining(exported, vocabulary):
  model, directory = exported
  features = encode(vocabulary, SENTENCES)
  ours = model(features, training=False)
  mlm, nsp = hf_outputs(directory, features)
  assert np.abs(ours["mlm"].numpy() - mlm).max() <= 1e-4
  # NSP: our class 1 (IsNext) is their class 0.
  assert np.abs(ours["nsp"].numpy() - nsp[:, ::-1]).max() <= 1e-4
  assert np.abs(ours["nsp"].numpy() - nsp).max() > 1e-2  # so a forgotten swap would fail


def test_hf_round_trip_gives_identical_weights(exported, config, vocabulary, tmp_path):
  _, directory = exported
  model = pretraining_model(config)
  load_huggingface(model, config, directory)
  again = str(tmp_path / "again")
  export_huggingface(model, config, vocabulary, again, lower_case=True)
  first, second = read_huggingface(directory)[1], read_huggingface(again)[1]
  assert sorted(first) == sorted(second)
  for name in first:
    np.testing.assert_array_equal(first[name], second[name], err_msg=name)


def test_tf1_checkpoint_to_ours_to_hf(exported, config, vocabulary, tmp_path,
                                      write_tf1_checkpoint):
  source, directory = exported
  state = model_state(source, config)
  names = write_tf1_checkpoint(
      state, config, str(tmp_path / "tf1"),
      extra={"bert/pooler/dense/kernel/adam_m": np.zeros((128, 128), "float32")})
  assert "bert/encoder/layer_0/attention/self/query/kernel" in names
  assert "cls/predictions/transform/dense/kernel" in names
  assert "cls/seq_relationship/output_weights" in names
  model = pretraining_model(config)
  load_tf1_checkpoint(model, config, str(tmp_path / "tf1"))
  again = str(tmp_path / "hf")
  export_huggingface(model, config, vocabulary, again, lower_case=True)
  exported_state = read_huggingface(again)[1]
  for name, value in read_huggingface(directory)[1].items():
    np.testing.assert_array_equal(exported_state[name], value, err_msg=name)


def test_tf1_checkpoint_that_does_not_fit_is_an_error(exported, config, tmp_path,
                                                       write_tf1_checkpoint):
  source, _ = exported
  state = model_state(source, config)
  write_tf1_checkpoint(state, config, str(tmp_path / "extra"),
                       extra={"bert/encoder/layer_9/odd/kernel": np.zeros(3, "float32")})
  with pytest.raises(UserError, match="unexpected bert.encoder.layer.9.odd.weight"):
    load_tf1_checkpoint(pretraining_model(config), config, str(tmp_path / "extra"))
  del state["bert.pooler.dense.bias"]
  write_tf1_checkpoint(state, config, str(tmp_path / "missing"))
  with pytest.raises(UserError, match="missing bert.pooler.dense.bias"):
    load_tf1_checkpoint(pretraining_model(config), config, str(tmp_path / "missing"))
  bigger = config.replace(vocab_size=config.vocab_size + 1)
  with pytest.raises(UserError, match=f"its .*bert_config.json has vocab_size {config.vocab_size} "
                     rf"\(not {bigger.vocab_size}\)"):
    load_tf1_checkpoint(pretraining_model(bigger), bigger, str(tmp_path / "extra"))


def tanh_gelu_encoder(config, weights, monkeypatch):
  """Our encoder built with keras-hub's tanh approximation of GELU in place of erf."""
  with monkeypatch.context() as patch:
    patch.setattr(keras.activations, "gelu",
                  functools.partial(keras.activations.gelu, approximate=True))
    encoder = bert_encoder(config)
  encoder.set_weights(weights)
  return encoder


def test_keras_hub_preset_loads_and_agrees(exported, config, vocabulary, tmp_path, monkeypatch):
  import keras_hub
  model, _ = exported
  directory = str(tmp_path / "preset")
  export_keras_hub(model, config, vocabulary, directory, lower_case=True, seq_length=32)
  backbone = keras_hub.models.BertBackbone.from_preset(directory)
  tokenizer = keras_hub.models.BertTokenizer.from_preset(directory)
  text = SENTENCES[0][0]
  ours_ids = vocabulary.tokenizer(lower_case=True).tokenize([text]).flat_values.numpy()
  np.testing.assert_array_equal(np.asarray(tokenizer(text)), ours_ids)
  features = encode(vocabulary, SENTENCES)
  inputs = {k: features[k] for k in ("token_ids", "segment_ids", "padding_mask")}
  theirs = backbone(inputs)
  encoder = model.get_layer("bert_encoder")
  # BertBackbone uses the tanh approximation of GELU, ours erf: the same encoder built with the
  # tanh form gives keras-hub's outputs to float32 rounding; the erf one does not.
  tanh_encoder = tanh_gelu_encoder(config, encoder.get_weights(), monkeypatch)
  for output in ("sequence_output", "pooled_output"):
    with_tanh = tanh_encoder(inputs)[output].numpy()
    np.testing.assert_allclose(theirs[output].numpy(), with_tanh, atol=1e-5, err_msg=output)
    assert np.abs(encoder(inputs)[output].numpy() - with_tanh).max() > 1e-4, output


# Accented and other non-ASCII text on which keras-hub's tokenizer, as the preset sets it, gives
# our ids cased and uncased: Latin letters with every kind of mark, Greek, Cyrillic, Arabic,
# Hebrew, Devanagari, Thai, CJK, kana, emoji, typographic punctuation.
SAME_IDS = [
    "Café naïve résumé", "Ça va? L'été à Noël, où êtes-vous? Œuvre, cœur.",
    "Über Äpfel und Öl aus München.", "El niño pidió café, ¿sí? ¡Olé!",
    "Coração, ação, não; São Paulo.", "Perché così? Più tardi.", "Zażółć gęślą jaźń. Łódź",
    "Příliš žluťoučký kůň úpěl ďábelské ódy.", "Știință și țară.", "İstanbul ılık, IŞIK.",
    "Árvíztűrő tükörfúrógép.", "Þórður og Æsa á Íslandi.", "Tiếng Việt có dấu: Đà Nẵng.",
    "Съешь же ещё этих мягких французских булок.", "Їжак і ґудзик.", "Καλημέρα κόσμε",
    "مرحبا بالعالم، كيف حالك؟", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
    "こんにちは世界、がぎぐ。カタカナ", "Emoji 😀👍🏽 ❤️ ★ ©®",
    "«Guillemets» „Anführung“ — dash – ‘quote’",
    "Å Ω K e\u0301",
]
# Uncased only: keras-hub lower-cases with NFKC case folding (tf_text.case_fold_utf8), which
# also folds compatibility forms and final sigmas; original BERT's str.lower() does not.
# text -> keras-hub's pieces (ours keep the character as it is: `ß`, `ﬁ`, `ς`, `…`, ...).
NFKC_FOLDED = {
    "Straße": "s ##t ##r ##a ##s ##s ##e",
    "ﬁne": "f ##i ##n ##e",
    "ＡＢＣ１２３": "a ##b ##c ##1 ##2 ##3",
    "中文，世界！": "中 文 , 世 界 !",
    "Wait…": "w ##a ##i ##t . ##. ##.",
    "½": "1 ##⁄ ##2",
    "x²": "x ##2",
    "①": "1",
    "™": "t ##m",
    "ǅ": "d ##ž",
    "Οδυσσεύς": "ο ##δ ##υ ##σ ##σ ##ε ##υ ##σ",
    "한국": "한 ##국",  # recomposed after NFD; ours (original BERT) keeps the jamo
}
# Cased and uncased: spaces other than ASCII ones do not separate words in keras-hub (the word
# is [UNK] unless the vocabulary has the space in it); format characters separate words there,
# original BERT deletes them.
NOT_SEPARATED = {"no\u00a0break": "[UNK]", "go\u3000on": "[UNK]",
                 "zero\u200bwidth": "z ##e ##r ##o w ##i ##d ##t ##h",
                 "soft\u00adhyphen": "s ##o ##f ##t h ##y ##p ##h ##e ##n",
                 "nul\x00byte": "n ##u ##l b ##y ##t ##e",
                 # keras-hub's WordPiece takes words of up to 100 bytes, ours 200.
                 "a" * 101: "[UNK]"}


def character_vocabulary(path, texts, lower_case):
  """Every character either tokenizer may produce from `texts`, alone and as a ## piece, so
  that no difference hides behind [UNK]."""
  import unicodedata
  characters = set()
  for text in texts:
    ours = our_normalisation(text, lower_case)
    characters |= set(ours) | set(text) | set(unicodedata.normalize("NFD", text))
    characters |= set(unicodedata.normalize("NFKC", text).casefold())
    characters |= set(unicodedata.normalize("NFKC", unicodedata.normalize("NFD", text)).casefold())
  characters = sorted(c for c in characters if unicodedata.category(c)[0] not in "CZ")
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join([*REQUIRED_TOKENS, *characters, *("##" + c for c in characters)]) + "\n")
  return Vocabulary(path)


def our_normalisation(text, lower_case):
  return BertNormalizer(lower_case).normalize(tf.constant([text])).numpy()[0].decode("utf-8")


def keras_hub_pieces(tokenizer, vocabulary, texts):
  return [" ".join(vocabulary.tokens[int(i)] for i in ids) for ids in tokenizer(texts)]


@pytest.mark.parametrize("lower_case", [True, False])
def test_keras_hub_preset_tokenizer_gives_our_ids_on_non_ascii_text(lower_case, config,
                                                                     tmp_path):
  import keras_hub
  texts = SAME_IDS + ([] if lower_case else list(NFKC_FOLDED))
  vocabulary = character_vocabulary(str(tmp_path / "vocab.txt"), texts, lower_case)
  shaped = config.replace(vocab_size=len(vocabulary))
  export_keras_hub(pretraining_model(shaped), shaped, vocabulary, str(tmp_path / "preset"),
                   lower_case=lower_case, seq_length=32)
  tokenizer = keras_hub.models.BertTokenizer.from_preset(str(tmp_path / "preset"))
  ours = vocabulary.tokenizer(lower_case).tokenize(tf.constant(texts)).to_list()
  theirs = [[int(i) for i in ids] for ids in tokenizer(texts)]
  assert [text for text, a, b in zip(texts, ours, theirs) if a != b] == []
  assert vocabulary.unk_id not in sum(ours, [])


@pytest.mark.parametrize("lower_case", [True, False])
def test_where_keras_hub_tokenizes_otherwise(lower_case, tmp_path):
  differing = {**(NFKC_FOLDED if lower_case else {}), **NOT_SEPARATED}
  vocabulary = character_vocabulary(str(tmp_path / "vocab.txt"), list(differing), lower_case)
  theirs = keras_hub_pieces(preset_tokenizer(vocabulary, lower_case), vocabulary,
                            list(differing))
  assert dict(zip(differing, theirs)) == differing
  ours = vocabulary.tokenizer(lower_case).tokenize(tf.constant(list(differing))).to_list()
  assert all(vocabulary.unk_id not in ids for ids in ours)
  assert "".join(vocabulary.tokens[i].removeprefix("##") for i in ours[0]) == (
      "straße" if lower_case else "nobreak")


def test_keras_hub_preset_of_the_issue_keeps_accented_words(vocabulary, config, tmp_path):
  import keras_hub
  export_keras_hub(pretraining_model(config), config, vocabulary, str(tmp_path / "preset"),
                   lower_case=True, seq_length=32)
  tokenizer = keras_hub.models.BertTokenizer.from_preset(str(tmp_path / "preset"))
  text = "Café naïve résumé"
  ours = vocabulary.tokenizer(lower_case=True).tokenize([text]).flat_values.numpy().tolist()
  assert [int(i) for i in tokenizer(text)] == ours and vocabulary.unk_id not in ours
  assert tokenizer.get_config()["strip_accents"] is True


@pytest.mark.e2e
def test_keras_hub_text_classifier_fine_tunes_from_the_preset(vocabulary, config, tmp_path):
  import keras_hub
  directory = str(tmp_path / "preset")
  export_keras_hub(pretraining_model(config), config, vocabulary, directory, lower_case=True,
                   seq_length=32)
  keras.utils.set_random_seed(0)
  classifier = keras_hub.models.BertTextClassifier.from_preset(directory, num_classes=2)
  assert classifier.preprocessor.sequence_length == 32
  classifier.compile(optimizer=keras.optimizers.Adam(1e-3))
  texts = [a for a, _ in SENTENCES] + [b for _, b in SENTENCES]
  x = texts * 4
  y = np.array([0, 0, 1, 1] * 4)
  before = classifier.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)["loss"]
  classifier.fit(x, y, batch_size=8, epochs=8, verbose=0)  # 16 steps
  after = classifier.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)["loss"]
  print(f"loss {before:.4f} before, {after:.4f} after 16 steps")
  assert after < before * 0.7, (before, after)


TEXTS = [
    "Héllo Wörld! Ça va? naïve café, résumé.",
    "中文字符和日本語のテキスト mixed with English.",
    "Punctuation: (a), [b], {c}; \"quoted\" — dashes – and ‘quotes’... done?!",
    "Control\tcharacters\u0007 and\u200b zero\x00width and\r\nnewlines.",
    # Words over 200 characters are [UNK] in original BERT (and here); transformers' limit is
    # 100, so words between the two are left out of the comparison.
    "a" * 90 + " " + "b" * 201 + " supercalifragilisticexpialidocious",
    "The \"if\" statement is used for conditional execution: if_stmt ::= \"if\" expr.",
]


@pytest.mark.e2e
@pytest.mark.parametrize("lower_case", [True, False])
def test_tokenizer_matches_transformers_bert_tokenizer(lower_case, vocab_file, corpus_pattern,
                                                       tmp_path):
  if lower_case:
    path = vocab_file
  else:
    from bert_tf.data.vocabulary_learner import build_vocabulary
    path = str(tmp_path / "cased.txt")
    build_vocabulary(corpus_pattern, path, vocab_size=4000, lower_case=False)
  import transformers
  vocabulary = Vocabulary(path)
  theirs = transformers.BertTokenizer(vocab=path, do_lower_case=lower_case)
  ours = vocabulary.tokenizer(lower_case).tokenize(TEXTS).to_list()
  for text, ids in zip(TEXTS, ours):
    assert ids == theirs.encode(text, add_special_tokens=False), text


def test_sharded_safetensors_are_read(exported, tmp_path):
  # transformers saves a large model as shards named by model.safetensors.index.json.
  from safetensors.numpy import load_file, save_file
  _, directory = exported
  sharded = tmp_path / "sharded"
  shutil.copytree(directory, sharded)
  state = load_file(str(sharded / "model.safetensors"))
  os.remove(sharded / "model.safetensors")
  names = sorted(state)
  shards = {"model-00001-of-00002.safetensors": names[::2],
            "model-00002-of-00002.safetensors": names[1::2]}
  for shard, shard_names in shards.items():
    save_file({name: state[name] for name in shard_names}, str(sharded / shard))
  (sharded / "model.safetensors.index.json").write_text(json.dumps({
      "metadata": {}, "weight_map": {name: shard for shard, shard_names in shards.items()
                                     for name in shard_names}}))
  whole, parts = read_huggingface(directory)[1], read_huggingface(str(sharded))[1]
  assert sorted(whole) == sorted(parts)
  for name in whole:
    np.testing.assert_array_equal(whole[name], parts[name], err_msg=name)
  os.remove(sharded / "model-00002-of-00002.safetensors")
  with pytest.raises(UserError, match=r"the shards model-00002-of-00002.safetensors that "
                                      r".*model.safetensors.index.json names are not there$"):
    read_huggingface(str(sharded))


def test_a_layer_norm_epsilon_other_than_berts_is_honoured(config, vocabulary, tmp_path):
  wide = config.replace(layer_norm_epsilon=0.5)  # large enough to show in the outputs
  model = randomised_model(wide)
  directory = str(tmp_path / "hf")
  export_huggingface(model, wide, vocabulary, directory, lower_case=True)
  assert json.load(open(os.path.join(directory, "config.json")))["layer_norm_eps"] == 0.5
  read, _ = read_huggingface(directory)
  assert read == wide
  wide.to_json_file(str(tmp_path / "bert_config.json"))
  assert BertConfig.from_json_file(str(tmp_path / "bert_config.json")) == wide
  norms = [layer for layer in model._flatten_layers()
           if isinstance(layer, keras.layers.LayerNormalization)]
  assert len(norms) == 2 * wide.num_hidden_layers + 2  # the embeddings', each layer's, MLM's
  assert {layer.epsilon for layer in norms} == {0.5}
  features = encode(vocabulary, SENTENCES)
  mlm, _ = hf_outputs(directory, features)
  assert np.abs(model(features, training=False)["mlm"].numpy() - mlm).max() <= 1e-4
  narrow = pretraining_model(config)  # the same weights under BERT's 1e-12
  narrow.set_weights(model.get_weights())
  assert np.abs(narrow(features, training=False)["mlm"].numpy() - mlm).max() > 1e-3
  with pytest.raises(UserError, match=r"^keras-hub's BertBackbone has layer norms of epsilon "
                                      r"1e-12, this model's are of 0.5: export it as "
                                      r"savedmodel or hf$"):
    export_keras_hub(model, wide, vocabulary, str(tmp_path / "preset"), lower_case=True,
                     seq_length=32)

"""Interop with Hugging Face transformers (torch, CPU), original BERT checkpoints and keras-hub:
same weights, same outputs, same token ids."""

import functools
import os

import keras
import numpy as np
import pytest
import tensorflow as tf
# In the `test` extra (torch 2.13.0 CPU): a missing one fails the run, it is never skipped.
import torch
import transformers

from bert_tf.config import BertConfig
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.interop.huggingface import export_huggingface, load_huggingface, read_huggingface
from bert_tf.interop.keras_hub_preset import export_keras_hub
from bert_tf.interop.state import model_state
from bert_tf.interop.tf1_checkpoint import load_tf1_checkpoint
from bert_tf.model.encoder import bert_encoder
from bert_tf.model.pretraining import pretraining_model

SENTENCES = [
    ("The \"if\" statement is used for conditional execution.",
     "It selects exactly one of the suites by evaluating the expressions one by one."),
    ("A class definition defines a class object.", "Literals are notations for constants."),
]


def randomised_model(config, seed=0):
  """A model whose every weight is random (biases and layer norms too), so that a weight put
  in the wrong place or orientation shows in the outputs."""
  model = pretraining_model(config)
  rng = np.random.default_rng(seed)
  for variable in model.weights:
    variable.assign(rng.normal(0, 0.2, variable.shape).astype("float32")
                    + (1.0 if variable.path.endswith("gamma") else 0.0))
  return model


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
  model = transformers.BertForPreTraining.from_pretrained(directory).eval()
  with torch.no_grad():
    out = model(input_ids=torch.tensor(features["token_ids"], dtype=torch.long),
                token_type_ids=torch.tensor(features["segment_ids"], dtype=torch.long),
                attention_mask=torch.tensor(features["padding_mask"], dtype=torch.long))
  rows = np.arange(len(features["token_ids"]))[:, None]
  return (out.prediction_logits.numpy()[rows, features["masked_positions"]],
          out.seq_relationship_logits.numpy())


def test_hf_loads_with_no_missing_or_unexpected_keys(exported):
  _, directory = exported
  _, info = transformers.BertForPreTraining.from_pretrained(directory, output_loading_info=True)
  assert info["missing_keys"] == [] or set(info["missing_keys"]) <= {
      "cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
  assert not info["unexpected_keys"] and not info["mismatched_keys"]


def test_hf_tokenizer_loads_and_agrees(exported, vocabulary):
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


def write_tf1_checkpoint(state, config, directory, extra=()):
  """An original-BERT-format checkpoint (TF1 variable names) made from a canonical state."""
  variables = {}
  for name, value in state.items():
    if name == "cls.predictions.bias":
      variables["cls/predictions/output_bias"] = value
    elif name.startswith("cls.seq_relationship."):
      variables["cls/seq_relationship/output_" + (
          "weights" if name.endswith("weight") else "bias")] = value
    else:
      parts = name.replace("layer.", "layer_").split(".")
      is_embedding = parts[-2].endswith("_embeddings")
      if is_embedding:
        variables["/".join(parts[:-1])] = value
      elif parts[-2] == "LayerNorm":
        variables["/".join(parts[:-1]) + ("/gamma" if parts[-1] == "weight" else "/beta")] = value
      else:
        variables["/".join(parts[:-1]) + ("/kernel" if parts[-1] == "weight" else "/bias")] = (
            value.T if parts[-1] == "weight" else value)
  variables.update(extra)
  os.makedirs(directory, exist_ok=True)
  with tf.Graph().as_default():
    created = [tf.compat.v1.get_variable(name, initializer=tf.constant(value))
               for name, value in variables.items()]
    saver = tf.compat.v1.train.Saver(created)
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      saver.save(session, os.path.join(directory, "bert_model.ckpt"))
  config.to_json_file(os.path.join(directory, "bert_config.json"))
  return sorted(variables)


def test_tf1_checkpoint_to_ours_to_hf(exported, config, vocabulary, tmp_path):
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


def test_tf1_checkpoint_that_does_not_fit_is_an_error(exported, config, tmp_path):
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
  with pytest.raises(UserError, match="does not match the model's config"):
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
  export_keras_hub(model, config, vocabulary, directory, lower_case=True)
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


@pytest.mark.parametrize("lower_case", [True, False])
def test_tokenizer_matches_transformers_bert_tokenizer(lower_case, vocab_file, corpus_pattern,
                                                       tmp_path):
  if lower_case:
    path = vocab_file
  else:
    from bert_tf.data.vocabulary_learner import build_vocabulary
    path = str(tmp_path / "cased.txt")
    build_vocabulary(corpus_pattern, path, vocab_size=4000, lower_case=False)
  vocabulary = Vocabulary(path)
  theirs = transformers.BertTokenizer(vocab=path, do_lower_case=lower_case)
  ours = vocabulary.tokenizer(lower_case).tokenize(TEXTS).to_list()
  for text, ids in zip(TEXTS, ours):
    assert ids == theirs.encode(text, add_special_tokens=False), text

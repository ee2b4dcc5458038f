"""Checkpoints as they are published, not only as bert_tf writes them: Hugging Face BERT
classes other than `BertForPreTraining` (a base model, a masked-LM one, a classifier), older
uploads' layer-norm names, and original BERT checkpoints of run_classifier.py. The encoder is
read whole; a head or pooler the checkpoint lacks starts from its initial weights and another
model's head is left, each said in one line."""

import json
import logging
import os
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.interop.huggingface import export_huggingface, load_huggingface
from bert_tf.interop.state import model_state
from bert_tf.interop.tf1_checkpoint import load_tf1_checkpoint
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model

ENCODER = ("bert.embeddings.", "bert.encoder.")


@pytest.fixture(scope="module")
def config(vocab_file):
  return BertConfig.from_preset("bert_tiny", vocab_size=len(Vocabulary(vocab_file)),
                                max_position_embeddings=64)


@pytest.fixture(scope="module")
def published(tmp_path_factory, config, vocab_file):
  """A random model's canonical state and its `BertForPreTraining` directory."""
  model = pretraining_model(config)
  rng = np.random.default_rng(0)
  for variable in model.weights:
    variable.assign(rng.normal(0, 0.2, variable.shape).astype("float32"))
  directory = str(tmp_path_factory.mktemp("hf") / "pretraining")
  export_huggingface(model, config, Vocabulary(vocab_file), directory, lower_case=True)
  return model_state(model, config), directory


def loaded(config, load, source):
  """(state after loading, state before): a fresh model's canonical state both times."""
  model = pretraining_model(config)
  before = model_state(model, config)
  load(model, config, source)
  return model_state(model, config), before


def resaved(directory, out, transformers_class: str, **kwargs) -> str:
  """The checkpoint in `directory` loaded as the transformers class named, saved in `out`."""
  import transformers  # here, not in every test process that collects this module (3 s)
  model = getattr(transformers, transformers_class).from_pretrained(directory, **kwargs)
  model.save_pretrained(out)
  shutil.copy(os.path.join(directory, "vocab.txt"), out)
  return str(out)


@pytest.mark.parametrize("transformers_class,kept,initial,not_read", [
    ("BertModel", ("bert.",), ("cls.",), ""),
    ("BertForMaskedLM", (*ENCODER, "cls.predictions."),
     ("bert.pooler.", "cls.seq_relationship."), ""),
    ("BertForSequenceClassification", ("bert.",), ("cls.",), "classifier.bias"),
])
def test_a_hugging_face_bert_of_another_class(published, config, tmp_path, caplog,
                                              transformers_class, kept, initial, not_read):
  state, directory = published
  source = resaved(directory, tmp_path / "resaved", transformers_class)
  with caplog.at_level(logging.WARNING, logger="bert_tf"):
    after, before = loaded(config, load_huggingface, source)
  for name in after:
    want = state[name] if name.startswith(kept) else before[name]
    assert name.startswith(kept + initial)
    np.testing.assert_array_equal(after[name], want, err_msg=name)
  said = caplog.text
  assert "initialised at random" in said
  assert not_read in said and ("not read" in said) == bool(not_read)


def test_older_uploads_layer_norm_names(published, config, tmp_path):
  state, directory = published
  old = str(tmp_path / "old")
  shutil.copytree(directory, old)
  weights = load_file(os.path.join(old, "model.safetensors"))
  save_file({name.replace("LayerNorm.weight", "LayerNorm.gamma")
                 .replace("LayerNorm.bias", "LayerNorm.beta"): value
             for name, value in weights.items()}, os.path.join(old, "model.safetensors"))
  after, _ = loaded(config, load_huggingface, old)
  for name in state:
    np.testing.assert_array_equal(after[name], state[name], err_msg=name)


def test_a_head_read_in_part_is_still_an_error(published, config, tmp_path):
  _, directory = published
  cut = str(tmp_path / "cut")
  shutil.copytree(directory, cut)
  weights = load_file(os.path.join(cut, "model.safetensors"))
  del weights["cls.predictions.transform.dense.bias"]
  save_file(weights, os.path.join(cut, "model.safetensors"))
  with pytest.raises(UserError, match="missing cls.predictions.transform.dense.bias"):
    loaded(config, load_huggingface, cut)


def test_an_original_bert_classifier_checkpoint(published, config, tmp_path, caplog,
                                                write_tf1_checkpoint):
  """run_classifier.py saves the encoder with its own `output_weights`, `output_bias` and no
  pre-training heads."""
  state, _ = published
  encoder = {name: value for name, value in state.items() if name.startswith("bert.")}
  directory = str(tmp_path / "classifier")
  write_tf1_checkpoint(encoder, config, directory, extra={
      "output_weights": np.zeros((3, config.hidden_size), "float32"),
      "output_bias": np.zeros(3, "float32")})
  with caplog.at_level(logging.WARNING, logger="bert_tf"):
    after, before = loaded(config, load_tf1_checkpoint, directory)
  for name in after:
    want = state[name] if name.startswith("bert.") else before[name]
    np.testing.assert_array_equal(after[name], want, err_msg=name)
  assert "the MLM head or the NSP head: initialised at random" in caplog.text
  assert "not read: output_bias, output_weights" in caplog.text


def test_the_config_of_such_a_class_reads_as_ours(published, config, tmp_path):
  """transformers writes `architectures` and its version into config.json: not the model's
  shape, so not a difference."""
  _, directory = published
  source = resaved(directory, tmp_path / "base", "BertModel")
  with open(os.path.join(source, "config.json")) as f:
    assert json.load(f)["architectures"] == ["BertModel"]
  loaded(config, load_huggingface, source)


def test_fine_tuning_refuses_a_vocabulary_of_another_size_than_the_model(published, tmp_path):
  from bert_tf.finetune.model import load_pretrained
  _, directory = published
  source = str(tmp_path / "smaller")
  shutil.copytree(directory, source)
  with open(os.path.join(source, "config.json")) as f:
    values = json.load(f)
  values["vocab_size"] -= 10
  with open(os.path.join(source, "config.json"), "w") as f:
    json.dump(values, f)
  with pytest.raises(UserError, match=f"its vocabulary {source}/vocab.txt has "
                     f"{values['vocab_size'] + 10} tokens, but its model's vocab_size is "
                     f"{values['vocab_size']}: they must match"):
    load_pretrained(source)


def test_an_original_bert_checkpoint_as_its_index_file_and_cut_short(
    published, config, tmp_path, write_tf1_checkpoint, vocab_file):
  from bert_tf.finetune.model import load_pretrained
  state, _ = published
  directory = str(tmp_path / "uncased_L-2_H-128_A-2")
  write_tf1_checkpoint(state, config, directory)
  shutil.copy(vocab_file, os.path.join(directory, "vocab.txt"))
  pretrained = load_pretrained(os.path.join(directory, "bert_model.ckpt.index"))
  assert pretrained.lower_case
  with pytest.raises(UserError, match="is not found"):
    load_pretrained(str(tmp_path / "nowhere"))
  data = os.path.join(directory, "bert_model.ckpt.data-00000-of-00001")
  with open(data, "r+b") as f:
    f.truncate(os.path.getsize(data) // 2)
  with pytest.raises(UserError, match="the original BERT checkpoint .* cannot be read: "):
    load_tf1_checkpoint(pretraining_model(config), config, directory)


def test_a_cased_checkpoint_lower_cased_by_the_run_is_warned_about(published, tmp_path, caplog):
  from bert_tf.interop import init_checkpoint, tf1_checkpoint
  from bert_tf.interop.source import open_source
  _, directory = published  # exported with do_lower_case true
  cased = str(tmp_path / "cased")
  shutil.copytree(directory, cased)
  with open(os.path.join(cased, "tokenizer_config.json"), "w") as f:
    json.dump({"do_lower_case": False}, f)
  with caplog.at_level(logging.WARNING, logger="bert_tf"):
    init_checkpoint.check_case(open_source(directory), do_lower_case=True)
    assert not caplog.text
    init_checkpoint.check_case(open_source(cased), do_lower_case=True)
  assert (f"--init_checkpoint {cased} was trained on cased text, but this run lower-cases it: "
          "give --nodo_lower_case to match it") in caplog.text
  # Google's releases: the case is in the directory's name.
  for name, lower in (("multi_cased_L-12_H-768_A-12", False), ("uncased_L-12_H-768_A-12", True)):
    assert tf1_checkpoint.lower_case(str(tmp_path / name / "bert_model.ckpt")) is lower

"""`open_source`: the one place that decides what a model path is. Each kind (a bert_tf
model_dir, finished or still training; a Hugging Face directory; an original BERT checkpoint
given four ways) gives the same shape, vocabulary, case and weights; each wrong path is one
line naming the problem."""

import json
import logging
import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import model_dir as names
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.interop import init_checkpoint
from bert_tf.interop.huggingface import export_huggingface
from bert_tf.interop.keras_hub_preset import export_keras_hub
from bert_tf.interop.source import (
  ACCEPTED,
  HuggingFaceDirectory,
  OriginalCheckpoint,
  RunDirectory,
  open_source,
)
from bert_tf.interop.state import model_state
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model


@pytest.fixture(scope="module")
def config(vocab_file):
  return BertConfig.from_preset("bert_tiny", vocab_size=len(Vocabulary(vocab_file)),
                                max_position_embeddings=64)


@pytest.fixture(scope="module")
def model(config):
  keras.utils.set_random_seed(0)
  return pretraining_model(config)


def write_run(directory, model, config, vocab_file, *, finished=True, lower_case=True):
  """The files train.py leaves in a model_dir: a finished run's final weights, or a running
  one's checkpoint index only."""
  os.makedirs(os.path.join(directory, names.CHECKPOINTS))
  config.to_json_file(os.path.join(directory, names.CONFIG_FILE))
  shutil.copy(vocab_file, os.path.join(directory, names.VOCAB_FILE))
  with open(os.path.join(directory, names.TRAIN_CONFIG_FILE), "w") as f:
    json.dump({"do_lower_case": lower_case, "seq_length": 32}, f)
  if finished:
    model.save_weights(os.path.join(directory, names.WEIGHTS_FILE))
  else:
    with open(os.path.join(directory, names.CHECKPOINTS, "checkpoint"), "w") as f:
      f.write('model_checkpoint_path: "ckpt-4"\nall_model_checkpoint_paths: "ckpt-4"\n')
  return str(directory)


@pytest.fixture(scope="module")
def sources(tmp_path_factory, model, config, vocab_file, write_tf1_checkpoint):
  """One model in every kind, by name."""
  root = tmp_path_factory.mktemp("sources")
  paths = {"run": write_run(root / "run", model, config, vocab_file),
           "training": write_run(root / "training", model, config, vocab_file, finished=False),
           "hf": export_huggingface(model, config, Vocabulary(vocab_file), str(root / "hf"),
                                    lower_case=True)}
  original = str(root / "uncased_L-2_H-128_A-2")
  write_tf1_checkpoint(model_state(model, config), config, original)
  shutil.copy(vocab_file, os.path.join(original, "vocab.txt"))
  prefix = os.path.join(original, "bert_model.ckpt")
  paths.update(original=original, prefix=prefix, index=prefix + ".index",
               data=prefix + ".data-00000-of-00001")
  return paths


def copied(sources, name, tmp_path) -> str:
  path = str(tmp_path / name)
  shutil.copytree(sources[name], path)
  return path


KINDS = {"run": RunDirectory, "training": RunDirectory, "hf": HuggingFaceDirectory,
         "original": OriginalCheckpoint, "prefix": OriginalCheckpoint,
         "index": OriginalCheckpoint, "data": OriginalCheckpoint}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_kind_gives_the_shape_vocabulary_and_case(sources, config, vocab_file, name):
  source = open_source(sources[name])
  assert type(source) is KINDS[name]
  assert source.kind == {RunDirectory: "a bert_tf model_dir",
                         HuggingFaceDirectory: "a Hugging Face directory",
                         OriginalCheckpoint: "an original BERT checkpoint"}[KINDS[name]]
  assert source.has_checkpoint == (name == "training")
  assert not source.config.differences(config)
  assert source.vocabulary.tokens == Vocabulary(vocab_file).tokens
  assert source.lower_case is True
  source.check_config(config)
  if KINDS[name] is OriginalCheckpoint:
    assert source.prefix == sources["prefix"]


@pytest.mark.parametrize("name", ["run", "hf", "original", "index"])
def test_each_kind_gives_the_models_weights(sources, model, config, name):
  fresh = pretraining_model(config)
  assert not np.allclose(fresh.weights[0].numpy(), model.weights[0].numpy())
  open_source(sources[name]).load_weights(fresh, config)
  want, got = model_state(model, config), model_state(fresh, config)
  assert sorted(got) == sorted(want)
  for weight in want:
    np.testing.assert_allclose(got[weight], want[weight], atol=1e-6, err_msg=weight)


def test_a_run_still_training_gives_its_newest_whole_checkpoints_weights(
    sources, config, model, tmp_path, caplog):
  path = copied(sources, "training", tmp_path)
  checkpoints = os.path.join(path, names.CHECKPOINTS)
  with pytest.raises(UserError, match=f"^no checkpoint in {checkpoints} can be read .the "
                     f"latest, {checkpoints}/ckpt-4: its index file is missing.: check "
                     "--init_checkpoint$"):
    open_source(path).load_weights(pretraining_model(config), config)
  saved = tf.train.Checkpoint(model=model)
  saved.save_counter  # made, as a CheckpointManager's save makes it  # noqa: B018
  saved.write(os.path.join(checkpoints, "ckpt-4"))
  taken = pretraining_model(config)
  caplog.set_level(logging.INFO, "bert_tf")
  open_source(path).load_weights(taken, config)
  assert (f"{path} has no model.weights.h5: taking the weights of its checkpoint "
          f"{checkpoints}/ckpt-4") in caplog.messages
  for found, expected in zip(taken.weights, model.weights):
    np.testing.assert_array_equal(found.numpy(), expected.numpy())


@pytest.mark.parametrize("name", ["run", "hf", "original"])
def test_the_case_each_kind_was_trained_in(sources, tmp_path, name):
  path = copied(sources, name, tmp_path / "cased" if name == "original" else tmp_path)
  if name == "run":
    with open(os.path.join(path, names.TRAIN_CONFIG_FILE), "w") as f:
      json.dump({"do_lower_case": False}, f)
  elif name == "hf":
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
      json.dump({"do_lower_case": False}, f)
  else:  # Google's cased releases say so in their directory's name
    path = shutil.move(path, str(tmp_path / "cased_L-2_H-128_A-2"))
  assert open_source(path).lower_case is False


def test_the_case_of_any_kind_is_checked_against_the_run(sources, tmp_path, caplog):
  path = copied(sources, "run", tmp_path)
  with open(os.path.join(path, names.TRAIN_CONFIG_FILE), "w") as f:
    json.dump({"do_lower_case": False}, f)
  with caplog.at_level(logging.WARNING, logger="bert_tf"):
    init_checkpoint.check_case(open_source(sources["run"]), do_lower_case=True)
    assert not caplog.messages
    init_checkpoint.check_case(open_source(path), do_lower_case=True)
  assert caplog.messages == [
      f"--init_checkpoint {path} was trained on cased text, but this run lower-cases it: give "
      "--nodo_lower_case to match it"]


def refused(path, problem, flag="--init_checkpoint"):
  return f"{flag} {path} is {problem}: it takes {ACCEPTED}"


def test_a_path_that_is_no_model(tmp_path, sources, config, vocab_file):
  """Missing, an empty directory, a directory of something else, a file."""
  (tmp_path / "empty").mkdir()
  (tmp_path / "texts").mkdir()
  (tmp_path / "texts" / "vocab.txt").write_text("[PAD]\n")
  (tmp_path / "weights.bin").write_bytes(b"\x00" * 64)
  for name, problem in (("nowhere", "not found"),
                        ("empty", "a directory with no checkpoint in it"),
                        ("texts", "a directory with no checkpoint in it"),
                        ("weights.bin", "a file that is not a checkpoint"),
                        ("nowhere/bert_model.ckpt", "not found")):
    path = str(tmp_path / name)
    with pytest.raises(UserError) as error:
      open_source(path)
    assert str(error.value) == refused(path, problem)
  with pytest.raises(UserError) as error:
    open_source(str(tmp_path / "nowhere"), "--model_dir")
  assert str(error.value) == refused(tmp_path / "nowhere", "not found", "--model_dir")


def test_a_keras_hub_preset_is_not_taken_for_a_run(tmp_path, model, config, vocab_file):
  """It has a model.weights.h5 too."""
  path = export_keras_hub(model, config, Vocabulary(vocab_file), str(tmp_path / "preset"),
                          lower_case=True, seq_length=32)
  assert os.path.exists(os.path.join(path, "model.weights.h5"))
  with pytest.raises(UserError) as error:
    open_source(path)
  assert str(error.value) == refused(
      path, "a keras-hub preset, which keras-hub's from_preset reads")


def test_an_original_checkpoint_that_cannot_be_read(tmp_path, sources):
  garbage = tmp_path / "garbage"
  garbage.mkdir()
  (garbage / "bert_model.ckpt.index").write_bytes(b"not an sstable")
  with pytest.raises(UserError) as error:
    open_source(str(garbage))
  assert str(error.value).startswith(f"--init_checkpoint {garbage} is not a readable "
                                     "checkpoint (")
  assert str(error.value).endswith(f": it takes {ACCEPTED}")
  index_only = copied(sources, "original", tmp_path)
  os.remove(os.path.join(index_only, "bert_model.ckpt.data-00000-of-00001"))
  prefix = os.path.join(index_only, "bert_model.ckpt")
  for path in (index_only, prefix + ".index"):
    with pytest.raises(UserError) as error:
      open_source(path)
    assert str(error.value) == refused(
        path, f"not a readable checkpoint (no {prefix}.data-* file beside its index)")


def test_an_original_checkpoint_without_its_config_or_vocabulary(tmp_path, sources):
  path = copied(sources, "original", tmp_path)
  prefix = os.path.join(path, "bert_model.ckpt")
  os.remove(os.path.join(path, "vocab.txt"))
  with pytest.raises(UserError, match=f"^vocabulary file not found: {path}/vocab.txt$"):
    open_source(path).vocabulary
  os.remove(os.path.join(path, "bert_config.json"))
  with pytest.raises(UserError) as error:
    open_source(path).config
  assert str(error.value) == (f"original BERT checkpoint {prefix} has no {path}/bert_config.json:"
                              " put the bert_config.json it was trained with beside it")


@pytest.mark.parametrize("others,found", [
    ((), ""),
    (("pytorch_model.bin",), "; it has pytorch_model.bin, which is not read"),
    (("flax_model.msgpack", "tf_model.h5"),
     "; it has tf_model.h5, flax_model.msgpack, which is not read")])
def test_a_hugging_face_directory_without_safetensors(tmp_path, sources, others, found):
  path = copied(sources, "hf", tmp_path)
  os.remove(os.path.join(path, "model.safetensors"))
  for name in others:
    open(os.path.join(path, name), "wb").close()
  with pytest.raises(UserError) as error:
    open_source(path, "--model_dir")
  assert str(error.value) == (f"--model_dir {path} is a Hugging Face directory without "
                              f"model.safetensors (only safetensors weights are read{found})")


def test_a_hugging_face_directory_of_another_model_or_without_vocabulary(tmp_path, sources):
  path = copied(sources, "hf", tmp_path)
  os.remove(os.path.join(path, "vocab.txt"))
  with pytest.raises(UserError, match=f"^vocabulary file not found: {path}/vocab.txt$"):
    open_source(path).vocabulary
  with open(os.path.join(path, "config.json")) as f:
    values = json.load(f)
  with open(os.path.join(path, "config.json"), "w") as f:
    json.dump({**values, "model_type": "roberta"}, f)
  with pytest.raises(UserError) as error:
    open_source(path).config
  assert str(error.value) == (f"{path} is not a BERT model (model_type 'roberta' in "
                              f"{path}/config.json)")


def test_a_source_of_another_model_than_the_config(sources, config):
  """One line naming both shapes, and what differs."""
  mini = config.replace(hidden_size=256)
  files = {"run": f"{sources['run']}/bert_config.json", "hf": f"{sources['hf']}/config.json",
           "index": f"{sources['original']}/bert_config.json"}
  for name, shape_file in files.items():
    with pytest.raises(UserError) as error:
      open_source(sources[name]).check_config(mini, "--config mini.json", "a hint")
    assert str(error.value) == (
        f"--config mini.json is a model of L-2_H-256_A-2, but --init_checkpoint {sources[name]} "
        f"is one of L-2_H-128_A-2 ({shape_file}): hidden_size 256 against its 128; a hint")


def test_a_vocabulary_of_another_size_than_the_model(tmp_path, sources, vocab_file):
  path = copied(sources, "run", tmp_path)
  with open(os.path.join(path, names.VOCAB_FILE), "a") as f:
    f.write("[unused_extra]\n")
  size = len(Vocabulary(vocab_file))
  with pytest.raises(UserError) as error:
    open_source(path).vocabulary
  assert str(error.value) == (f"{path}: its vocabulary {path}/vocab.txt has {size + 1} tokens, "
                              f"but its model's vocab_size is {size}: they must match")

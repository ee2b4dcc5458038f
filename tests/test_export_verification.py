"""Exports that check themselves (bert_tf/serving/verification.py): each format, loaded as its
user loads it (a Hugging Face directory by a numpy forward pass where transformers is not
installed), gives the pre-training tokenizer's ids and the Keras model's outputs; a broken
export fails in one line."""

import json
import logging
import os
import re
import shutil
import sys

import numpy as np
import pytest

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.export.formats import FORMATS, export, export_finetuned, verify
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from bert_tf.serving import verification
from bert_tf.serving.trained import Trained
from helpers import randomised_model, run

SEQ_LENGTH = 32  # below the long example's length: truncation is exercised
VERIFIED = re.compile(r"^verified: (savedmodel|hf|keras_hub) ids equal, largest output "
                      r"difference (\S+) \(\w+; tolerance (\S+)\)$")


@pytest.fixture(scope="module")
def trained(vocab_file):
  vocabulary = Vocabulary(vocab_file)
  config = BertConfig.from_preset("bert_tiny", vocab_size=len(vocabulary),
                                  max_position_embeddings=64)
  return Trained(randomised_model(config, stddev=0.05), config, vocabulary, lower_case=True,
                 seq_length=SEQ_LENGTH)


def changed(trained):
  """A copy of the trained model with the pooler's bias moved by 0.1."""
  model = pretraining_model(trained.config)
  model.set_weights(trained.model.get_weights())
  bias = model.get_layer("bert_encoder").get_layer("pooled_dense").bias
  bias.assign(bias.numpy() + 0.1)
  return model


def checked_line(line: str, export_format: str) -> float:
  match = VERIFIED.match(line)
  assert match and match[1] == export_format, line
  difference, tolerance = float(match[2]), float(match[3])
  assert difference <= tolerance == FORMATS[export_format].tolerance
  return difference


def test_the_examples_exercise_truncation_accents_cjk_and_numbers(trained):
  reference = verification.KerasReference(trained.model, trained.vocabulary, True, SEQ_LENGTH)
  lengths = [len(ids) for ids in reference.text_ids]
  assert max(lengths) > SEQ_LENGTH  # the long example is cut
  assert [len(ids) for ids, _ in reference.pairs][-1] == SEQ_LENGTH
  assert all(len(ids) <= SEQ_LENGTH for ids, _ in reference.pairs)
  texts = " ".join(text for pair in verification.EXAMPLES for text in pair)
  for needed in ("é", "ř", "北", "서", "1984", "3.14159"):
    assert needed in texts
  results = reference.results()
  assert results["mlm_logits"].shape == (3 * len(verification.EXAMPLES), len(trained.vocabulary))
  assert results["fill_mask"].shape == (len(verification.MASKED),)


def test_a_difference_in_ids_or_beyond_the_tolerance_fails_in_one_line():
  ids = {"token_ids": [[2, 5, 3]], "pooled_output": np.zeros([1, 4], np.float32)}
  assert verification.verify("hf", lambda: ids, lambda: ids, 1e-4) == (
      "verified: hf ids equal, largest output difference 0.0e+00 (pooled_output; tolerance "
      "1e-04)")
  with pytest.raises(UserError, match=r"^hf export failed verification: its token_ids of "
                     r"example 0 are \[2, 6, 3\] \(3 ids\), the pre-training tokenizer's "
                     r"\[2, 5, 3\] \(3 ids\)$"):
    verification.verify("hf", lambda: ids, lambda: {**ids, "token_ids": [[2, 6, 3]]}, 1e-4)
  with pytest.raises(UserError, match=r"^hf export failed verification: its pooled_output "
                     r"differs from the Keras model's by 2\.0e-04 \(tolerance 1e-04\)$"):
    verification.verify("hf", lambda: ids, lambda: {**ids, "pooled_output": ids[
        "pooled_output"] + 2e-4}, 1e-4)
  # MLM logits are compared relative to their scale when it is above 1.
  logits = {"mlm_logits": np.array([[100.0, -50.0]], np.float32)}
  assert "difference 1.0e-05" in verification.verify(
      "hf", lambda: logits, lambda: {"mlm_logits": logits["mlm_logits"] + [[1e-3, 0]]}, 1e-4)


@pytest.fixture
def warm_loading(monkeypatch):
  """`warm_loading()`: from then on in this test, a verification loads the SavedModel in a
  process forked from the warm Python (as conftest's `warm_verification` does for a module),
  not a fresh interpreter: for the checks of a broken export, which do not depend on a fresh
  interpreter (`test_savedmodel_verifies_in_a_fresh_process...`'s first check does)."""
  def forked(command, **_):  # `subprocess.run`'s call of `python -c ...`; output as text
    assert command[0] == sys.executable, command
    return run(command[1:], timeout=600)

  return lambda: monkeypatch.setattr(verification, "run_process", forked)


@pytest.fixture(scope="module")
def savedmodel(trained, tmp_path_factory):
  """The trained model's SavedModel, exported once: read it, or change a copy."""
  return export(trained, "savedmodel", str(tmp_path_factory.mktemp("savedmodel") / "serving"))


@pytest.mark.e2e
def test_savedmodel_verifies_in_a_fresh_process_and_a_changed_weight_fails(trained, savedmodel,
                                                                          tmp_path,
                                                                          warm_loading):
  assert checked_line(verify(trained, "savedmodel", savedmodel), "savedmodel") < 1e-5
  # The same model with one weight changed, exported where the trained one should be (in a
  # copy of it), and loaded in a forked process.
  warm_loading()
  directory = shutil.copytree(savedmodel, str(tmp_path / "serving"))
  export(Trained(changed(trained), trained.config, trained.vocabulary, True, SEQ_LENGTH),
         "savedmodel", directory)
  with pytest.raises(UserError, match=r"^savedmodel export failed verification: its \w+ "
                     r"differs from the Keras model's by \S+ \(tolerance 1e-04\)$"):
    verify(trained, "savedmodel", directory)


@pytest.mark.e2e
def test_savedmodel_that_does_not_load_fails_in_one_line(trained, savedmodel, tmp_path,
                                                        warm_loading):
  warm_loading()
  directory = shutil.copytree(savedmodel, str(tmp_path / "serving"))
  os.remove(os.path.join(directory, "saved_model.pb"))
  with pytest.raises(UserError, match=r"^savedmodel export failed verification: loading .* "
                     r"with tensorflow and tensorflow-text failed: .*saved_model\.pb"):
    verify(trained, "savedmodel", directory)


@pytest.mark.e2e
def test_hf_verifies_with_transformers_and_a_wrong_layer_norm_eps_fails(trained, tmp_path):
  directory = export(trained, "hf", str(tmp_path / "hf"))
  assert checked_line(verify(trained, "hf", directory), "hf") < 1e-5
  write_config(directory, layer_norm_eps=1e-3)
  with pytest.raises(UserError, match=r"^hf export failed verification: its \w+ differs from "
                     r"the Keras model's by \S+ \(tolerance 1e-04\)$"):
    verify(trained, "hf", directory)


def write_config(directory, **values):
  """The Hugging Face directory's config.json with `values` changed."""
  config_file = os.path.join(directory, "config.json")
  with open(config_file) as f:
    config = json.load(f)
  with open(config_file, "w") as f:
    json.dump({**config, **values}, f)


def test_hf_verifies_without_transformers_by_a_numpy_forward_pass(trained, tmp_path,
                                                                  monkeypatch, caplog):
  directory = export(trained, "hf", str(tmp_path / "hf"))
  monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` fails
  with caplog.at_level(logging.INFO, logger="bert_tf"):
    assert checked_line(verify(trained, "hf", directory), "hf") < 1e-5
  assert "transformers is not installed" in caplog.text
  write_config(directory, layer_norm_eps=1e-3)
  with pytest.raises(UserError, match=r"^hf export failed verification: its \w+ differs from "
                     r"the Keras model's by \S+ \(tolerance 1e-04\)$"):
    verify(trained, "hf", directory)
  write_config(directory, layer_norm_eps=trained.config.layer_norm_epsilon)
  assert_a_cased_tokenizer_fails_on_the_ids(trained, directory)


def assert_a_cased_tokenizer_fails_on_the_ids(trained, directory):
  """The HF directory's tokenizer made cased: its ids differ from the pre-training tokenizer's,
  and the check says so in one line."""
  tokenizer_file = os.path.join(directory, "tokenizer_config.json")
  with open(tokenizer_file) as f:
    tokenizer = json.load(f)
  with open(tokenizer_file, "w") as f:
    json.dump({**tokenizer, "do_lower_case": False}, f)
  with pytest.raises(UserError, match=r"^hf export failed verification: its text_ids of "
                     r"example 0 are \[.*\), the pre-training tokenizer's \[.*\)$"):
    verify(trained, "hf", directory)


def test_hf_with_a_cased_tokenizer_fails_on_the_ids(trained, tmp_path):
  directory = export(trained, "hf", str(tmp_path / "hf"))
  assert_a_cased_tokenizer_fails_on_the_ids(trained, directory)


def test_keras_hub_verifies_and_a_tokenizer_keeping_accents_fails(trained, tmp_path):
  directory = export(trained, "keras_hub", str(tmp_path / "preset"))
  checked_line(verify(trained, "keras_hub", directory), "keras_hub")
  tokenizer_file = os.path.join(directory, "tokenizer.json")
  with open(tokenizer_file) as f:
    tokenizer = json.load(f)
  assert tokenizer["config"]["strip_accents"] is True
  tokenizer["config"]["strip_accents"] = False  # the preset bug keras-hub's default makes
  with open(tokenizer_file, "w") as f:
    json.dump(tokenizer, f)
  with pytest.raises(UserError, match=r"^keras_hub export failed verification: its text_ids "
                     r"of example 0 are .*, the pre-training tokenizer's .*$"):
    verify(trained, "keras_hub", directory)


@pytest.mark.e2e
def test_keras_hub_with_a_changed_weight_fails(trained, tmp_path):
  broken = Trained(changed(trained), trained.config, trained.vocabulary, True, SEQ_LENGTH)
  directory = export(broken, "keras_hub", str(tmp_path / "preset"))
  with pytest.raises(UserError, match=r"^keras_hub export failed verification: its "
                     r"pooled_output differs from the Keras model's by \S+ \(tolerance 2e-02\)$"):
    verify(trained, "keras_hub", directory)


@pytest.mark.e2e
def test_export_command_and_train_py_say_verified_unless_skipped(
    finished_run, hf_export_of_finished_run, tmp_path):
  model_dir, training = finished_run
  assert re.search(r"verified: savedmodel ids equal, largest output difference \S+ "
                   r"\(\w+; tolerance 1e-04\)", training.stderr)
  hf, result = hf_export_of_finished_run  # `python -m bert_tf.export --format=hf`
  verified, wrote = result.stdout.splitlines()
  checked_line(verified, "hf")
  assert wrote == f"wrote {hf}"
  shutil.copytree(hf, tmp_path / "hf")  # written again, unverified, over a copy of it
  result = run(["-m", "bert_tf.export", f"--model_dir={model_dir}", "--format=hf",
                f"--output={tmp_path / 'hf'}", "--skip_verify"])
  assert result.returncode == 0, result.stderr[-3000:]
  assert result.stdout.splitlines() == [f"wrote {tmp_path / 'hf'}"]


@pytest.mark.parametrize("write, export_format, message", [
    (export, "onnx", "unknown export format 'onnx': use savedmodel, hf or keras_hub"),
    (export_finetuned, "keras_hub", "a fine-tuned model exports as savedmodel or hf, not "
     "'keras_hub'"),
])
def test_a_format_that_does_not_write_the_model_is_one_line(write, export_format, message):
  with pytest.raises(UserError, match=f"^{re.escape(message)}$"):
    write(None, export_format, "never-written")
  assert not os.path.exists("never-written")

"""`--init_checkpoint` and `--config` with what users bring: Google's published configs as they
come, and every wrong path as one line (`error: ...`, exit status 2) before anything trains."""

import json
import os
import re
import shutil

import pytest

from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.interop import init_checkpoint
from bert_tf.interop.huggingface import export_huggingface
from bert_tf.interop.state import model_state
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from helpers import run

TINY = ["--config=bert_tiny", "--seq_length=32", "--max_predictions_per_seq=5",
        "--global_batch_size=4", "--train_steps=2", "--checkpoint_every=2", "--warmup_steps=1",
        "--eval_steps=1", "--noserving_export"]
# The keys, with their values, that Google's Chinese and multilingual bert_config.json files
# add to the original format.
GOOGLE_EXTRA_KEYS = {"directionality": "bidi", "pooler_fc_size": 768,
                     "pooler_num_attention_heads": 12, "pooler_num_fc_layers": 3,
                     "pooler_size_per_head": 128, "pooler_type": "first_token_transform"}
ACCEPTED = ("it takes a bert_tf model_dir, an original BERT checkpoint (the bert_model.ckpt "
            "prefix or its directory, with bert_config.json beside it) or a Hugging Face "
            "BertForPreTraining directory (config.json and model.safetensors)")


@pytest.fixture(scope="module")
def config(vocab_file):
  return BertConfig.from_preset("bert_tiny", vocab_size=len(Vocabulary(vocab_file)))


@pytest.fixture(scope="module")
def sources(tmp_path_factory, config, vocab_file, write_tf1_checkpoint):
  """Paths that are wrong in each way a user has met, by name."""
  root = tmp_path_factory.mktemp("sources")
  state = model_state(pretraining_model(config), config)
  (root / "garbage").mkdir()
  (root / "garbage" / "bert_model.ckpt.index").write_bytes(b"not an sstable")
  (root / "weights.bin").write_bytes(b"\x00" * 64)
  mini = BertConfig.from_preset("bert_mini", vocab_size=config.vocab_size)
  write_tf1_checkpoint(model_state(pretraining_model(mini), mini), mini, str(root / "mini"))
  write_tf1_checkpoint(state, config, str(root / "no_config"))
  os.remove(root / "no_config" / "bert_config.json")
  export_huggingface(pretraining_model(config), config, Vocabulary(vocab_file),
                     str(root / "hf"), lower_case=True)
  os.remove(root / "hf" / "model.safetensors")
  (root / "hf" / "pytorch_model.bin").write_bytes(b"\x00" * 64)
  return str(root)


BAD = {
    "not a checkpoint": (
        "garbage/bert_model.ckpt",
        "--init_checkpoint {root}/garbage/bert_model.ckpt is not a readable checkpoint ("),
    "a file": (
        "weights.bin",
        "--init_checkpoint {root}/weights.bin is a file that is not a checkpoint: " + ACCEPTED),
    "another model": (
        "mini",
        "--config bert_tiny is a model of L-2_H-128_A-2, but --init_checkpoint {root}/mini is "
        "one of L-4_H-256_A-4 ({root}/mini/bert_config.json): hidden_size 128 against its 256, "
        "num_hidden_layers 2 against its 4, num_attention_heads 2 against its 4, "
        "intermediate_size 512 against its 1024; leave --config out to take the model's own "
        "shape"),
    "Hugging Face without weights": (
        "hf",
        "--init_checkpoint {root}/hf is a Hugging Face directory without model.safetensors "
        "(only safetensors weights are read; it has pytorch_model.bin, which is not read)"),
    "original BERT without bert_config.json": (
        "no_config",
        "original BERT checkpoint {root}/no_config/bert_model.ckpt has no "
        "{root}/no_config/bert_config.json: put the bert_config.json it was trained with "
        "beside it"),
}


def checked(path, config, vocab_file, given="bert_tiny"):
  """`path` checked as train.py checks its --init_checkpoint, with --config `given`."""
  source = init_checkpoint.initial_model(path, weights_only=False)
  init_checkpoint.check(source, config, given, Vocabulary(vocab_file))


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_wrong_init_checkpoint_is_one_line_naming_the_problem(sources, config, vocab_file,
                                                                case):
  name, message = BAD[case]
  with pytest.raises(UserError) as error:
    checked(os.path.join(sources, name), config, vocab_file)
  assert str(error.value).startswith(message.format(root=sources))
  assert "\n" not in str(error.value)


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.e2e
def test_train_py_prints_it_as_one_line_with_exit_status_2(sources, data_dir, vocab_file,
                                                          tmp_path, case):
  name, message = BAD[case]
  result = run(["train.py", f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
                f"--model_dir={tmp_path / 'run'}", *TINY,
                f"--init_checkpoint={os.path.join(sources, name)}"])
  print(result.stderr.strip().splitlines()[-1])  # the line a user sees, in the test's log
  assert result.returncode == 2, result.stderr[-3000:]
  assert "Traceback" not in result.stderr
  assert result.stderr.strip().splitlines()[-1].startswith(
      "error: " + message.format(root=sources))


@pytest.fixture(scope="module")
def google_run(tmp_path_factory, config, data_dir, vocab_file, write_tf1_checkpoint):
  """A checkpoint as Google publishes it (bert_config.json with its extra keys beside it),
  given to train.py as --config and --init_checkpoint: (its directory, the model_dir, the
  train.py process)."""
  root = tmp_path_factory.mktemp("google")
  published = root / "published"
  write_tf1_checkpoint(model_state(pretraining_model(config), config), config, str(published))
  (published / "bert_config.json").write_text(
      json.dumps({**config.to_dict(), **GOOGLE_EXTRA_KEYS}, indent=2))
  model_dir = root / "run"
  result = run(["train.py", f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
                f"--model_dir={model_dir}", *TINY, f"--config={published / 'bert_config.json'}",
                f"--init_checkpoint={published}"])
  return published, model_dir, result


@pytest.mark.e2e
def test_googles_config_keys_in_train_py_init_checkpoint_and_export(google_run, tmp_path,
                                                                    data_dir, vocab_file):
  """Then exported from a model_dir whose bert_config.json is Google's file; a key that would
  change the model is still refused."""
  published, model_dir, trained = google_run
  google_config = published / "bert_config.json"
  ignored = (f"Ignored in {google_config} (they do not change the model): "
             + ", ".join(sorted(GOOGLE_EXTRA_KEYS)))
  assert trained.returncode == 0, trained.stderr[-3000:]
  assert ignored in trained.stderr and f"Initialising from {published}" in trained.stderr
  assert trained.stderr.count("Ignored in") == 1  # one line a run, however often it is read
  shutil.copy(google_config, model_dir / "bert_config.json")
  exported = run(["-m", "bert_tf.export", f"--model_dir={model_dir}", "--format=hf",
                  f"--output={tmp_path / 'hf'}"])
  assert exported.returncode == 0, exported.stderr[-3000:]
  assert f"Ignored in {model_dir / 'bert_config.json'} (they do not change" in exported.stderr
  assert (tmp_path / "hf" / "model.safetensors").exists()
  with_model_key = tmp_path / "bert_config.json"
  with_model_key.write_text(json.dumps({**json.loads(google_config.read_text()),
                                        "embedding_size": 64}))
  refused = run(["train.py", f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
                 f"--model_dir={tmp_path / 'refused'}", *TINY, f"--config={with_model_key}"])
  assert refused.returncode == 2 and "Traceback" not in refused.stderr
  assert re.search(r"error: config file .* has unknown keys: embedding_size \(", refused.stderr)


@pytest.mark.e2e
def test_a_bert_tf_model_dir_of_another_model_is_one_line(google_run, tmp_path, data_dir,
                                                          vocab_file):
  _, model_dir, _ = google_run
  result = run(["train.py", f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
                f"--model_dir={tmp_path / 'run'}", *TINY, "--config=bert_mini",
                f"--init_checkpoint={model_dir}"])
  print(result.stderr.strip().splitlines()[-1])
  assert result.returncode == 2 and "Traceback" not in result.stderr
  assert result.stderr.strip().splitlines()[-1] == (
      f"error: --config bert_mini is a model of L-4_H-256_A-4, but --init_checkpoint {model_dir} "
      f"is one of L-2_H-128_A-2 ({model_dir}/bert_config.json): hidden_size 256 against its "
      "128, num_hidden_layers 4 against its 2, num_attention_heads 4 against its 2, "
      "intermediate_size 1024 against its 512; leave --config out to take the model's own "
      "shape")


@pytest.mark.parametrize("kind", ["original", "hf"])
def test_a_vocabulary_of_another_size_blames_the_vocab_file(tmp_path, config, vocab_file,
                                                             write_tf1_checkpoint, kind):
  # A preset --config takes its vocab_size from --vocab_file: the vocabulary is what differs.
  bigger = config.replace(vocab_size=config.vocab_size + 3)
  path = str(tmp_path / kind)
  if kind == "original":
    write_tf1_checkpoint(model_state(pretraining_model(bigger), bigger), bigger, path)
  else:
    export_huggingface(pretraining_model(bigger), bigger, Vocabulary(vocab_file), path,
                       lower_case=True)
  with pytest.raises(UserError) as error:
    checked(path, config, vocab_file)
  assert str(error.value) == (
      f"--vocab_file {vocab_file} has {config.vocab_size} tokens, but the model of "
      f"--init_checkpoint {path} has vocab_size {bigger.vocab_size}: give the vocabulary it "
      "was trained with" + (f" ({path}/vocab.txt)" if kind == "hf" else ""))

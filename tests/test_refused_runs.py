"""A run writes only its outputs, and a run refused for bad input writes nothing at all: every
input (the corpus, the initial model's files, shape and vocabulary) is checked before the first
write. For each command (train.py, fine-tuning, export, prepare, the vocabulary tool), each
refusal leaves the file system exactly as it was: the test's whole directory, which is also
the working directory (where a default --model_dir such as runs/quickstart would appear), is
listed before and after. And the shape comes from the model: `--config` is for a model from
scratch; one that says another shape than the initial model's is one line naming both."""

import glob
import gzip
import os
import shutil

import numpy as np
import pytest

from bert_tf import vocab
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.export.formats.export_config import ExportConfig
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.training import finetune
from bert_tf.model.bert_config import BertConfig
from bert_tf.prepare import PrepareConfig, prepare_records
from bert_tf.training import preparation
from bert_tf.training.train_settings import TrainConfig
from bert_tf.training.trainer import train
from helpers import ROOT, published_model, run, shape_of_no_preset

TINY = dict(seq_length=32, max_predictions_per_seq=5, global_batch_size=4, train_steps=2,
            checkpoint_every=2, warmup_steps=1, eval_steps=1, serving_export=False)
GOOGLE = "uncased_L-12_H-768_A-12"  # as README's command names the folder


@pytest.fixture(scope="module")
def published(tmp_path_factory, vocab_file, write_tf1_checkpoint):
  """One small model in both published layouts: {"google": a folder as Google's releases are
  (bert_config.json, vocab.txt, bert_model.ckpt.*), "hf": a Hugging Face directory}."""
  root = tmp_path_factory.mktemp("published")
  google, hf = str(root / "google"), str(root / "hf")
  published_model(vocab_file, write_tf1_checkpoint, google, hf)
  return {"google": google, "hf": hf}


def listing(root) -> dict:
  """Every directory and file under `root`, with each file's size and modification time."""
  found = {}
  for directory, _, names in os.walk(root):
    found[directory] = None
    for name in names:
      stat = os.stat(os.path.join(directory, name))
      found[os.path.join(directory, name)] = (stat.st_size, stat.st_mtime_ns)
  return found


@pytest.fixture
def place(tmp_path, monkeypatch, data_dir, vocab_file, published):
  """The working directory of a refused run, holding its inputs: the built-in corpus as
  corpus.txt, a gzip file, random bytes, an empty file, a vocabulary and both published
  models (google/, hf/)."""
  monkeypatch.chdir(tmp_path)
  text = b"".join(open(path, "rb").read() for path in sorted(glob.glob(os.path.join(
      data_dir, "pydoc_topics", "pydoc_topics-*.txt"))))
  (tmp_path / "corpus.txt").write_bytes(text)
  (tmp_path / "corpus.txt.gz").write_bytes(gzip.compress(text))
  (tmp_path / "random.txt").write_bytes(np.random.default_rng(0).bytes(8192))
  (tmp_path / "empty.txt").write_bytes(b"")
  shutil.copy(vocab_file, "vocab.txt")
  for name, path in published.items():
    shutil.copytree(path, name)
  return tmp_path


def refused(place, call, config, message: str) -> None:
  """`call(config)` is refused with `message` (the start of its one line), and nothing under
  `place` changed."""
  before = listing(place)
  with pytest.raises(UserError) as error:
    call(config)
  assert str(error.value).startswith(message), str(error.value)
  assert "\n" not in str(error.value)
  assert listing(place) == before


def pretraining(**changes) -> TrainConfig:
  return TrainConfig(**{"input_files": "corpus.txt", "vocab_file": "vocab.txt",
                        "model_dir": "runs/domain", **TINY, **changes})


MISSING = f"{GOOGLE}/bert_model.ckpt"
NOT_FOUND = f"--init_checkpoint {MISSING} is not found: it takes"
TRAIN_CASES = {
    "a published model not downloaded yet": (
        dict(init_checkpoint=MISSING, vocab_file=f"{GOOGLE}/vocab.txt"), NOT_FOUND),
    "a vocabulary to learn beside a missing model": (
        dict(init_checkpoint=MISSING, vocab_file="new/vocab.txt"), NOT_FOUND),
    "an initial model without its vocabulary": (
        dict(init_checkpoint="hf", vocab_file="hf_vocab.txt"),
        "--vocab_file hf_vocab.txt does not exist: a run from --init_checkpoint hf reads the "
        "vocabulary its model was trained with (hf/vocab.txt), it does not learn one"),
    "a --config that contradicts the model": (
        dict(init_checkpoint="google", config="bert_tiny"),
        "--config bert_tiny is a model of L-2_H-128_A-2, but --init_checkpoint google is one of "
        "L-2_H-96_A-3 (google/bert_config.json): hidden_size 128 against its 96, "
        "num_attention_heads 2 against its 3, intermediate_size 512 against its 160, "
        "max_position_embeddings 512 against its 128; leave --config out to take the model's "
        "own shape"),
    "the built-in corpus beside a model without its vocabulary": (
        dict(input_files="builtin", init_checkpoint="hf", vocab_file="hf_vocab.txt"),
        "--vocab_file hf_vocab.txt does not exist: a run from --init_checkpoint hf reads"),
    "the built-in corpus and probe beside a --config that contradicts the model": (
        dict(input_files="builtin", probe_train_file="builtin", probe_dev_file="builtin",
             init_checkpoint="google", config="bert_tiny"),
        "--config bert_tiny is a model of L-2_H-128_A-2, but --init_checkpoint google"),
    "a compressed corpus, the vocabulary to learn": (
        dict(input_files="corpus.txt.gz", vocab_file="new/vocab.txt"),
        "corpus.txt.gz is gzip-compressed"),
    "a binary corpus": (dict(input_files="random.txt"), "random.txt is not text: "),
}


@pytest.mark.parametrize("case", sorted(TRAIN_CASES))
def test_train_refused_writes_nothing(place, case):
  changes, message = TRAIN_CASES[case]
  refused(place, train, pretraining(**changes), message)


@pytest.mark.parametrize("case", ["a published model not downloaded yet",
                                  "a compressed corpus, the vocabulary to learn"])
def test_prepare_refused_writes_nothing(place, case):
  """Nor its default --model_dir (runs/quickstart), which records do not need."""
  changes, message = TRAIN_CASES[case]
  config = PrepareConfig(**{**TINY, "input_files": "corpus.txt", "vocab_file": "vocab.txt",
                            "output": "records", **changes})
  refused(place, prepare_records, config, message)


@pytest.mark.parametrize("changes,message", [
    (dict(input_files="corpus.txt.gz"), "corpus.txt.gz is gzip-compressed"),
    (dict(input_files="random.txt"), "random.txt is not text: "),
    (dict(input_files="empty.txt"), "the corpus has no text: its 1 file(s) are empty"),
    (dict(input_files="gone.txt"), "no file matches 'gone.txt'"),
    (dict(input_files="corpus.txt.gz", report=True, vocab_file="vocab.txt"),
     "corpus.txt.gz is gzip-compressed"),
    (dict(input_files="random.txt", report=True, vocab_file="vocab.txt"),
     "random.txt is not text: "),
    (dict(input_files="corpus.txt", report=True, vocab_file="gone/vocab.txt"),
     "vocabulary file not found: gone/vocab.txt"),
])
def test_the_vocabulary_tool_checks_its_input_as_train_py_does(place, changes, message):
  config = vocab.VocabCommandConfig(**{"vocab_file": "learned/vocab.txt", **changes})
  refused(place, vocab.main, config, message)


FINETUNE_CASES = {
    "an encoder not downloaded yet": (
        dict(model_dir=GOOGLE), f"--model_dir {GOOGLE} is not found: it takes"),
    "an encoder without its vocabulary": (
        dict(model_dir="hf", remove="hf/vocab.txt"), "vocabulary file not found: hf/vocab.txt"),
    "an encoder without its config": (
        dict(model_dir="google", remove="google/bert_config.json"),
        "original BERT checkpoint google/bert_model.ckpt has no google/bert_config.json"),
    "a missing training file": (dict(model_dir="hf", train_file="gone.tsv"),
                                "file not found: gone.tsv"),
}


@pytest.mark.parametrize("case", sorted(FINETUNE_CASES))
def test_finetune_refused_writes_nothing(place, case):
  changes, message = FINETUNE_CASES[case]
  if "remove" in changes:
    os.remove(changes.pop("remove"))
  config = FinetuneConfig(**{"train_file": "task.tsv", "dev_file": "task.tsv",
                             "output_dir": "runs/task", "epochs": 1, "seq_length": 32,
                             **changes})
  (place / "task.tsv").write_text("text\tlabel\nA sentence.\tyes\nAnother one.\tno\n")
  refused(place, finetune, config, message)


@pytest.mark.parametrize("model_dir,message", [
    ("runs/gone", "runs/gone is not found: it takes a finished train.py model_dir"),
    ("hf", "hf has no bert_config.json: is it a finished train.py model_dir?"),
])
def test_export_refused_writes_nothing(place, model_dir, message):
  from bert_tf.export.__main__ import export
  refused(place, export, ExportConfig(model_dir=model_dir, format="hf", output="exported"),
          message)


REPLACED_OUTPUTS = {
    "the run exported": (dict(model_dir="google", output="google"),
                         "--output=google would replace --model_dir google with what it writes"),
    "a folder holding the run": (dict(model_dir="google", output="."),
                                 "--output=. would replace the current directory"),
    "the run's checkpoints": (dict(model_dir="google", output="google/checkpoints"),
                              "--output=google/checkpoints would replace --model_dir's "
                              "checkpoints google/checkpoints"),
    "the dev file's folder": (
        dict(model_dir="google", format="onnx", dev_file="hf/dev.tsv", output="hf"),
        "--output=hf would replace --dev_file hf/dev.tsv"),
}


@pytest.mark.parametrize("case", sorted(REPLACED_OUTPUTS))
def test_export_refuses_to_replace_what_it_reads(place, case):
  """--output is replaced whole: one that is, or holds, the model exported (or the working
  directory) would delete the run the export was made from."""
  from bert_tf.export.__main__ import export
  changes, message = REPLACED_OUTPUTS[case]
  refused(place, export, ExportConfig(**{"format": "hf", **changes}), message)


@pytest.mark.parametrize("changes,message", [
    (dict(output="."), "--output=. would replace the current directory"),
    (dict(input_files="google/*.txt", output="google"),
     "--output=google would replace --input_files google/*.txt with what it writes"),
    (dict(vocab_file="hf/vocab.txt", output="hf/"), "--output=hf/ would replace --vocab_file"),
    (dict(init_checkpoint="google", output="google"),
     "--output=google would replace --init_checkpoint google"),
])
def test_prepare_refuses_to_replace_what_it_reads(place, changes, message):
  config = PrepareConfig(**{**TINY, "input_files": "corpus.txt", "vocab_file": "vocab.txt",
                            **changes})
  refused(place, prepare_records, config, message)


def test_an_output_apart_from_what_is_read_passes_and_urls_compare_by_their_text():
  from bert_tf.replaced_outputs import check_apart
  check_apart("", {"--model_dir": "runs/mine"})  # no output: nothing to check
  check_apart("runs/mine_hf", {"--model_dir": "runs/mine"})
  check_apart("gs://b/runs/mine_hf", {"--model_dir": "gs://b/runs/mine"})
  with pytest.raises(UserError, match="would replace --model_dir gs://b/runs/mine with"):
    check_apart("gs://b/runs/", {"--model_dir": "gs://b/runs/mine"})


@pytest.mark.parametrize("layout", ["google", "hf"])
def test_the_shape_comes_from_the_model(place, published, vocab_file, layout):
  """No --config: the initial model's own shape, one no preset has; the same shape given as
  a --config file is taken too."""
  expected = shape_of_no_preset(len(Vocabulary(vocab_file)))
  inputs = preparation.check_inputs(pretraining(init_checkpoint=layout))
  assert preparation.model_shape(inputs.config, inputs.vocabulary, inputs.source) == expected
  assert inputs.config.config == ""
  given = pretraining(init_checkpoint=layout, config="google/bert_config.json")
  assert preparation.model_shape(given, Vocabulary("vocab.txt"),
                                 preparation.check_inputs(given).source) == expected
  scratch = preparation.check_inputs(pretraining())
  assert preparation.model_shape(scratch.config, scratch.vocabulary) == BertConfig.from_preset(
      "bert_tiny", vocab_size=len(Vocabulary("vocab.txt")))


@pytest.mark.e2e
def test_train_py_on_a_published_model_not_downloaded_yet(place):
  """README's adapt command before the model is unpacked: one line naming the files
  expected, exit status 2, and no folder made for the vocabulary (which a user would later
  unpack the real model beside, and train on the wrong one)."""
  before = listing(place)
  result = run([os.path.join(ROOT, "train.py"),
                "--flagfile=" + os.path.join(ROOT, "configs", "adapt.flags"),
                "--input_files=corpus.txt", f"--init_checkpoint={MISSING}",
                f"--vocab_file={GOOGLE}/vocab.txt", "--model_dir=runs/domain"], cwd=str(place))
  print(result.stderr.strip().splitlines()[-1])
  assert result.returncode == 2, result.stderr[-3000:]
  assert "Traceback" not in result.stderr
  assert result.stderr.strip().splitlines()[-1] == (
      f"error: {NOT_FOUND} a bert_tf model_dir, an original BERT checkpoint (the bert_model.ckpt "
      "prefix or its directory, with bert_config.json beside it) or a Hugging Face "
      "BertForPreTraining directory (config.json and model.safetensors)")
  assert listing(place) == before

"""Journey: a published BERT adapted to your domain, as README.md prints it.

The commands of README's section "A published BERT adapted to your domain" (its block marked
`adapt`, tests/journeys.py) are read from the page and run as printed, in a directory laid out
as they expect: the model in a folder as Google's releases are (`uncased_L-12_H-768_A-12/`
with `bert_config.json`, `vocab.txt` and `bert_model.ckpt.*`), the corpus in `corpus/*.txt`,
`configs/` and `train.py` of this checkout.
The model is small and of a shape no preset has, so that only its own `bert_config.json` says
it: the commands give no `--config`. The same run from a Hugging Face directory is
docs/adapting.md's command. A few flags are appended for size (two steps, short sequences).
A documented command that changes without its journey fails here."""

import json
import os
import re

import pytest

import journeys
from bert_tf.data.tokenization import Vocabulary
from bert_tf.model.bert_config import BertConfig
from helpers import ROOT, docstring_corpus, published_model, run

# Appended to each train.py command: the journey's size, not its path.
FOR_SIZE = ["--train_steps=2", "--warmup_steps=1", "--checkpoint_every=2",
            "--global_batch_size=8", "--seq_length=32", "--max_predictions_per_seq=5",
            "--eval_steps=1", "--noserving_export"]


def documented_commands(doc: str, name: str) -> list[list[str]]:
  """The commands of the block marked `<!-- journey: NAME -->` in `doc` (tests/journeys.py),
  each without its leading `python` (`helpers.run` runs this interpreter)."""
  found = journeys.commands(doc, name)
  assert all(argv[0] == "python" for argv in found), found
  return [argv[1:] for argv in found]


@pytest.fixture(scope="module")
def journey(tmp_path_factory, vocab_file, write_tf1_checkpoint):
  """The working directory of the journey: the model (its vocabulary learned from the
  built-in corpus) in both layouts, a corpus of another domain (standard-library docstrings),
  configs/ and train.py; and the model's shape."""
  place = tmp_path_factory.mktemp("journey")
  shape = published_model(vocab_file, write_tf1_checkpoint,
                          str(place / "uncased_L-12_H-768_A-12"), str(place / "bert-base-uncased"))
  (place / "corpus").mkdir()
  docstring_corpus(place / "corpus")  # mail and the web: another domain than the model's
  os.symlink(os.path.join(ROOT, "configs"), place / "configs")
  os.symlink(os.path.join(ROOT, "train.py"), place / "train.py")
  return place, shape


def trained(place, command: list[str], model_dir: str) -> tuple[dict, str]:
  """Runs a train.py command with `FOR_SIZE` appended: the bert_config.json it wrote, and its
  log."""
  result = run([*command, *FOR_SIZE], cwd=str(place))
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Traceback" not in result.stderr
  grown = re.search(r"^Vocabulary grown by (\d+) words: .*$", result.stderr, re.MULTILINE)
  assert grown and int(grown.group(1)) > 0, result.stderr[-3000:]
  print(grown.group(0))
  with open(place / model_dir / "bert_config.json") as f:
    return json.load(f), result.stderr


@pytest.mark.e2e
def test_readme_adapts_a_google_release_without_config(journey):
  place, shape = journey
  report, adapt = documented_commands("README.md", "adapt")
  assert report[:2] == ["-m", "bert_tf.vocab"] and adapt[0] == "train.py"
  assert not any(word.startswith("--config") for word in adapt)
  fit = run(report, cwd=str(place))
  assert fit.returncode == 0, fit.stderr[-3000:]
  assert "WordPieces per word" in fit.stdout and "learned from the corpus" in fit.stdout
  written, log = trained(place, adapt, "runs/domain")
  assert ("Initialising from uncased_L-12_H-768_A-12/bert_model.ckpt (an original BERT "
          "checkpoint)") in log
  grown = Vocabulary(str(place / "runs/domain/vocab.txt"))
  assert grown.tokens != Vocabulary(str(place / "uncased_L-12_H-768_A-12/vocab.txt")).tokens
  assert BertConfig(**written) == shape.replace(vocab_size=len(grown))


@pytest.mark.e2e
def test_adapting_md_adapts_a_hugging_face_directory_without_config(journey):
  place, shape = journey
  [adapt] = documented_commands("docs/adapting.md", "adapt_hf")
  assert not any(word.startswith("--config") for word in adapt)
  written, log = trained(place, adapt, "runs/domain_hf")
  assert "Initialising from bert-base-uncased (a Hugging Face directory)" in log
  grown = len(Vocabulary(str(place / "runs/domain_hf/vocab.txt")))
  assert BertConfig(**written) == shape.replace(vocab_size=grown)

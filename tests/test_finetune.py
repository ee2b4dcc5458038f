"""Fine-tuning end to end on a tiny encoder: it learns a task, keeps the best epoch, writes
metrics.json, classes.json, TensorBoard's dev run and a `classify` SavedModel that verifies
itself and whose probabilities in a fresh process are the Keras model's (as are those of
`python -m bert_tf.export`'s, which verifies too); the encoder comes from a model_dir or a
Hugging Face directory, or random with --from_scratch; bad input is one line."""

import contextlib
import dataclasses
import json
import logging
import os
import random

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.finetune import FinetuneConfig, classifier, finetune
from bert_tf.finetune.data import TextEncoder
from bert_tf.finetune.kinds.classify import export_classifier
from bert_tf.finetune.model import classifier_model, load_pretrained
from bert_tf.interop.huggingface import export_huggingface
from bert_tf.serving import trained
from helpers import run, verified

pytestmark = pytest.mark.e2e

# Two word lists of the built-in vocabulary: a text's label is the list its words come from.
WORDS = {"code": ["function", "class", "return", "value", "object", "method"],
         "debug": ["debugger", "breakpoint", "frame", "stack", "command", "line"]}


def write_task(path, rows, columns=("text",)):
  lines = ["\t".join([*columns, "label"])] + ["\t".join(row) for row in rows]
  path.write_text("\n".join(lines) + "\n", encoding="utf-8")
  return str(path)


def examples(count, seed):
  generator = random.Random(seed)
  rows = []
  for i in range(count):
    label = sorted(WORDS)[i % 2]
    rows.append((" ".join(generator.choices(WORDS[label], k=5)), label))
  return rows


@pytest.fixture(scope="module")
def task(tmp_path_factory):
  directory = tmp_path_factory.mktemp("task")
  return (write_task(directory / "train.tsv", examples(64, 0)),
          write_task(directory / "dev.tsv", examples(32, 1)))


@contextlib.contextmanager
def logged_lines():
  """The lines bert_tf's logger logs at INFO and above meanwhile, as a list."""
  lines, logger = [], logging.getLogger("bert_tf")
  handler, level = logging.Handler(), logger.level
  handler.emit = lambda record: lines.append(record.getMessage())
  logger.addHandler(handler)
  logger.setLevel(logging.INFO)
  try:
    yield lines
  finally:
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory, model_dir, task, warm_verification):
  """(config, results, the lines it logged) of a fine-tune of the task (its export verified
  by a process forked from the warm Python)."""
  output_dir = str(tmp_path_factory.mktemp("finetuned"))
  config = FinetuneConfig(model_dir=model_dir, train_file=task[0], dev_file=task[1],
                          output_dir=output_dir, epochs=4, learning_rate=2e-3, batch_size=8,
                          seq_length=16)
  with logged_lines() as lines:
    return config, finetune(config), lines


def test_learns_the_task_and_keeps_the_best_epoch(finetuned):
  config, results, lines = finetuned
  (line,) = [line for line in lines if line.startswith("verified:")]
  assert verified(line, "classify") in ("probabilities", "label")
  assert results["dev_accuracy"] >= 0.9  # chance: 0.5
  assert 1 <= results["best_epoch"] <= 4
  with open(os.path.join(config.output_dir, "metrics.json")) as f:
    assert json.load(f) == results
  assert results["classes"] == ["code", "debug"]
  assert set(results) >= {"dev_accuracy", "dev_macro_f1", "best_epoch"}
  with open(os.path.join(config.output_dir, "classes.json")) as f:
    assert json.load(f) == {"classes": ["code", "debug"]}


def test_dev_figures_in_tensorboard(finetuned):
  config, _, _ = finetuned
  dev_logs = os.path.join(config.output_dir, "logs", "dev")
  tags = {}
  for name in os.listdir(dev_logs):
    for event in tf.compat.v1.train.summary_iterator(os.path.join(dev_logs, name)):
      for value in event.summary.value:
        tags.setdefault(value.tag, []).append(event.step)
  assert tags["epoch_accuracy"] == [0, 1, 2, 3] == tags["epoch_macro_f1"]


# Loads SavedModels in a process that imports only tensorflow and tensorflow_text and runs
# their `classify` signature: argv[1] is JSON {name: [export directory, {input: [text, ...]}]};
# prints {name: {"p": probabilities, "label": labels}} as JSON.
CLASSIFY = r"""
import json, sys
import tensorflow as tf
import tensorflow_text
answers = {}
for name, (directory, inputs) in json.loads(sys.argv[1]).items():
  out = tf.saved_model.load(directory).signatures["classify"](
      **{key: tf.constant(texts) for key, texts in inputs.items()})
  answers[name] = {"p": out["probabilities"].numpy().tolist(),
                   "label": [s.decode() for s in out["label"].numpy()]}
print(json.dumps(answers))
"""


@pytest.mark.e2e
def test_exports_classify_raw_text_in_a_fresh_process(finetuned, model_dir, tmp_path):
  """The fine-tuned run's export labels texts as the task does; and an export of one text or
  a pair gives the Keras model's probabilities on raw text to 1e-5. All loaded by one process
  that imports only tensorflow and tensorflow_text."""
  config, _, _ = finetuned
  exported = str(tmp_path / "exported")
  result = run(["-m", "bert_tf.export", f"--model_dir={config.output_dir}",
                "--format=savedmodel", f"--output={exported}"])
  assert result.returncode == 0, result.stderr[-3000:]
  line, wrote = result.stdout.splitlines()
  verified(line, "classify")
  assert wrote == f"wrote {exported}"
  served = {"finetuned": [exported, {"text": ["stack frame debugger", "class method value"]}]}
  pretrained = load_pretrained(model_dir)
  model = classifier_model(pretrained.encoder, 3)
  text_encoder = TextEncoder(pretrained.vocabulary, lower_case=True, seq_length=24)
  expected = {}
  for pair in (False, True):
    name = "pair" if pair else "one_text"
    export_classifier(model, text_encoder, ["a", "b", "c"], str(tmp_path / name), pair=pair)
    texts = [["Café naïve résumé", "The class of an object", "x " * 40, ""],
             ["a second text", "", "short", "the frame and the stack"]][:1 + pair]
    features = text_encoder.features(*[tf.constant(t) for t in texts])
    expected[name] = tf.nn.softmax(model(features, training=False)).numpy()
    inputs = ("text_a", "text_b") if pair else ("text",)
    served[name] = [str(tmp_path / name), dict(zip(inputs, texts))]
  result = run(["-c", CLASSIFY, json.dumps(served)], timeout=300)
  assert result.returncode == 0, result.stderr[-2000:]
  answers = json.loads(result.stdout.strip().splitlines()[-1])
  assert answers["finetuned"]["label"] == ["debug", "code"]
  for name, probabilities in expected.items():
    np.testing.assert_allclose(answers[name]["p"], probabilities, atol=1e-5)
    assert answers[name]["label"] == [["a", "b", "c"][i] for i in probabilities.argmax(-1)]


def encoder_weights(model_dir, **options):
  return load_pretrained(model_dir, **options).encoder.get_weights()


def test_encoder_from_model_dir_hugging_face_or_scratch(model_dir, tmp_path, vocab_file):
  loaded = trained.load_trained(model_dir)
  saved = loaded.model.get_layer("bert_encoder").get_weights()
  for mine, theirs in zip(encoder_weights(model_dir), saved):
    np.testing.assert_array_equal(mine, theirs)
  hf_dir = export_huggingface(loaded.model, loaded.config, loaded.vocabulary,
                              str(tmp_path / "hf"), lower_case=True)
  from_hf = load_pretrained(hf_dir)
  assert from_hf.config.replace(hidden_dropout_prob=0.1) == loaded.config.replace(
      hidden_dropout_prob=0.1)
  assert from_hf.lower_case and len(from_hf.vocabulary) == len(loaded.vocabulary)
  for mine, theirs in zip(from_hf.encoder.get_weights(), saved):
    np.testing.assert_allclose(mine, theirs, atol=1e-6)
  keras.utils.set_random_seed(1)
  scratch = encoder_weights(model_dir, from_scratch=True)
  assert [w.shape for w in scratch] == [w.shape for w in saved]
  assert not np.allclose(scratch[0], saved[0])


def test_from_scratch_is_the_same_recipe_on_random_weights(finetuned):
  config, results, _ = finetuned
  scratch = finetune(dataclasses.replace(config, from_scratch=True, epochs=1, serving_export=False,
                                         output_dir=config.output_dir + "_scratch"))
  assert scratch["from_scratch"] and not results["from_scratch"]
  assert scratch["train_examples"] == results["train_examples"] == 64


def test_keras_function_returns_a_compiled_classifier(model_dir):
  model = classifier(model_dir, 2, train_steps=8, seq_length=16, learning_rate=2e-3)
  rows = examples(32, 2)
  features = model.text_features([text for text, _ in rows])
  labels = np.array([sorted(WORDS).index(label) for _, label in rows])
  history = model.fit(features, labels, epochs=2, batch_size=8, verbose=0)
  assert len(history.history["loss"]) == 2
  assert model.predict(features, verbose=0).shape == (32, 2)


@pytest.mark.e2e
def test_bad_input_is_one_line_before_training(model_dir, task, tmp_path):
  bad_dev = write_task(tmp_path / "dev.tsv", [("frame stack", "unknown")])
  result = run(["-m", "bert_tf.finetune", f"--model_dir={model_dir}", f"--train_file={task[0]}",
                f"--dev_file={bad_dev}", f"--output_dir={tmp_path}/out"], timeout=300,
               as_user=True)
  assert result.returncode == 2
  assert result.stderr.strip().splitlines() == [
      f"error: {bad_dev} has labels the training file has not: 'unknown'"]
  assert not os.path.exists(tmp_path / "out")

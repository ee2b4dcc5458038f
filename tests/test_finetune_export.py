"""The served signatures of the task kinds beside classification (`score`, `tag`, `answer`),
loaded by a fresh process that imports only tensorflow and tensorflow_text, give what the
Keras model and the Python post-processing give on the same raw text, and say so themselves
(`finetune/verification.py`), a changed weight or head failing in one line; bad input is an
error; `python -m bert_tf.export --format=hf` on a fine-tune's output_dir writes the
transformers class of its task, whose logits equal ours, and says so itself (with transformers,
or by a numpy forward pass without it): the command on a classifier, the functions it calls on
the other kinds (in this process).

The models served are each exported once (`exported`) and loaded by one serving process
(`served`) that all the tests read."""

import json
import os
import re
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import files
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.export.formats import export_finetuned, verify_finetuned
from bert_tf.finetune.data import TextEncoder
from bert_tf.finetune.export import export_task
from bert_tf.finetune.finetuned import load_finetuned
from bert_tf.finetune.huggingface_verification import verify_task_huggingface
from bert_tf.finetune.kinds.answer import squad, squad_answers
from bert_tf.finetune.kinds.answer.head import span_model
from bert_tf.finetune.kinds.regress.head import regression_model
from bert_tf.finetune.kinds.tag import tagging
from bert_tf.finetune.kinds.tag.head import tagging_model
from bert_tf.finetune.model import classifier_model
from bert_tf.finetune.task_record import TaskRecord
from bert_tf.finetune.verification import verify_task_export
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from helpers import run, verified, write_output_dir

# Every test reads what a separate TensorFlow process loaded.
pytestmark = pytest.mark.e2e

TAGS = ["B-ORG", "I-ORG", "O"]
TEXTS = ["Café naïve, résumé.", "The  Stack-Frame of an object", "x " * 40]
SECOND_TEXTS = ["a second text", "", "the frame and the stack"]  # of pairs, beside TEXTS
CONTEXTS = [  # a long context: many windows of 32 tokens
    "The Debugger  stops at a Breakpoint. " * 6 + "Then the stack frame shows the value.",
    "Naïve Café: the résumé of a class method returns its object.",
    ""]
QUESTIONS = ["Where does the debugger stop?", "What does the method return?", "Anything?"]
ANSWER_TASK = {"task": "answer", "labels": [], "pair": False, "seq_length": 32,
               "lower_case": True, "max_query_length": 8, "doc_stride": 6,
               "max_answer_length": 5, "n_best_size": 4, "null_score_diff_threshold": 0.0,
               "version_2_with_negative": False}


@pytest.fixture(scope="module")
def vocabulary(vocab_file):
  return Vocabulary(vocab_file)


@pytest.fixture(scope="module")
def config(vocabulary):
  return BertConfig(vocab_size=len(vocabulary), hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)


def encoder(config, seed):
  keras.utils.set_random_seed(seed)
  return pretraining_model(config).get_layer("bert_encoder")


def score_task(pair):
  return {"task": "regress", "labels": [], "pair": pair, "seq_length": 24, "lower_case": True}


TAG_TASK = {"task": "tag", "labels": TAGS, "pair": False, "seq_length": 16, "lower_case": True}


@pytest.fixture(scope="module")
def exported(vocabulary, config, tmp_path_factory):
  """The models the tests below serve, each exported once: {name: (Keras model, task, export
  directory)}. `answer_v2`'s threshold lies between its first two questions' null score
  differences, so that some are answered and some not."""
  root = tmp_path_factory.mktemp("exports")
  made = {}

  def export(name, model, task):
    made[name] = (model, task, export_task(model, TaskRecord.from_json(task), vocabulary,
                                           str(root / name)))

  regression = regression_model(encoder(config, 1))
  for pair in (False, True):
    export(f"score_{pair}", regression, score_task(pair))
  export("tag", tagging_model(encoder(config, 2), len(TAGS)), TAG_TASK)
  export("answer", span_model(encoder(config, 3)), ANSWER_TASK)
  spans = span_model(encoder(config, 5))
  task = {**ANSWER_TASK, "version_2_with_negative": True}
  differences = python_answers(spans, vocabulary, task).null_score_diff
  export("answer_v2", spans, {**task, "null_score_diff_threshold": float(
      np.mean([differences["0"], differences["1"]]))})
  return made


# Serves calls in a process that imports only tensorflow and tensorflow_text: argv[1] is JSON
# [[export directory, signature, {input: [text, ...]}], ...], each export loaded once; prints
# each call's outputs (lists), or the message of the InvalidArgumentError it raised, as JSON.
SERVE = r"""
import json, sys
import tensorflow as tf
import tensorflow_text
loaded, said = {}, []
for directory, signature, inputs in json.loads(sys.argv[1]):
  if directory not in loaded:
    loaded[directory] = tf.saved_model.load(directory)
  try:
    out = loaded[directory].signatures[signature](
        **{k: tf.constant(v, tf.string) for k, v in inputs.items()})
    said.append({k: v.numpy().tolist() for k, v in out.items()})
  except tf.errors.InvalidArgumentError as e:
    said.append(e.message)
print(json.dumps(said, default=bytes.decode))
"""
# `test_bad_input_is_an_error`'s calls: (export, signature, inputs).
BAD_CALLS = [("answer", "answer", {"question": [], "context": []}),
             ("answer", "answer", {"question": ["a", "b"], "context": ["c"]}),
             ("tag", "tag", {"text": []}),
             ("score_True", "score", {"text_a": ["a"], "text_b": ["b", "c"]}),
             ("answer", "answer", {"question": ["a"], "context": ["a b c"]})]


@pytest.fixture(scope="module")
def served(exported):
  """What one process that loads `exported` answers: {name: outputs} of each export on the
  tests' texts, and `bad_input`: what it said to BAD_CALLS, made after those."""
  calls = {f"score_{pair}": ("score", dict(zip(("text_a", "text_b") if pair else ("text",),
                                               [TEXTS, SECOND_TEXTS][:1 + pair])))
           for pair in (False, True)}
  calls["tag"] = ("tag", {"text": TEXTS})
  for name in ("answer", "answer_v2"):
    calls[name] = ("answer", {"question": QUESTIONS, "context": CONTEXTS})
  given = [[exported[name][2], signature, inputs] for name, (signature, inputs) in calls.items()]
  given += [[exported[name][2], signature, inputs] for name, signature, inputs in BAD_CALLS]
  assert "bert_tf" not in SERVE
  result = run(["-c", SERVE, json.dumps(given)], timeout=900)
  assert result.returncode == 0, result.stderr[-3000:]
  said = json.loads(result.stdout.strip().splitlines()[-1])
  return {**dict(zip(calls, said)), "bad_input": said[len(calls):]}


@pytest.mark.parametrize("pair", [False, True])
def test_score_is_the_regression_models(vocabulary, exported, served, pair):
  model, _, _ = exported[f"score_{pair}"]
  texts = [TEXTS, SECOND_TEXTS][:1 + pair]
  features = TextEncoder(vocabulary, lower_case=True, seq_length=24).features(
      *[tf.constant(t) for t in texts])
  expected = model(features, training=False).numpy()[:, 0]
  np.testing.assert_allclose(served[f"score_{pair}"]["score"], expected, atol=1e-5)


def test_tag_gives_each_word_its_tag_and_offsets(vocabulary, exported, served):
  model, task, _ = exported["tag"]
  seq_length = task["seq_length"]
  out = served["tag"]
  words = [out["words"][i][:n] for i, n in enumerate(out["num_words"])]
  assert words[0] == ["Café", "naïve", ",", "résumé", "."]
  assert words[1] == ["The", "Stack", "-", "Frame", "of", "an", "object"]
  assert words[2] == ["x"] * 40
  for text, row, starts, ends in zip(TEXTS, words, out["starts"], out["ends"]):
    assert [text[s:e] for s, e in zip(starts[:len(row)], ends[:len(row)])] == row
  assert out["starts"][1][:3] == [0, 5, 10]  # the double space kept
  sentences = tagging.Sentences("served", words, [["O"] * len(row) for row in words])
  features = tagging.tagging_features(sentences, TAGS, vocabulary, lower_case=True,
                                      seq_length=seq_length)
  predicted = model(features.features, training=False).numpy().argmax(-1)
  expected = tagging.word_tags(predicted, features.first_pieces, TAGS)
  assert [row[:n] for row, n in zip(out["tags"], out["num_words"])] == expected
  assert expected[2][seq_length - 2:] == ["O"] * (40 - seq_length + 2)  # past the sequence


def python_answers(model, vocabulary, task):
  """The answers `squad_answers` chooses on the Keras model's logits of `squad_features`."""
  questions = [squad.Question(str(i), q, i, ()) for i, q in enumerate(QUESTIONS)]
  squad_file = squad.SquadFile("served", CONTEXTS, questions)
  features = squad.squad_features(
      squad_file, vocabulary, lower_case=True, seq_length=task["seq_length"],
      doc_stride=task["doc_stride"], max_query_length=task["max_query_length"])
  assert sum(window.question == 0 for window in features.windows) > 4  # the long context
  logits = model.predict(features.features, verbose=0)
  return squad_answers.best_answers(
      squad_file, features, logits, allow_no_answer=task["version_2_with_negative"],
      n_best=task["n_best_size"], max_answer_length=task["max_answer_length"],
      null_score_diff_threshold=task["null_score_diff_threshold"])


def check_answers(out, answers):
  for i, text in enumerate(out["answer"]):
    assert text == answers.predictions[str(i)]
    if text:
      best = next(c for c in answers.nbest[str(i)] if c["text"])
      assert (out["start"][i], out["end"][i]) == (best["start"], best["end"])
      assert CONTEXTS[i][best["start"]:best["end"]] == text  # as written
      np.testing.assert_allclose(out["score"][i], best["start_logit"] + best["end_logit"],
                                 rtol=1e-5)
    assert out["has_answer"][i] == bool(text)


@pytest.mark.usefixtures("warm_verification")  # the export's check forked, not a fresh Python
def test_answer_is_the_python_selections_over_all_windows(vocabulary, exported, served):
  model, task, directory = exported["answer"]
  out = served["answer"]
  answers = python_answers(model, vocabulary, task)
  check_answers(out, answers)
  assert out["answer"][0] and out["answer"][1] and out["answer"][2] == ""  # empty context
  verified(verify_task_export(directory, model, TaskRecord.from_json(task), vocabulary), "answer")


def test_answer_v2_says_no_answer_when_the_null_wins(vocabulary, exported, served):
  model, task, _ = exported["answer_v2"]
  out = served["answer_v2"]
  answers = python_answers(model, vocabulary, task)
  check_answers(out, answers)
  assert sorted(out["has_answer"][:2]) == [False, True]


@pytest.mark.usefixtures("warm_verification")  # the export's check forked, not a fresh Python
def test_an_export_of_other_weights_or_head_fails_verification_in_one_line(vocabulary, config,
                                                                          exported):
  """The tagger's export checked against a copy of the tagger with a tag's bias raised (as if
  the weights changed after the export); the span model's export against a copy with its
  start and end rows swapped (a wrong head)."""
  tagger, task, directory = exported["tag"]
  changed = tagging_model(encoder(config, 8), len(TAGS))
  changed.set_weights(tagger.get_weights())
  bias = changed.get_layer("classifier").bias
  bias.assign(bias.numpy() + [0.0, 5.0, 0.0])
  with pytest.raises(UserError, match=r"^tag savedmodel export failed verification: its tags "
                     r"differs from the Keras model's by \S+ \(tolerance 1e-04\)$"):
    verify_task_export(directory, changed, TaskRecord.from_json(task), vocabulary)

  spans, task, directory = exported["answer"]
  swapped = span_model(encoder(config, 9))
  swapped.set_weights(spans.get_weights())
  kernel, span_bias = spans.get_layer("qa_outputs").get_weights()
  swapped.get_layer("qa_outputs").set_weights([kernel[:, ::-1], span_bias[::-1]])
  with pytest.raises(UserError, match=r"^answer savedmodel export failed verification: its "
                     r"(answer|score) differs from the Keras model's by \S+ \(tolerance "
                     r"1e-04\)$"):
    verify_task_export(directory, swapped, TaskRecord.from_json(task), vocabulary)


def test_bad_input_is_an_error(served):
  """An empty batch, or inputs of different sizes, is an error that says so, for every
  signature, and the model serves on after it (the same loaded model)."""
  said = served["bad_input"]
  assert "question: the batch is empty" in said[0]
  assert "context and question hold different numbers of texts" in said[1]
  assert "text: the batch is empty" in said[2]
  assert "text_b and text_a hold different numbers of texts" in said[3]
  assert said[4]["answer"][0] in ("a", "b", "c", "a b", "b c", "a b c")  # still serving


# === Handed to transformers ===


def assert_hf_verifies_without_transformers_and_a_wrong_epsilon_fails(
    model, task, vocabulary, hf_dir, monkeypatch):
  """The fine-tuned model's Hugging Face export checked by a numpy forward pass (transformers
  made unimportable) passes; with a wrong layer-norm epsilon it fails in one line."""
  with monkeypatch.context() as context:
    context.setitem(sys.modules, "transformers", None)  # `import transformers` fails
    line = verify_task_huggingface(hf_dir, model, TaskRecord.from_json(task), vocabulary)
    assert float(re.search(r"difference (\S+) \(logits", line)[1]) <= 1e-5, line
  config_file = os.path.join(hf_dir, "config.json")
  with open(config_file) as f:
    hf_config = json.load(f)
  files.write_json(config_file, {**hf_config, "layer_norm_eps": 1e-3})
  with pytest.raises(UserError, match=rf"^{task['task']} hf export failed verification: its "
                     r"logits differs from the Keras model's by \S+ \(tolerance 1e-04\)$"):
    verify_task_huggingface(hf_dir, model, TaskRecord.from_json(task), vocabulary)
  files.write_json(config_file, hf_config)


@pytest.mark.parametrize("kind", ["classify", "regress", "tag", "answer"])
def test_hf_export_of_a_finetuned_model_gives_our_logits(vocabulary, config, tmp_path, kind,
                                                         monkeypatch):
  import torch
  import transformers

  body = encoder(config, 7)
  for weight in body.weights:  # biases and layer norms away from 0 and 1
    weight.assign(weight + np.random.default_rng(0).normal(0, 0.02, weight.shape))
  labels = {"classify": ["neg", "pos", "mixed"], "tag": TAGS}.get(kind, [])
  model = {"classify": lambda: classifier_model(body, 3),
           "regress": lambda: regression_model(body),
           "tag": lambda: tagging_model(body, len(TAGS)),
           "answer": lambda: span_model(body)}[kind]()
  task = {"task": kind, "labels": labels, "pair": False, "seq_length": 24, "lower_case": True,
          **({key: ANSWER_TASK[key] for key in ANSWER_TASK if key not in (
              "task", "labels", "pair", "seq_length", "lower_case")} if kind == "answer"
             else {})}
  output_dir = write_output_dir(str(tmp_path / "finetuned"), model, config, vocabulary, task)
  hf_dir = str(tmp_path / "hf")
  if kind == "classify":  # the command; the other kinds by the functions it calls, here
    result = run(["-m", "bert_tf.export", f"--model_dir={output_dir}", "--format=hf",
                  f"--output={hf_dir}"])
    assert result.returncode == 0, result.stderr[-3000:]
    said = result.stdout
  else:
    finetuned = load_finetuned(output_dir)
    export_finetuned(finetuned, "hf", hf_dir)
    said = verify_finetuned(finetuned, "hf", hf_dir)
  assert re.search(rf"^verified: {kind} hf ids equal, largest output difference \S+ "
                   r"\(logits; tolerance 1e-04\)$", said, re.M), said
  assert_hf_verifies_without_transformers_and_a_wrong_epsilon_fails(
      model, task, vocabulary, hf_dir, monkeypatch)

  class_name = {"classify": "BertForSequenceClassification",
                "regress": "BertForSequenceClassification",
                "tag": "BertForTokenClassification", "answer": "BertForQuestionAnswering"}[kind]
  theirs, loading = getattr(transformers, class_name).from_pretrained(
      hf_dir, output_loading_info=True)
  assert not any(loading.values()), loading  # no missing, unexpected or mismatched weights
  assert (theirs.bert.pooler is None) == (kind in ("tag", "answer"))
  if labels:
    assert theirs.config.id2label == dict(enumerate(labels))
  if kind == "regress":
    assert theirs.config.num_labels == 1 and theirs.config.problem_type == "regression"
  features = TextEncoder(vocabulary, lower_case=True, seq_length=24).features(
      tf.constant(TEXTS[:2]), tf.constant(["the stack frame", "an object"]))
  ours = model(features, training=False)
  if kind == "answer":  # the span head's raw output, before the context mask
    raw = keras.Model(model.inputs, model.get_layer("start_end").output)
    ours = raw(features, training=False)
  theirs.eval()
  with torch.no_grad():
    output = theirs(input_ids=torch.tensor(features["token_ids"].numpy(), dtype=torch.long),
                    token_type_ids=torch.tensor(features["segment_ids"].numpy(),
                                                dtype=torch.long),
                    attention_mask=torch.tensor(features["padding_mask"].numpy(),
                                                dtype=torch.long))
  if kind == "answer":
    logits = np.stack([output.start_logits.numpy(), output.end_logits.numpy()], axis=1)
  else:
    logits = output.logits.numpy()
  mask = features["padding_mask"].numpy().astype(bool)
  ours = np.asarray(ours)
  if kind == "tag":
    ours, logits = ours[mask], logits[mask]
  elif kind == "answer":
    ours, logits = ours.transpose(0, 2, 1)[mask], logits.transpose(0, 2, 1)[mask]
  np.testing.assert_allclose(logits, ours, atol=1e-5)
  # A model with the head's rows swapped would not match: the comparison can fail.
  if kind == "answer":
    assert np.abs(ours[:, ::-1] - logits).max() > 1e-3

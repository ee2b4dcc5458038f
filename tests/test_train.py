"""End to end: `train.py` trains a tiny BERT, writes model_dir, and exports a SavedModel that a
fresh process loads and serves (the run is conftest's `finished_run`, which test_watching.py
reads too). Also: bad input is refused before training (and is one line on stderr with exit
status 2: test_watching.py)."""

import dataclasses
import json
import os
import re
import sys

import pytest

from bert_tf.errors import UserError
from bert_tf.training.trainer import TrainConfig, train
from helpers import TINY_RUN_STEPS, run, tiny_run

# In the process that made conftest's finished run, with test_watching.py: it trains once.
pytestmark = pytest.mark.xdist_group("finished_run")

TINY_CONFIG = dict(config="bert_tiny", seq_length=64, max_predictions_per_seq=10,
                   global_batch_size=8, train_steps=6, checkpoint_every=3, warmup_steps=2,
                   eval_steps=2, verbose=True)
TINY = [f"--{name}={value}" for name, value in TINY_CONFIG.items()]  # the same, as flags


@pytest.mark.e2e
def test_model_dir_contents(finished_run):
  model_dir, _ = finished_run
  for name in ("flags.txt", "metrics.json", "bert_config.json", "model.weights.h5",
               "curves.png", "summary.txt", "history.jsonl", "export/saved_model.pb",
               "export/assets/vocab.txt", "checkpoints/checkpoint", "logs"):
    assert os.path.exists(os.path.join(model_dir, name)), name
  assert not os.path.exists(os.path.join(model_dir, ".export.tmp"))


@pytest.mark.e2e
def test_metrics_json(finished_run):
  model_dir, _ = finished_run
  metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
  assert metrics["steps"] == TINY_RUN_STEPS
  for name in ("mlm_accuracy", "nsp_accuracy", "most_frequent_token_accuracy"):
    assert 0 <= metrics[name] <= 1, name
  assert metrics["most_frequent_token_accuracy"] > 0.01  # a token such as "the" or "."
  assert 0 < metrics["mlm_loss"] < 20 and 0 < metrics["nsp_loss"] < 5
  assert metrics["loss"] == pytest.approx(metrics["mlm_loss"] + metrics["nsp_loss"], rel=1e-5)
  # The rates count training time only: see test_learning.py.
  for name in ("eval_mlm_loss", "eval_nsp_loss", "eval_mlm_accuracy", "eval_nsp_accuracy"):
    assert 0 <= metrics[name] < 20, name  # the held-out documents (--eval_fraction)
  summary = open(os.path.join(model_dir, "summary.txt")).read()
  assert summary.startswith(f"Trained {TINY_RUN_STEPS} steps")
  assert "most frequent token" in summary


@pytest.mark.e2e
def test_tensorboard_scalars(finished_run):
  from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
  model_dir, _ = finished_run
  events = EventAccumulator(os.path.join(model_dir, "logs", "train"))
  events.Reload()
  tags = set(events.Tags()["scalars"]) | set(events.Tags()["tensors"])
  for name in ("mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy", "learning_rate",
               "gradient_norm", "examples_per_second", "tokens_per_second", "padding_share"):
    assert name in tags, (name, tags)


@pytest.mark.e2e
def test_progress_bar_shows_both_losses_and_accuracies(finished_run):
  _, result = finished_run
  stdout = result.stdout
  for name in ("loss:", "mlm_loss:", "nsp_loss:", "mlm_accuracy:", "nsp_accuracy:"):
    assert name in stdout, name
  assert "fill_mask:" in stdout and "P(IsNext)" in stdout


@pytest.mark.e2e
def test_flags_txt_is_a_flagfile_and_rerun_resumes_finished_run(finished_run, copy_of):
  model_dir = copy_of(finished_run[0])  # flags.txt names the run's model_dir: go on in the copy
  flags_text = open(os.path.join(model_dir, "flags.txt")).read()
  assert f"--train_steps={TINY_RUN_STEPS}" in flags_text and "--seq_length=64" in flags_text
  assert "" not in flags_text.splitlines()  # --dropout unset is left out, not an empty line
  # No serving SavedModel: the resume is what is tested (the run's own export, other tests').
  result = run(["train.py", f"--flagfile={os.path.join(model_dir, 'flags.txt')}",
                f"--model_dir={model_dir}", "--noserving_export"])
  assert result.returncode == 0, result.stderr[-3000:]
  assert f"Resumed from the checkpoint at step {TINY_RUN_STEPS}" in result.stderr
  metrics = json.load(open(os.path.join(model_dir, "metrics.json")))
  assert metrics["steps"] == TINY_RUN_STEPS  # restored at the end; no step trained twice


SERVE = r"""
import sys, json
import numpy as np
import tensorflow as tf
import tensorflow_text  # registers the tokenizer ops
from bert_tf.serving.trained import load_trained

model_dir = sys.argv[1]
served = tf.saved_model.load(model_dir + "/export")
FILL = ["The [MASK] statement is used for conditional execution.", "no mask here",
        "a [MASK] b [MASK]"]
PAIRS = (["The assert statement", "Literals"],
         ["Assert statements are a convenient way to insert debugging assertions.",
          "Changed in version 3.8: the order was fixed."])
ENCODE = (["one", "two words"], ["", "x"])
fill = served.signatures["fill_mask"](text=tf.constant(FILL))
nxt = served.signatures["is_next"](text_a=tf.constant(PAIRS[0]), text_b=tf.constant(PAIRS[1]))
enc = served.signatures["encode"](text_a=tf.constant(ENCODE[0]), text_b=tf.constant(ENCODE[1]))

# The Keras model of model_dir on ids assembled here: [CLS] a [SEP] b [SEP], [MASK] by its id.
trained = load_trained(model_dir)
vocabulary, model = trained.vocabulary, trained.model
tokenizer = vocabulary.tokenizer(trained.lower_case)
def ids(text):
  return tokenizer.tokenize(tf.constant([text]))[0].numpy().tolist() if text else []
def batch(rows, segments):
  length = max(len(row) for row in rows)
  pad = lambda values: [v + [0] * (length - len(v)) for v in values]
  return {"token_ids": np.array(pad(rows), "int32"),
          "segment_ids": np.array(pad(segments), "int32"),
          "padding_mask": np.array(pad([[1] * len(row) for row in rows]), "int32")}
def pairs(texts_a, texts_b):
  rows, segments = [], []
  for a, b in zip(texts_a, texts_b):
    a, b = ids(a), ids(b)
    rows.append([vocabulary.cls_id, *a, vocabulary.sep_id, *(b + [vocabulary.sep_id] if b else [])])
    segments.append([0] * (len(a) + 2) + [1] * (len(b) + 1 if b else 0))
  return batch(rows, segments)
rows = [[vocabulary.cls_id] + sum(([vocabulary.mask_id] * bool(i) + ids(piece)
                                   for i, piece in enumerate(text.split("[MASK]"))), [])
        + [vocabulary.sep_id] for text in FILL]
features = batch(rows, [[0] * len(row) for row in rows])
positions = [[i for i, t in enumerate(row) if t == vocabulary.mask_id] for row in rows]
width = max(len(p) for p in positions)
features["masked_positions"] = np.array([p + [0] * (width - len(p)) for p in positions], "int32")
mlm = tf.nn.softmax(model(features, training=False)["mlm"]).numpy()  # [batch, masks, vocab]
served_probabilities = fill["probabilities"].numpy()
fill_difference = 0.0
for row, row_positions in enumerate(positions):
  for slot in range(len(row_positions)):
    reference = mlm[row, slot]
    served_tokens = [t.decode() for t in fill["tokens"][row, slot].numpy()]
    fill_difference = max(
        fill_difference,
        np.abs(np.sort(reference)[::-1][:5] - served_probabilities[row, slot]).max(),
        np.abs(reference[[vocabulary.tokens.index(t) for t in served_tokens]]
               - served_probabilities[row, slot]).max())
pair_features = pairs(*PAIRS)
nsp = tf.nn.softmax(model.get_layer("nsp")(
    model.get_layer("bert_encoder")(pair_features, training=False)["pooled_output"])).numpy()
encoded = model.get_layer("bert_encoder")(pairs(*ENCODE), training=False)
print(json.dumps({
    "tokens_shape": fill["tokens"].shape.as_list(),
    "first_tokens": [t.decode() for t in fill["tokens"][0, 0].numpy()],
    "probabilities": served_probabilities.tolist(),
    "no_mask_tokens": [t.decode() for t in fill["tokens"][1, 0].numpy()],
    "is_next": nxt["probability"].numpy().tolist(),
    "pooled": enc["pooled_output"].shape.as_list(),
    "sequence": enc["sequence_output"].shape.as_list(),
    "fill_mask_difference": float(fill_difference),
    "is_next_difference": float(np.abs(nsp[:, 1] - nxt["probability"].numpy()).max()),
    "pooled_difference": float(np.abs(encoded["pooled_output"].numpy()
                                      - enc["pooled_output"].numpy()).max()),
    "sequence_difference": float(np.abs(encoded["sequence_output"].numpy()
                                        - enc["sequence_output"].numpy()).max()),
    "reference_sequence": list(encoded["sequence_output"].shape),
}))
"""


@pytest.mark.e2e
def test_savedmodel_serves_raw_text_in_a_fresh_process(finished_run):
  """The served answers are the Keras model's on the same ids, to float32 rounding."""
  model_dir, _ = finished_run
  result = run(["-c", SERVE, model_dir])
  assert result.returncode == 0, result.stderr[-3000:]
  out = json.loads(result.stdout.strip().splitlines()[-1])
  assert out["tokens_shape"] == [3, 2, 5]  # [batch, most masks in a row, top_k]
  assert all(out["first_tokens"])
  first = out["probabilities"][0][0]
  assert first == sorted(first, reverse=True) and 0 < sum(first) <= 1.0 + 1e-6
  assert out["no_mask_tokens"] == [""] * 5 and out["probabilities"][1][0] == [0.0] * 5
  assert all(0 < p < 1 for p in out["is_next"])
  assert out["pooled"] == [2, 128]
  assert out["sequence"] == out["reference_sequence"]  # [2, the longest pair, 128]
  for name in ("fill_mask", "is_next", "pooled", "sequence"):
    assert out[f"{name}_difference"] < 1e-5, (name, out[f"{name}_difference"])


@pytest.mark.e2e
def test_saved_model_cli_lists_the_signatures(finished_run):
  model_dir, _ = finished_run
  cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
  result = run(["show", "--all", "--dir", os.path.join(model_dir, "export")], timeout=300,
               program=cli)
  assert result.returncode == 0, result.stderr[-2000:]
  for name in ("fill_mask", "is_next", "encode", "text_a", "text_b", "probabilities",
               "pooled_output", "sequence_output"):
    assert name in result.stdout, name


@pytest.mark.e2e
def test_export_command_writes_every_format_and_init_checkpoint_reads_hf(
    finished_run, hf_export_of_finished_run, tmp_path, data_dir, vocab_file):
  """The default format (savedmodel) is exported in test_watching.py's quiet commands; the hf
  export is conftest's (test_export_verification.py reads what the command said)."""
  model_dir, _ = finished_run
  hf, _ = hf_export_of_finished_run
  result = run(["-m", "bert_tf.export", f"--model_dir={model_dir}", "--format=keras_hub",
                f"--output={tmp_path / 'keras_hub'}"])
  assert result.returncode == 0, result.stderr[-3000:]
  assert os.path.exists(os.path.join(hf, "model.safetensors"))
  assert os.path.exists(os.path.join(hf, "vocab.txt"))
  assert (tmp_path / "keras_hub" / "config.json").exists()
  # Continued pre-training from the Hugging Face export: two steps, no SavedModel (the
  # initialisation is what is tested).
  result = run(["train.py", f"--data_dir={data_dir}", f"--vocab_file={vocab_file}",
                f"--model_dir={tmp_path / 'continued'}", f"--init_checkpoint={hf}", *TINY,
                "--train_steps=2", "--checkpoint_every=2", "--noserving_export"])
  assert result.returncode == 0, result.stderr[-3000:]
  assert "Initialising from" in result.stderr


@pytest.mark.parametrize("changes, message", [
    (dict(input_files="/nonexistent/*.txt"), "no file matches '/nonexistent/*.txt'"),
    (dict(config="bert_nope"), "unknown --config 'bert_nope'"),
    (dict(seq_length=1024, max_predictions_per_seq=160),
     "seq_length 1024 exceeds the model's 512 position embeddings"),
    (dict(max_predictions_per_seq=3), "max_predictions_per_seq 3 is below"),
    (dict(global_batch_size=0), "must be positive"),
    (dict(checkpoint_every=0), "checkpoint_every, keep_checkpoints, log_every and eval_steps"),
    (dict(log_every=0), "log_every and eval_steps must be positive"),
    (dict(eval_steps=0), "log_every and eval_steps must be positive"),
    (dict(model_dir="/proc/bert_run"),
     "model_dir /proc/bert_run is not writable: /proc/bert_run: No such file or directory"),
    (dict(model_dir="/sys/bert_run"), "model_dir /sys/bert_run is not writable: "),  # sysfs
    (dict(init_checkpoint="/nonexistent/bert_model.ckpt"),
     "--init_checkpoint /nonexistent/bert_model.ckpt is not found"),
    (dict(decay_steps=3), "decay_steps 3 is before train_steps 6"),
    (dict(dropout=1.5), "dropout 1.5 is not in [0, 1)"),
    (dict(learning_rate=-1.0), "learning_rate -1.0 is not positive"),
    (dict(gradient_accumulation_steps=3),
     "global_batch_size 8 is not divisible by the 1 replicas times 3 accumulation steps"),
])
def test_bad_input_is_refused_before_training(tmp_path, data_dir, vocab_file, changes,
                                              message):
  config = TrainConfig(**{"data_dir": data_dir, "vocab_file": vocab_file,
                          "model_dir": str(tmp_path / "run"), **TINY_CONFIG, **changes})
  with pytest.raises(UserError, match=re.escape(message)):
    train(config)


@pytest.mark.e2e
def test_checkpoint_of_another_model_is_a_clear_error(finished_run, data_dir):
  model_dir, _ = finished_run
  result = run([*tiny_run(model_dir, data_dir), "--config=bert_mini"])
  assert result.returncode == 2
  assert "the model differs from the one" in result.stderr and "Traceback" not in result.stderr
  assert "hidden_size 128 -> 256" in result.stderr


@pytest.mark.e2e
def test_one_document_corpus_and_bad_vocabulary(tmp_path, vocab_file):
  corpus = tmp_path / "one.txt"
  config = TrainConfig(input_files=str(corpus), vocab_file=vocab_file,
                       model_dir=str(tmp_path / "run"), **TINY_CONFIG)
  corpus.write_text("\n \n\t\n")
  with pytest.raises(UserError, match="the corpus has no text"):
    train(config)
  corpus.write_text("Only one document here.\nIt has two sentences.\n")
  with pytest.raises(UserError, match=re.escape("only 1 document(s)")):
    train(config)

  bad_vocab = tmp_path / "vocab.txt"
  bad_vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\n")
  corpus.write_text("One.\nTwo.\n\nThree.\nFour.\n")
  with pytest.raises(UserError, match=re.escape("lacks the special tokens [MASK]")):
    train(dataclasses.replace(config, vocab_file=str(bad_vocab)))

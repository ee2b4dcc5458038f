"""--mixed_precision: layers compute in bf16 / fp16, weights, logits and losses stay float32,
fp16 trains with dynamic loss scaling, and `auto` chooses bf16 where the hardware has it."""

import importlib.util
import os
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.runtime import precision
from bert_tf.runtime.optimization import create_optimizer
from helpers import ROOT, small_batch, tiny_bert

CONFIG = tiny_bert()
_spec = importlib.util.spec_from_file_location(
    "bf16_accuracy", os.path.join(ROOT, "benchmarks", "bf16_accuracy.py"))
BF16_ACCURACY = importlib.util.module_from_spec(_spec)  # its `going_on`
_spec.loader.exec_module(BF16_ACCURACY)


@pytest.mark.e2e
@pytest.mark.parametrize("name, compute", [("bf16", "bfloat16"), ("fp16", "float16")])
def test_mixed_precision_trains_with_float32_logits_and_losses(name, compute):
  with precision.policy(name):
    model = pretraining_model(CONFIG)
    compile_for_pretraining(model, create_optimizer(learning_rate=1e-3, warmup_steps=0,
                                                    train_steps=10))
  assert keras.config.dtype_policy().name == "float32"  # restored for whatever comes next
  encoder_layer = model.get_layer("bert_encoder").get_layer("transformer_layer_0")
  assert encoder_layer.compute_dtype == compute
  assert all(v.dtype == "float32" for v in model.trainable_variables)
  features, _, _ = small_batch()
  outputs = model(features)
  assert outputs["mlm"].dtype == "float32" and outputs["nsp"].dtype == "float32"
  if name == "fp16":
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
  history = model.fit(tf.data.Dataset.from_tensors(small_batch()).repeat(), epochs=1,
                      steps_per_epoch=3, verbose=0).history
  assert np.isfinite(history["loss"][0])
  assert int(model.optimizer.iterations.numpy()) >= 1


@pytest.mark.parametrize("strategy, gpus, flags, chosen", [
    ("default", [], {"avx2", "avx512_bf16"}, "bfloat16 (auto: the CPU has avx512_bf16)"),
    ("default", [], {"amx_bf16", "avx512_bf16"}, "bfloat16 (auto: the CPU has amx_bf16)"),
    ("default", [], {"avx2", "avx512_vnni"},
     "float32 (auto: the CPU has neither amx_bf16 nor avx512_bf16)"),
    ("mirrored", [(8, 0), (9, 0)], set(), "bfloat16 (auto: GPU compute capability 8.0)"),
    ("default", [(7, 5)], {"avx512_bf16"},
     "float32 (auto: GPU compute capability 7.5, below 8.0)"),
    ("tpu", [], set(), "bfloat16 (auto: a TPU)"),
])
def test_auto_chooses_bf16_where_the_hardware_has_it(strategy, gpus, flags, chosen):
  assert str(precision.choose("auto", strategy, gpus=gpus, flags=flags)) == chosen


def test_auto_is_float32_where_the_cpu_features_are_unknown(monkeypatch):
  monkeypatch.setattr(sys, "platform", "darwin")
  assert precision.cpu_flags() is None
  assert str(precision.choose("auto", gpus=[])) == (
      "float32 (auto: the CPU's features are unknown off Linux)")


def test_a_run_records_the_precision_it_computes_in(caplog):
  """`auto` is replaced by its choice, and the reason kept beside it, before the settings are
  recorded; a precision asked for is said too, float32 by default is not."""
  from bert_tf.training.train_settings import TrainConfig
  chosen = precision.choose("auto")
  with caplog.at_level("INFO", logger="bert_tf"):
    auto = precision.resolved(TrainConfig(mixed_precision="auto"))
    asked = precision.resolved(TrainConfig(mixed_precision="bf16"))
    default = precision.resolved(TrainConfig())
  assert (auto.mixed_precision, auto.precision_reason) == (chosen.name, chosen.reason)
  assert (asked.mixed_precision, asked.precision_reason) == ("bf16", "--mixed_precision=bf16")
  assert default.mixed_precision == "none"
  assert caplog.messages == [f"precision: {chosen}", "precision: bfloat16 (--mixed_precision=bf16)"]


def test_the_cpu_features_are_said():
  assert precision.cpu_features({"avx2", "avx512f", "avx512_vnni", "avx512_bf16"}) == (
      "AVX2, AVX-512, AVX-512 VNNI, AVX-512 BF16")
  assert precision.cpu_features({"sse2"}) == "none"


def test_unknown_policy_is_an_error():
  with pytest.raises(UserError, match="unknown mixed_precision 'fp8'"):
    with precision.policy("fp8"):
      pass


def test_float32_by_default():
  with precision.policy("none"):
    model = pretraining_model(BertConfig.from_preset("bert_tiny", vocab_size=50))
  assert model.get_layer("bert_encoder").compute_dtype == "float32"


@pytest.mark.parametrize("name, tolerance", [("bf16", 3e-2), ("fp16", 5e-3)])
@pytest.mark.e2e
def test_mixed_precision_losses_match_float32_on_the_same_weights(name, tolerance):
  """Weights trained in float32 until the losses are far from chance, then the same weights
  under each policy: evaluated and training (`fit`'s first step, before its update) losses
  agree to the precision's rounding. bf16 keeps 8 bits of mantissa (relative rounding 4e-3
  per operation), fp16 11 bits (5e-4). The learning rate is one at which the float32 run
  ends on the same weights however many threads sum its gradients (at 1e-2 it did not: on
  one core the MLM loss after 40 steps was 2.15, on two 1.59). Measured here (MLM loss 0.55):
  bf16 within 1.1e-4, fp16 within 8e-6, on one core and on two; the tolerances (absolute)
  leave room for a CPU that computes in bf16 throughout, and are far below what a loss left
  scaled, or computed on other weights, would differ by."""
  keras.utils.set_random_seed(0)  # the float32 run's initial weights
  config = CONFIG.replace(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  data = tf.data.Dataset.from_tensors(small_batch())
  losses = {}
  for policy_name in ("none", name):
    with precision.policy(policy_name):
      model = pretraining_model(config)
      compile_for_pretraining(model, create_optimizer(learning_rate=3e-3, warmup_steps=0,
                                                      train_steps=1000))
    if policy_name == "none":
      model.fit(data.repeat(), epochs=1, steps_per_epoch=8, verbose=0)
      trained_weights = model.get_weights()
    else:
      model.set_weights(trained_weights)
    evaluated = model.evaluate(data, return_dict=True, verbose=0)
    first_step = model.fit(data, epochs=1, verbose=0).history
    losses[policy_name] = {**{name: evaluated[name] for name in ("mlm_loss", "nsp_loss")},
                           **{f"fit_{name}": first_step[name][0]
                              for name in ("loss", "mlm_loss", "nsp_loss")}}
  reference = losses["none"]
  assert reference["mlm_loss"] < 0.5 * np.log(CONFIG.vocab_size)  # far from chance
  assert reference["fit_loss"] == pytest.approx(reference["mlm_loss"] + reference["nsp_loss"],
                                                rel=1e-5)
  for key, value in losses[name].items():
    assert value == pytest.approx(reference[key], abs=tolerance), (key, losses)


@pytest.mark.e2e
def test_bf16_learns_as_float32_does(data_dir, vocab_file, corpus_pattern):
  """From the same weights and optimizer state, float32's at step 200 from seed 6, bf16 and
  float32 go on to step 300 on the same batches and reach held-out MLM accuracy within 0.01
  (issue 55), while float32 is still learning (here it leaves the first plateau, always the
  most frequent token: 0.075 held out, on the way: 0.089 at step 200, 0.137 at step 300; bf16
  0.138). Measured on the same batches over seeds 1-9 (but 7): bf16 minus float32 -0.0008 to
  +0.0010, whether float32 was on the plateau at step 200 or past it, while float32 gained
  0.012-0.047 (docs/measured.md).

  Not from initialisation: the step at which a run leaves the plateau moves by tens of steps
  with any perturbation of bf16's size, either way (a 1% higher learning rate moved float32's
  accuracy at step 300 by 0.02), so one seed's bf16 and float32 differ by a draw: at seed 7,
  0.126 against 0.164 at step 300, and over the seeds bf16 is behind as often as ahead
  (docs/measured.md, "bf16 training on AMD EPYC": `benchmarks/bf16_accuracy.py`, whose
  `going_on` this runs)."""
  from helpers import one_layer_config
  files = dict(data_dir=data_dir, input_files=corpus_pattern, vocab_file=vocab_file)
  accuracies = BF16_ACCURACY.going_on(files, one_layer_config(vocab_file), seed=6,
                                      shared_steps=200, own_steps=100)
  assert accuracies["none"] > accuracies["shared"] + 0.01, accuracies  # still learning
  assert accuracies["bf16"] == pytest.approx(accuracies["none"], abs=0.01), accuracies

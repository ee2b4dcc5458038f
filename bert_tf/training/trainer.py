"""`train`: one pre-training run from a `TrainConfig`, usable from a notebook or `train.py`.

Steps: check every input (cheap checks first), build the vocabulary if asked, restore the
latest checkpoint of `model_dir` if there is one (a re-run resumes exactly), train with
`model.fit` (one Keras epoch per checkpoint interval), write `metrics.json`, the plot and the
summary, and export the serving SavedModel.
"""

import collections
import dataclasses
import logging
import os

import keras
import tensorflow as tf

from bert_tf import files
from bert_tf.config import resolve_config
from bert_tf.data import corpus
from bert_tf.data.holdout import Holdout
from bert_tf.data.pipeline import PipelineConfig, pretraining_dataset
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.export import trained
from bert_tf.export.savedmodel import export_savedmodel
from bert_tf.interop.huggingface import is_huggingface_directory, load_huggingface
from bert_tf.interop.tf1_checkpoint import (checkpoint_prefix, is_tf1_checkpoint,
                                            load_tf1_checkpoint)
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.training import callbacks as callbacks_lib
from bert_tf.training import checkpointing, evaluation, optimization, precision, progress
from bert_tf.training import report, run_lock
from bert_tf.training import data_position as data_position_lib
from bert_tf.training import strategy as strategy_lib
from bert_tf.vocab import build_vocabulary

log = logging.getLogger("bert_tf")

MAX_ROLLBACKS = 3  # with --on_nan=rollback, before giving up

PIPELINE_FIELDS = tuple(f.name for f in dataclasses.fields(PipelineConfig)
                        if f.name not in ("seq_length", "max_predictions_per_seq"))


@dataclasses.dataclass
class TrainConfig:
  """Everything one run needs; field names are `train.py`'s flag names.

  The defaults are a small BERT on the built-in corpus in minutes on a laptop, with original
  BERT's masking rate and dropout; configs/quickstart.flags (also what a bare `python train.py`
  runs) raises the one and removes the other, so that a short run learns words sooner.
  """

  # Data.
  input_files: str = "builtin"
  eval_files: str = ""
  eval_fraction: float = 0.0  # Or hold out this share of input_files' documents for eval.
  data_dir: str = "data"
  vocab_file: str = "data/vocab.txt"
  vocab_size: int = 8000  # Only when the vocabulary is built here.
  model_dir: str = "runs/quickstart"
  # Pipeline: PipelineConfig's fields that are flags, with its defaults.
  input_format: str = PipelineConfig.input_format
  do_lower_case: bool = PipelineConfig.do_lower_case
  seq_length: int = PipelineConfig.seq_length
  max_predictions_per_seq: int = PipelineConfig.max_predictions_per_seq
  masked_lm_prob: float = PipelineConfig.masked_lm_prob
  short_seq_prob: float = PipelineConfig.short_seq_prob
  whole_word_masking: bool = PipelineConfig.whole_word_masking
  nsp: bool = PipelineConfig.nsp
  # Model.
  config: str = "bert_tiny"
  dropout: float | None = None  # Overrides the config's dropout rates when set.
  init_checkpoint: str = ""  # Original BERT (TF1) checkpoint or Hugging Face directory.
  # Loss.
  mlm_loss_weight: float = 1.0
  nsp_loss_weight: float = 1.0
  mlm_loss_reduction: str = "mean"
  # Optimisation.
  optimizer: str = "adamw"
  global_batch_size: int = 16
  gradient_accumulation_steps: int = 1
  train_steps: int = 2000
  decay_steps: int = 0  # 0: train_steps. Phase 1 of two phases stops before it.
  learning_rate: float = 1e-3
  warmup_steps: int = 200
  weight_decay: float = 0.01
  clip_norm: float = 1.0
  # Execution.
  seed: int = 0
  strategy: str = "default"
  tpu: str = ""
  mixed_precision: str = "none"
  jit_compile: bool = False
  steps_per_execution: int = 1
  checkpoint_every: int = 500
  keep_checkpoints: int = 3
  on_nan: str = "stop"  # or "rollback" to the last checkpoint, skipping the bad batches
  eval_steps: int = 50  # Batches for the most-frequent-token baseline and evaluation.
  eval_every: int = 0  # Steps between held-out evaluations; 0: every checkpoint.
  verbose: int = 1  # 0: no progress line (training/progress.py)

  def pipeline_options(self) -> dict:
    return {name: getattr(self, name) for name in PIPELINE_FIELDS if hasattr(self, name)}


def _check_model_dir(model_dir: str) -> None:
  try:
    tf.io.gfile.makedirs(model_dir)
    probe = os.path.join(model_dir, ".write_test")
    files.write_text(probe, "")
    tf.io.gfile.remove(probe)
  except (OSError, tf.errors.OpError) as e:
    raise UserError(f"model_dir {model_dir} is not writable: {e}") from None


def prepare(config: TrainConfig):
  """Checks the inputs before anything heavy; returns (vocabulary, bert_config).

  Builds the vocabulary first when `vocab_file` does not exist yet.
  """
  if min(config.train_steps, config.global_batch_size, config.gradient_accumulation_steps) <= 0:
    raise UserError("train_steps, global_batch_size and gradient_accumulation_steps must be "
                    "positive")
  if config.checkpoint_every <= 0 or config.keep_checkpoints <= 0:
    raise UserError("checkpoint_every and keep_checkpoints must be positive")
  if config.decay_steps and config.decay_steps < config.train_steps:
    raise UserError(f"decay_steps {config.decay_steps} is before train_steps "
                    f"{config.train_steps}: the learning rate would be 0 at the end")
  if config.dropout is not None and not 0 <= config.dropout < 1:
    raise UserError(f"dropout {config.dropout} is not in [0, 1)")
  if config.optimizer not in optimization.OPTIMIZERS:
    raise UserError(f"unknown optimizer {config.optimizer!r}: use one of "
                    f"{', '.join(optimization.OPTIMIZERS)}")
  if config.mixed_precision not in precision.POLICIES:
    raise UserError(f"unknown mixed_precision {config.mixed_precision!r}: use one of "
                    f"{', '.join(precision.POLICIES)}")
  if config.on_nan not in ("stop", "rollback"):
    raise UserError(f"unknown on_nan {config.on_nan!r}: use stop or rollback")
  PipelineConfig(seq_length=config.seq_length,
                 max_predictions_per_seq=config.max_predictions_per_seq,
                 **config.pipeline_options()).check()
  corpus.check_documents(corpus.list_files(config.input_files, config.data_dir),
                        config.input_format, needed=2 if config.nsp else 1)
  evaluation.check_held_out(config)
  _check_model_dir(config.model_dir)
  if not tf.io.gfile.exists(config.vocab_file):
    log.info("Vocabulary %s does not exist: building it from the corpus", config.vocab_file)
    build_vocabulary(config.input_files, config.vocab_file, vocab_size=config.vocab_size,
                     lower_case=config.do_lower_case, input_format=config.input_format,
                     data_dir=config.data_dir)
  vocabulary = Vocabulary(config.vocab_file)
  bert_config = resolve_config(config.config, len(vocabulary))
  if config.dropout is not None:
    bert_config = bert_config.replace(hidden_dropout_prob=config.dropout,
                                      attention_probs_dropout_prob=config.dropout)
  if config.init_checkpoint and not (
      checkpointing.is_training_directory(config.init_checkpoint)
      or is_huggingface_directory(config.init_checkpoint)
      or is_tf1_checkpoint(checkpoint_prefix(config.init_checkpoint))):
    raise UserError(f"--init_checkpoint {config.init_checkpoint} is neither a bert_tf "
                    "model_dir, an original BERT checkpoint nor a Hugging Face directory")
  if config.seq_length > bert_config.max_position_embeddings:
    raise UserError(
        f"seq_length {config.seq_length} exceeds the model's {bert_config.max_position_embeddings}"
        " position embeddings")
  return vocabulary, bert_config


def _dataset(config: TrainConfig, vocabulary, file_patterns, *, batch_size, seed, repeat,
             num_shards=1, shard_index=0, held_out=False, **positions):
  """With --eval_fraction, the held-out documents (`held_out`) or all the others."""
  split = Holdout(config.eval_fraction, held_out) if config.eval_fraction else None
  return pretraining_dataset(
      file_patterns, vocabulary, seq_length=config.seq_length,
      max_predictions_per_seq=config.max_predictions_per_seq, batch_size=batch_size,
      seed=seed, repeat=repeat, num_shards=num_shards, shard_index=shard_index,
      data_dir=config.data_dir, holdout=split, **positions, **config.pipeline_options())


def _held_out_evaluation(config: TrainConfig, vocabulary, curves):
  """The callback evaluating --eval_files or the --eval_fraction documents; None without."""
  if not (config.eval_files or config.eval_fraction):
    return None
  return evaluation.HeldOutEvaluation(
      lambda: _dataset(config, vocabulary, config.eval_files or config.input_files,
                       batch_size=config.global_batch_size, seed=config.seed, repeat=True,
                       held_out=True),
      steps=config.eval_steps, every=config.eval_every or config.checkpoint_every,
      train_steps=config.train_steps, log_dir=os.path.join(config.model_dir, "logs"),
      curves=curves)


def most_frequent_token_accuracy(dataset: tf.data.Dataset, num_batches: int) -> float:
  """MLM accuracy of always predicting the most frequent masked token: the baseline that
  training must beat."""
  counts = collections.Counter()
  for _, labels, weights in dataset.take(num_batches):
    ids = labels["mlm"].numpy()[weights["mlm"].numpy() > 0]
    counts.update(ids.tolist())
  total = sum(counts.values())
  return counts.most_common(1)[0][1] / total if total else 0.0


def train(config: TrainConfig, flags_text: str = "") -> dict:
  """Runs pre-training as configured; returns the metrics also written to metrics.json.

  `flags_text`, the command line as a flagfile, is kept as `model_dir/flags.txt`. Raises
  `checkpointing.TrainingStopped` when preempted or on a non-finite loss.
  """
  # First: a multi-worker strategy must exist before any other TensorFlow op.
  strategy = strategy_lib.create_strategy(config.strategy, config.tpu)
  config = dataclasses.replace(
      config, model_dir=strategy_lib.worker_model_dir(strategy, config.model_dir))
  lock = run_lock.RunLock.acquire(config.model_dir)  # one run per model_dir
  vocabulary, bert_config = prepare(config)
  keras.utils.set_random_seed(config.seed)
  strategy_lib.per_replica_batch_size(strategy, config.global_batch_size,
                                      config.gradient_accumulation_steps)
  checkpointing.check_steps_per_execution(config.steps_per_execution, config.checkpoint_every,
                                          config.train_steps)

  with strategy.scope(), precision.policy(config.mixed_precision):
    model = pretraining_model(bert_config)
    compile_for_pretraining(
        model, optimization.create_optimizer(
            config.optimizer, learning_rate=config.learning_rate,
            warmup_steps=config.warmup_steps,
            train_steps=config.decay_steps or config.train_steps,
            weight_decay=config.weight_decay, clip_norm=config.clip_norm),
        mlm_loss_weight=config.mlm_loss_weight, nsp_loss_weight=config.nsp_loss_weight,
        mlm_loss_reduction=config.mlm_loss_reduction,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        jit_compile=config.jit_compile, steps_per_execution=config.steps_per_execution)
    optimizer = model.optimizer  # With fp16, wrapped in a loss-scale optimizer.
    optimizer.build(model.trainable_variables)
    model.data_position = data_position_lib.DataPosition(strategy.num_replicas_in_sync)
    checkpointer = checkpointing.Checkpointer(
        os.path.join(config.model_dir, checkpointing.CHECKPOINTS), model, optimizer,
        keep=config.keep_checkpoints, data_position=model.data_position.last_consumed)
    start_step = checkpointer.restore(strategy)
    if start_step:
      log.info("Resumed from the checkpoint at step %d of %d", start_step, config.train_steps)
    elif config.init_checkpoint and checkpointing.is_training_directory(
        config.init_checkpoint):
      step = checkpointer.continue_from(config.init_checkpoint)
      log.info("Going on from %s at step %d of %d (weights, optimizer and schedule)",
               config.init_checkpoint, step, config.train_steps)
    elif config.init_checkpoint:
      log.info("Initialising from %s", config.init_checkpoint)
      if is_huggingface_directory(config.init_checkpoint):
        load_huggingface(model, bert_config, config.init_checkpoint)
      else:
        load_tf1_checkpoint(model, bert_config, config.init_checkpoint)

  # Written once the checkpoint (if any) is known to fit: what exports need, kept beside the
  # weights so that model_dir stands alone, and the command line as a flagfile.
  bert_config.to_json_file(os.path.join(config.model_dir, trained.CONFIG_FILE))
  files.write_json(os.path.join(config.model_dir, trained.TRAIN_CONFIG_FILE),
                   dataclasses.asdict(config))
  vocab_copy = os.path.join(config.model_dir, trained.VOCAB_FILE)
  if os.path.abspath(vocabulary.path) != os.path.abspath(vocab_copy):
    files.copy(vocabulary.path, vocab_copy)
  if flags_text:
    files.write_text(os.path.join(config.model_dir, "flags.txt"), flags_text)

  throughput = callbacks_lib.Throughput(config.global_batch_size, config.seq_length)
  curves = callbacks_lib.TrainingCurves(os.path.join(config.model_dir, "history.jsonl"),
                                        every=max(1, min(20, config.train_steps // 100)))
  held_out = _held_out_evaluation(config, vocabulary, curves)  # None without held-out data
  if start_step >= config.train_steps:
    log.info("Training already complete (step %d): measuring and exporting", start_step)
  elif not checkpointer.latest_step:
    checkpointer.save()  # step 0: something good to roll back to
  guard = checkpointing.CheckpointEvery(checkpointer, config.checkpoint_every,
                                        config.train_steps)
  rollbacks = 0
  while checkpointer.step < config.train_steps:
    # Each input pipeline resumes right after the last example trained on.
    train_data = strategy_lib.distribute(
        strategy,
        lambda batch_size, num_shards, shard_index: _dataset(
            config, vocabulary, config.input_files, batch_size=batch_size, seed=config.seed,
            repeat=True, num_shards=num_shards, shard_index=shard_index,
            start_position=model.data_position.start(num_shards, shard_index),
            with_positions=True),
        config.global_batch_size)
    epochs, steps_per_epoch = checkpointing.intervals(
        checkpointer.step, config.train_steps, config.checkpoint_every)
    model.fit(
        train_data, epochs=epochs, steps_per_epoch=steps_per_epoch, verbose=0,
        callbacks=[
            guard,
            throughput,
            callbacks_lib.LearningRate(),
            curves,
            keras.callbacks.TensorBoard(os.path.join(config.model_dir, "logs")),
            *([held_out] if held_out else []),
            *([progress.Progress(config.train_steps, config.global_batch_size)]
              if config.verbose else []),
        ])
    if guard.non_finite and config.on_nan == "rollback" and rollbacks < MAX_ROLLBACKS:
      rollbacks += 1
      bad_step = checkpointer.step
      with model.data_position.kept():  # go on after the offending batches
        checkpointer.restore()
      log.warning("The loss is not finite at step %d: rolled back to step %d, skipping the "
                  "batches in between (rollback %d of at most %d)", bad_step,
                  checkpointer.step, rollbacks, MAX_ROLLBACKS)
      continue
    if guard.stop_reason:
      raise checkpointing.TrainingStopped(guard.stop_reason)
  trained.save_weights(model, config.model_dir)  # the model's weights, not the optimizer's

  # Final figures on fresh batches (new pairs and masks, dropout off), so that they are the
  # same whether this run trained or found its training already complete.
  measured = _dataset(config, vocabulary, config.input_files,
                      batch_size=config.global_batch_size, seed=config.seed + 1, repeat=True)
  metrics = evaluation.evaluate(model, measured, config.eval_steps, prefix="")
  metrics.update(
      steps=int(optimizer.iterations.numpy()),
      examples_per_second=throughput.examples_per_second,
      most_frequent_token_accuracy=most_frequent_token_accuracy(measured, config.eval_steps))
  if held_out:
    metrics.update(held_out.evaluate(model))
  files.write_json(os.path.join(config.model_dir, "metrics.json"), metrics)
  report.plot_curves(os.path.join(config.model_dir, "history.jsonl"),
                     os.path.join(config.model_dir, "curves.png"),
                     metrics["most_frequent_token_accuracy"])
  files.write_text(os.path.join(config.model_dir, "summary.txt"),
                   report.summary(metrics) + "\n")

  log.info("Writing the serving SavedModel to %s", os.path.join(config.model_dir, "export"))
  export_savedmodel(model, vocabulary, os.path.join(config.model_dir, "export"),
                    seq_length=config.seq_length, lower_case=config.do_lower_case)
  lock.release()
  return metrics

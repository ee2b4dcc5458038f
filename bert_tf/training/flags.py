"""`train.py`'s command-line flags, one per `TrainConfig` field, grouped as in SPEC §10."""

import dataclasses

from absl import flags
import absl.logging  # noqa: F401  (defines --verbosity, which define_flags extends)

from bert_tf import console
from bert_tf.data.corpus import INPUT_FORMATS
from bert_tf.training import precision
from bert_tf.training.optimization import OPTIMIZERS
from bert_tf.training.strategy import STRATEGIES
from bert_tf.training.trainer import TrainConfig

_DEFAULTS = TrainConfig()


def define_flags() -> None:
  d = _DEFAULTS
  # === Data ===
  flags.DEFINE_string("input_files", d.input_files,
                      "Training corpus: globs or a comma list, local paths or any tf.io.gfile "
                      "URL. `builtin` is Python's language reference (pydoc_data.topics), "
                      "written under --data_dir when first needed.")
  flags.DEFINE_string("eval_files", d.eval_files,
                      "Held-out corpus evaluated while training and at the end (same forms "
                      "as --input_files).")
  flags.DEFINE_float("eval_fraction", d.eval_fraction,
                     "Instead of --eval_files: hold out this share of the training corpus's "
                     "documents, chosen by a hash of each document's text (never trained on, "
                     "whatever the shard or epoch), and evaluate on them.")
  flags.DEFINE_enum("input_format", d.input_format, list(INPUT_FORMATS),
                    "sentence_per_line: one sentence a line, blank lines between documents. "
                    "paragraph_per_line: each line a document, split into sentences.")
  flags.DEFINE_string("data_dir", d.data_dir, "Where the built-in corpus is written.")
  flags.DEFINE_string("vocab_file", d.vocab_file,
                      "WordPiece vocabulary, one token a line. Built from the corpus if it "
                      "does not exist.")
  flags.DEFINE_integer("vocab_size", d.vocab_size,
                       "Largest vocabulary to learn when --vocab_file is built here.")
  flags.DEFINE_bool("do_lower_case", d.do_lower_case,
                    "Lower-case and strip accents (uncased model).")
  flags.DEFINE_string("model_dir", d.model_dir,
                      "Checkpoints, TensorBoard logs, flags.txt, metrics.json and export/.")
  # === Examples ===
  flags.DEFINE_integer("seq_length", d.seq_length, "Tokens per example, [CLS] and [SEP]s "
                       "included.")
  flags.DEFINE_integer("max_predictions_per_seq", d.max_predictions_per_seq,
                       "Masked-LM prediction slots per example.")
  flags.DEFINE_float("masked_lm_prob", d.masked_lm_prob, "Share of tokens to predict.")
  flags.DEFINE_float("short_seq_prob", d.short_seq_prob,
                     "Chance of a shorter target length for an example.")
  flags.DEFINE_bool("whole_word_masking", d.whole_word_masking,
                    "Mask whole words (a word and its ## pieces) with one decision.")
  flags.DEFINE_bool("nsp", d.nsp, "Train next sentence prediction; --nonsp is MLM only.")
  # === Model and loss ===
  flags.DEFINE_string("config", d.config,
                      "Preset (bert_tiny, bert_mini, bert_small, bert_medium, bert_base, "
                      "bert_large, bert_uncased_L-4_H-256_A-4, ...) or a bert_config.json.")
  flags.DEFINE_float("dropout", d.dropout,
                     "Dropout rate of the encoder (hidden and attention), in place of the "
                     "--config's (0.1 in the presets). 0 learns faster in a short run.")
  flags.DEFINE_string("init_checkpoint", d.init_checkpoint,
                      "Start from these weights (both heads): a bert_tf model_dir (its "
                      "optimizer and step too: phase 2 after phase 1), an original BERT "
                      "checkpoint "
                      "(bert_model.ckpt prefix or its directory, with bert_config.json) or a "
                      "Hugging Face BertForPreTraining directory. Must match --config.")
  flags.DEFINE_float("mlm_loss_weight", d.mlm_loss_weight, "Weight of the MLM loss.")
  flags.DEFINE_float("nsp_loss_weight", d.nsp_loss_weight, "Weight of the NSP loss.")
  flags.DEFINE_enum("mlm_loss_reduction", d.mlm_loss_reduction, ["mean", "sum"],
                    "mean: over real masked tokens (BERT). sum: the seed's summed form.")
  # === Optimisation ===
  flags.DEFINE_enum("optimizer", d.optimizer, list(OPTIMIZERS),
                    "adamw (BERT's), or lamb for large batches (the paper's trust ratio).")
  flags.DEFINE_integer("global_batch_size", d.global_batch_size,
                       "Examples per optimizer update, across all replicas and accumulated "
                       "parts.")
  flags.DEFINE_integer("gradient_accumulation_steps", d.gradient_accumulation_steps,
                       "Parts each replica's batch is split into, their gradients summed "
                       "before one update: the same update in less memory.")
  flags.DEFINE_integer("train_steps", d.train_steps,
                       "Train until this optimizer update (counted from the first phase's "
                       "start when going on from another run with --init_checkpoint).")
  flags.DEFINE_integer("decay_steps", d.decay_steps,
                       "The update at which the learning rate reaches 0 (0: --train_steps). "
                       "Phase 1 of a two-phase run stops before it; phase 2 goes on.")
  flags.DEFINE_float("learning_rate", d.learning_rate, "Peak learning rate.")
  flags.DEFINE_integer("warmup_steps", d.warmup_steps, "Linear warm-up steps.")
  flags.DEFINE_float("weight_decay", d.weight_decay,
                     "Decoupled weight decay (not on layer norms and biases).")
  flags.DEFINE_float("clip_norm", d.clip_norm,
                     "Clip the global batch's gradient to this global norm (0: no clipping).")
  # === Execution ===
  flags.DEFINE_integer("seed", d.seed, "Seed of the data stream and the initial weights.")
  flags.DEFINE_enum("strategy", d.strategy, list(STRATEGIES), "tf.distribute strategy.")
  flags.DEFINE_string("tpu", d.tpu, "TPU name or address for --strategy=tpu.")
  flags.DEFINE_enum("mixed_precision", d.mixed_precision, list(precision.POLICIES),
                    "Compute in bf16 or fp16 (fp16 with dynamic loss scaling); weights, "
                    "logits and losses stay float32.")
  flags.DEFINE_bool("jit_compile", d.jit_compile, "Compile the train step with XLA (Keras "
                    "leaves it off under any tf.distribute strategy unless asked).")
  flags.DEFINE_integer("steps_per_execution", d.steps_per_execution,
                       "Train steps per call into the graph.")
  flags.DEFINE_integer("checkpoint_every", d.checkpoint_every,
                       "Steps between checkpoints (a re-run resumes from the last one).")
  flags.DEFINE_integer("keep_checkpoints", d.keep_checkpoints, "Checkpoints kept.")
  flags.DEFINE_enum("on_nan", d.on_nan, ["stop", "rollback"],
                    "On a non-finite loss: stop (nothing saved), or roll back to the last "
                    "checkpoint and go on after the offending batches (at most 3 times).")
  flags.DEFINE_integer("eval_steps", d.eval_steps,
                       "Batches measured for the final metrics and each held-out evaluation.")
  flags.DEFINE_integer("eval_every", d.eval_every,
                       "Steps between held-out evaluations, a multiple of --checkpoint_every "
                       "(0: every checkpoint). Only with --eval_files or --eval_fraction.")
  flags.DEFINE_integer("verbose", d.verbose, "0: no progress line. 1: one progress line for "
                       "the run, rewritten in place on a terminal, a line every few steps "
                       "otherwise.")
  # absl defines --verbosity (-v) itself, as a number; it also takes a name here.
  flags.FLAGS["verbosity"].parser = _VerbosityParser()
  flags.FLAGS["verbosity"].help = (
      "info (default): our lines only. debug (or -v 1): also TensorFlow's, absl's and "
      "Keras's own log lines and warnings. Also warning, error, or absl's numbers.")


class _VerbosityParser(flags.IntegerParser):
  """absl's verbosity, by name (debug, info, warning, error) or number."""

  def parse(self, argument):
    if isinstance(argument, str) and argument.lower() in console.VERBOSITY:
      return console.VERBOSITY[argument.lower()]
    try:
      return super().parse(argument)
    except ValueError:
      raise ValueError(f"{argument!r}: use debug, info, warning, error or absl's numbers "
                       "(1 is debug)") from None


def config_from_flags(flag_values) -> TrainConfig:
  return TrainConfig(**{field.name: flag_values[field.name].value
                        for field in dataclasses.fields(TrainConfig)})

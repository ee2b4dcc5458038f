"""The model settings: which BERT, from which weights, and how its two losses combine.

Declared once here (see `bert_tf.settings`); no TensorFlow import. The loss and its
normalisation: docs/design.md.
"""

import dataclasses

from bert_tf.errors import UserError
from bert_tf.settings import MODEL, NOTED, setting

MLM_LOSS_REDUCTIONS = ("mean", "sum")
SCRATCH_CONFIG = "bert_tiny"  # the shape of a model from scratch when --config is not given


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  """The encoder's shape and starting weights, and the loss weights."""

  config: str = setting(
      "", "The shape of a model from scratch: a preset (bert_tiny, bert_mini, bert_small, "
      "bert_medium, bert_base, bert_large, bert_uncased_L-4_H-256_A-4, ...) or a "
      "bert_config.json for any shape. Empty: the --init_checkpoint's own shape (its "
      f"bert_config.json, config.json or run record), else {SCRATCH_CONFIG}.", change=MODEL)
  dropout: float | None = setting(
      None, "Dropout rate of the encoder (hidden and attention), in place of the --config's "
      "(0.1 in the presets). 0 learns faster in a short run.", change=NOTED)
  init_checkpoint: str = setting(
      "", "Start from these weights (both heads): a bert_tf model_dir (its optimizer and step "
      "too: phase 2 after phase 1), an original BERT checkpoint (bert_model.ckpt prefix or its "
      "directory, with bert_config.json) or a Hugging Face BertForPreTraining directory; its shape "
      "is the run's. Checked whole before anything is written.", change=NOTED)
  init_weights_only: bool = setting(
      False, "From a bert_tf --init_checkpoint run, take its final weights alone: the "
      "optimizer, the step and the learning-rate schedule start afresh, with their own warm-up "
      "(continued pre-training on another corpus), as from a published checkpoint.",
      change=NOTED)
  add_vocabulary: int = setting(
      0, "Grow the --init_checkpoint's vocabulary with the N most frequent corpus words it cuts "
      "into pieces (seen at least --min_token_count times): into its [unusedK] slots first, "
      "then appended; each new embedding starts as the mean of its pieces'. The grown "
      "vocabulary is the model_dir's vocab.txt; the optimizer starts afresh.", change=MODEL)
  mlm_loss_weight: float = setting(1.0, "Weight of the MLM loss.", change=NOTED)
  nsp_loss_weight: float = setting(1.0, "Weight of the NSP loss.", change=NOTED)
  mlm_loss_reduction: str = setting(
      "mean", "mean: over real masked tokens (BERT). sum: the summed form.",
      choices=MLM_LOSS_REDUCTIONS, change=NOTED)

  def check(self) -> None:
    """Rejects a dropout rate outside [0, 1), and a way to start from weights without
    --init_checkpoint."""
    if self.dropout is not None and not 0 <= self.dropout < 1:
      raise UserError(f"dropout {self.dropout} is not in [0, 1)")
    if self.add_vocabulary < 0:
      raise UserError(f"add_vocabulary {self.add_vocabulary} is negative: give the number of "
                      "words to add")
    for name in ("add_vocabulary", "init_weights_only"):
      if getattr(self, name) and not self.init_checkpoint:
        raise UserError(f"--{name} needs --init_checkpoint: the model whose weights the run "
                        "starts from")

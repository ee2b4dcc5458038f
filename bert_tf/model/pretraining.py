"""The pre-training model: encoder + MLM head + NSP head (docs/design.md#model), compiled."""

import dataclasses

import keras
import keras_hub

from bert_tf.errors import UserError
from bert_tf.model import encoder as encoder_lib
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.loss import masked_lm_loss, next_sentence_loss
from bert_tf.model.model_settings import MLM_LOSS_REDUCTIONS
from bert_tf.model.train_step import PretrainingModel

FEATURE_NAMES = encoder_lib.INPUT_NAMES + ("masked_positions",)


@dataclasses.dataclass(frozen=True)
class PretrainingLayers:
  """The encoder's layers and the two heads, wired (`outputs`) for both layouts of a batch:
  one pair a row (the functional graph) or packed rows (`PretrainingModel.call`)."""

  encoder: encoder_lib.EncoderLayers
  mlm_head: keras.layers.Layer
  nsp_head: keras.layers.Dense

  def heads(self, encoded: dict, masked_positions) -> dict:
    return {
        "mlm": self.mlm_head(encoded["sequence_output"],
                             mask_positions=masked_positions),  # [batch, P, vocab]
        "nsp": self.nsp_head(encoded["pooled_output"]),  # [batch, (pairs), 2]; 1 = IsNext
    }

  def outputs(self, inputs: dict, training=None) -> dict:
    return self.heads(self.encoder.encode(inputs, training), inputs["masked_positions"])


def pretraining_model(config: BertConfig) -> PretrainingModel:
  """A Keras functional model (with BERT's training step, see `train_step.py`): the features
  of `pretraining_dataset` -> {"mlm": [B, P, V], "nsp": [B, 2]} logits; a batch of packed rows
  (docs/design.md#packing) -> {"mlm": [B, P, V], "nsp": [B, pairs, 2]}, from the same layers.

  The MLM head gathers the masked positions before projecting onto the vocabulary with the
  token embedding matrix (tied), so the projection costs P, not S, rows per sequence. Both
  heads compute in float32, so logits and losses stay float32 under mixed precision; the
  projection itself multiplies in the encoder's compute dtype (`encoder.TiedEmbedding`).
  """
  encoder = encoder_lib.bert_encoder(config)
  layers = PretrainingLayers(
      encoder=encoder.layers_wired,
      mlm_head=keras_hub.layers.MaskedLMHead(
          vocabulary_size=config.vocab_size,
          token_embedding=encoder.token_embedding,
          intermediate_activation=keras.activations.gelu,
          layer_norm_epsilon=config.layer_norm_epsilon,  # keras-hub's default is 1e-5
          kernel_initializer=encoder_lib.initializer(config),
          dtype="float32",
          name="mlm"),
      nsp_head=keras.layers.Dense(
          2, kernel_initializer=encoder_lib.initializer(config), dtype="float32", name="nsp"))
  inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in FEATURE_NAMES}
  encoded = encoder({name: inputs[name] for name in encoder_lib.INPUT_NAMES})
  model = PretrainingModel(inputs, layers.heads(encoded, inputs["masked_positions"]),
                           name="bert_pretraining")
  model.layers_wired = layers
  return model


def compile_for_pretraining(model: PretrainingModel, optimizer, *,
                            mlm_loss_weight: float = 1.0, nsp_loss_weight: float = 1.0,
                            mlm_loss_reduction: str = "mean",
                            gradient_accumulation_steps: int = 1, jit_compile="auto",
                            steps_per_execution: int = 1,
                            data_position=None) -> PretrainingModel:
  """Compiles with L_total = w_mlm * L_MLM + w_nsp * L_NSP (docs/design.md#loss) and 4 metrics.

  Each optimizer update takes one batch, split into `gradient_accumulation_steps` parts. The
  training step records its batches' stream positions in `data_position` (a `DataPosition`)
  when given.
  """
  if mlm_loss_reduction not in MLM_LOSS_REDUCTIONS:
    raise UserError(f"unknown MLM loss reduction {mlm_loss_reduction!r}: use one of "
                    f"{', '.join(MLM_LOSS_REDUCTIONS)}")
  model.data_position = data_position
  model.mlm_loss_reduction = mlm_loss_reduction
  model.gradient_accumulation_steps = gradient_accumulation_steps
  model.compile(
      optimizer=optimizer,
      loss={"mlm": masked_lm_loss(),
            "nsp": next_sentence_loss()},
      loss_weights={"mlm": mlm_loss_weight, "nsp": nsp_loss_weight},
      weighted_metrics={
          "mlm": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
          "nsp": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
      },
      jit_compile=jit_compile,
      steps_per_execution=steps_per_execution)
  _build_losses_metrics_and_optimizer(model)
  return model


def _build_losses_metrics_and_optimizer(model: PretrainingModel) -> None:
  """Builds what `fit` would otherwise build from a first batch (see `keras_internals.py`):
  the compiled losses and metrics, from one tiny batch of zeros, and the optimizer's slots
  (so that a checkpoint can be restored into them before the first step)."""
  x = {name: keras.ops.zeros([1, 2], "int32") for name in FEATURE_NAMES}
  y = {"mlm": keras.ops.zeros([1, 2], "int32"), "nsp": keras.ops.zeros([1], "int32")}
  weights = {"mlm": keras.ops.ones([1, 2]), "nsp": keras.ops.ones([1])}
  y_pred = model(x, training=False)
  model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=weights, training=False)
  model.compute_metrics(x, y, y_pred, sample_weight=weights)
  model.reset_metrics()
  model.optimizer.build(model.trainable_variables)

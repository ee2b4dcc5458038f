"""The classifier: a pre-trained encoder (from any of the three sources `--init_checkpoint`
reads) with BERT's classification head, dropout then one dense layer on the pooled [CLS]
output, and the Keras function that returns it compiled (`classifier`)."""

import dataclasses

import keras
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.finetune import data
from bert_tf.finetune.heads import encoder_dropout, encoder_inputs, logits_layer
from bert_tf.finetune.losses import classification_loss
from bert_tf.interop.source import Source, open_source
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from bert_tf.runtime.optimization import create_optimizer


@dataclasses.dataclass
class Pretrained:
  """An encoder with what its text needs: its shape, vocabulary and case."""

  encoder: keras.Model
  config: BertConfig
  vocabulary: Vocabulary
  lower_case: bool


def checked_source(model_dir: str, *, from_scratch: bool = False) -> Source:
  """The source of the encoder at `model_dir` (a train.py model_dir, a Hugging Face BERT
  directory or an original BERT checkpoint), checked whole without loading it: its files, its
  shape, its vocabulary (of the shape's size) and its case; its weights' files unless
  `from_scratch`. Every problem is one line."""
  source = open_source(model_dir, "--model_dir")
  if not from_scratch:
    source.check_loadable()
  _ = source.config, source.vocabulary, source.lower_case
  return source


def load_pretrained(model_dir: str, *, from_scratch: bool = False) -> Pretrained:
  """The encoder of `model_dir` (see `checked_source`) with its weights; with `from_scratch`,
  the same encoder with random weights (drawn from Keras's seed). Build under the strategy's
  scope."""
  source = checked_source(model_dir, from_scratch=from_scratch)
  config, vocabulary, lower_case = source.config, source.vocabulary, source.lower_case
  model = pretraining_model(config)  # the heads too: every kind stores them
  if not from_scratch:
    source.load_weights(model, config)
  return Pretrained(model.get_layer("bert_encoder"), config, vocabulary, lower_case)


def classifier_model(encoder: keras.Model, num_classes: int, *,
                     initializer_range: float = 0.02) -> keras.Model:
  """features -> logits [batch, num_classes]: the encoder's pooled output, dropout at the
  encoder's own rate (BERT's) and a dense layer, in float32 under mixed precision."""
  inputs = encoder_inputs()
  pooled = encoder(inputs)["pooled_output"]
  pooled = encoder_dropout(encoder)(pooled)
  logits = logits_layer(num_classes, initializer_range, "classifier")(pooled)
  return keras.Model(inputs, logits, name="bert_classifier")


def compile_task_model(model: keras.Model, loss: keras.losses.Loss, *, learning_rate: float,
                       train_steps: int, warmup_steps: int, metrics=(),
                       jit_compile=False) -> keras.Model:
  """BERT's fine-tuning recipe, for every task kind: AdamW (decay 0.01 except layer norms and
  biases, clipping at 1.0), linear warm-up then linear decay to 0 at `train_steps`. The
  optimizer is built (its moments made), so that a checkpoint can be restored into it."""
  model.compile(
      optimizer=create_optimizer("adamw", learning_rate=learning_rate,
                                 warmup_steps=warmup_steps, train_steps=train_steps),
      loss=loss, metrics=list(metrics), jit_compile=jit_compile)
  model.optimizer.build(model.trainable_variables)
  return model


def compile_classifier(model: keras.Model, *, learning_rate: float, train_steps: int,
                       warmup_steps: int, jit_compile=False) -> keras.Model:
  """The classifier compiled with BERT's recipe; cross-entropy on logits, a mean over the
  global batch (`losses.classification_loss`)."""
  return compile_task_model(
      model, classification_loss(),
      learning_rate=learning_rate, train_steps=train_steps, warmup_steps=warmup_steps,
      metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
      jit_compile=jit_compile)


def classifier(model_dir: str, num_classes: int, *, train_steps: int, seq_length: int = 128,
               learning_rate: float = 5e-5, warmup_steps: int | None = None,
               from_scratch: bool = False) -> keras.Model:
  """The compiled classifier on `model_dir`'s encoder, for `fit` on your own data.

  `train_steps` is the number of updates the learning rate decays over (examples / batch size
  * epochs); the warm-up is its first 10% unless given. `model.text_features(texts)` (or
  `(texts_a, texts_b)`) turns raw strings into its input, with the pre-training tokenizer.
  """
  pretrained = load_pretrained(model_dir, from_scratch=from_scratch)
  model = classifier_model(pretrained.encoder, num_classes,
                           initializer_range=pretrained.config.initializer_range)
  compile_classifier(model, learning_rate=learning_rate, train_steps=train_steps,
                     warmup_steps=train_steps // 10 if warmup_steps is None else warmup_steps)
  text_encoder = data.text_encoder(
      pretrained.vocabulary, lower_case=pretrained.lower_case, seq_length=seq_length)
  model.text_features = lambda *texts: text_encoder.features(
      *[tf.constant(list(t), tf.string) for t in texts])
  return model

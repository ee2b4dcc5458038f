"""What the kinds' heads share: the encoder's inputs, the dense layer that gives a head its
logits (float32 under mixed precision, as the classifier's) and the logit of what cannot be an
answer. Each kind's own head is in its folder (`kinds/<kind>/head.py`); classification's, which
regression shares, is `model.classifier_model`. Layers are named as transformers names them,
so that a Hugging Face export maps each weight one to one."""

import keras

from bert_tf.model import encoder as encoder_lib

NOT_AN_ANSWER = -10000.0  # a logit whose softmax is 0 in float32, as BERT's attention mask


def encoder_inputs(axes: int = 1) -> dict:
  """The encoder's features as Keras inputs, int32 [batch, seq], or [batch, endings, seq] for
  `axes=2`."""
  return {name: keras.Input(shape=(None,) * axes, dtype="int32", name=name)
          for name in encoder_lib.INPUT_NAMES}


def logits_layer(units: int, initializer_range: float, name: str) -> keras.layers.Dense:
  """The dense layer of a head's logits, in float32, initialised as BERT's."""
  return keras.layers.Dense(
      units, kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
      dtype="float32", name=name)


def encoder_dropout(encoder: keras.Model) -> keras.layers.Dropout:
  """Dropout at the encoder's own rate (BERT's), before a head's dense layer."""
  return keras.layers.Dropout(encoder.get_layer("embeddings_dropout").rate,
                              name="classifier_dropout")

"""tag's head and loss: dropout, then `classifier` [hidden, tags] on every token
(transformers' `BertForTokenClassification`), and the cross-entropy per labelled token, a
word's first piece (`IGNORED_LABEL` elsewhere is skipped, as transformers' -100), a mean over
the global batch."""

import keras

from bert_tf.finetune.heads import encoder_dropout, encoder_inputs, logits_layer
from bert_tf.finetune.losses import GlobalMean, cross_entropy

# The label of a token no loss is taken on (a tagged word's other pieces, [CLS], [SEP], the
# padding), as transformers' -100.
IGNORED_LABEL = -100


def tagging_model(encoder: keras.Model, num_tags: int, *,
                  initializer_range: float = 0.02) -> keras.Model:
  """features -> logits [batch, seq, num_tags]; dropout at the encoder's own rate."""
  inputs = encoder_inputs()
  sequence = encoder(inputs)["sequence_output"]  # [batch, seq, hidden]
  sequence = encoder_dropout(encoder)(sequence)
  logits = logits_layer(num_tags, initializer_range, "classifier")(sequence)
  return keras.Model(inputs, logits, name="bert_tagger")


def tagging_loss() -> keras.losses.Loss:
  """tags [batch, seq] (`IGNORED_LABEL` off a word's first piece) against logits [batch, seq,
  tags]."""
  return GlobalMean(cross_entropy, "tagging_loss", ignored=IGNORED_LABEL)

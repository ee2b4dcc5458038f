"""choose: the right one of a context's endings (SWAG's CSV as published, or JSON Lines with
any number of endings a row: `choice.py`), each (context, ending) pair through the
encoder, a score per pair from its pooled [CLS] output, cross-entropy over a context's
endings; ranked by dev accuracy. Rows with fewer endings than the task's most are padded with
absent ones, which get no probability. Served as `choose(context, endings)` -> `probabilities`
[batch, endings] (float32, 0 for an absent ending), `choice` [batch] (the most probable
ending's number) and `ending` [batch] (its text); exported as `BertForMultipleChoice`."""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.data.tokenization import Vocabulary
from bert_tf.finetune import data
from bert_tf.finetune.kinds.base import DEV_BATCH, Serving, TaskKind, predicted_classes
from bert_tf.finetune.kinds.choose import choice
from bert_tf.finetune.kinds.choose.choice import ChoiceEncoder
from bert_tf.finetune.kinds.choose.head import choice_model
from bert_tf.finetune.metrics import accuracy
from bert_tf.interop.huggingface import TaskHead
from bert_tf.serving.numpy_bert import softmax
from bert_tf.serving.verification import EXAMPLES, Results, pair_ids, text_ids

# The export check's endings for each example's first text as the context: the example's
# second text (the long one cut to fit), two others, and none (an absent ending) for the first.
ENDINGS = tuple((b or "A text of its own.", "一个句子。", "" if i == 0 else "Zürich, 1984.")
                for i, (_, b) in enumerate(EXAMPLES))


class ChooserModule(tf.Module):
  """Tokenizer + multiple-choice model, with the `choose` function."""

  def __init__(self, model: keras.Model, choice_encoder: ChoiceEncoder):
    super().__init__(name="bert_chooser_serving")
    self.model = model
    self.choice_encoder = choice_encoder

  @tf.function(autograph=False, input_signature=[
      tf.TensorSpec([None], tf.string, name="context"),
      tf.TensorSpec([None, None], tf.string, name="endings")])
  def choose(self, context: tf.Tensor, endings: tf.Tensor) -> dict:
    checks = [tf.debugging.assert_positive(tf.size(context), message="context: the batch is "
                                           "empty"),
              tf.debugging.assert_equal(tf.shape(endings)[0], tf.size(context), message=(
                  "endings and context hold different numbers of examples")),
              tf.debugging.assert_positive(tf.shape(endings)[1], message="endings: none")]
    with tf.control_dependencies(checks):
      logits = self.model(self.choice_encoder.features(context, endings), training=False)
    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32))
    chosen = tf.argmax(probabilities, axis=-1)
    return {"probabilities": probabilities, "choice": chosen,
            "ending": tf.gather(endings, chosen, batch_dims=1)}


def choice_encoder(vocabulary: Vocabulary, *, lower_case: bool, seq_length: int,
                   pad_to_longest: bool = False) -> ChoiceEncoder:
  """The `ChoiceEncoder` of a vocabulary, case and sequence length: the classifier's pairs
  (padded to the batch's longest pair for serving: `TextEncoder`)."""
  return ChoiceEncoder(data.text_encoder(vocabulary, lower_case=lower_case,
                                         seq_length=seq_length, pad_to_longest=pad_to_longest))


class ChooseReference:
  """Each example's first text as a context, `ENDINGS` as its endings, each pair as the
  pre-training tokenizer's ids cut as in training; the endings' probabilities by the Keras
  model on all of a context's pairs at once, padded to the sequence (an absent ending all 0),
  and the export's choice by the probability the reference gives it."""

  def __init__(self, model: keras.Model, task, vocabulary: Vocabulary):
    tokenizer = vocabulary.tokenizer(task.lower_case)
    contexts = [a for a, _ in EXAMPLES]
    self.inputs = {"context": contexts, "endings": [list(row) for row in ENDINGS]}
    self.probabilities = []
    for context, endings in zip(contexts, ENDINGS):
      features = {name: np.zeros([1, len(endings), task.seq_length], np.int32)
                  for name in ("token_ids", "segment_ids", "padding_mask")}
      for i, ending in enumerate(endings):
        if ending:
          ids, segments = pair_ids(vocabulary, text_ids(tokenizer, context),
                                   text_ids(tokenizer, ending), task.seq_length)
          features["token_ids"][0, i, :len(ids)] = ids
          features["segment_ids"][0, i, :len(ids)] = segments
          features["padding_mask"][0, i, :len(ids)] = 1
      logits = keras.ops.convert_to_numpy(model(features, training=False))
      self.probabilities.append(softmax(logits.astype(np.float64))[0])
    self.probabilities = np.array(self.probabilities)

  def compared(self, outputs: dict, name: str) -> tuple[Results, Results]:
    return ({"probabilities": self.probabilities, "choice": self.probabilities.max(axis=-1)},
            {"probabilities": np.array(outputs["probabilities"]),
             "choice": np.array([row[chosen] for row, chosen in zip(self.probabilities,
                                                                     outputs["choice"])])})


class Choose(TaskKind):
  """The right one of a context's endings (see the module's docstring)."""

  name = "choose"
  ranking = ("dev_accuracy",)
  probe_figure = "accuracy"
  signature = "choose"
  reference = ChooseReference
  labelled = False
  pair = True  # a context and each ending
  # LiteRT and ONNX: ids [batch, endings, seq_length] in (an absent ending all padding), the
  # endings' logits (-10000 for an absent one) and their softmax out.
  portable_input_shape = ("batch", "endings", "seq_length")
  portable_shapes = {"logits": ["batch", "endings"], "probabilities": ["batch", "endings"]}

  def read(self) -> None:
    self.train = choice.read_choices(self.train_file, "--train_file")
    self.dev = choice.read_choices(self.dev_file, "--dev_file")
    self.num_endings = max(self.train.most_endings, self.dev.most_endings)

  def encode(self, pretrained) -> None:
    self.choice_encoder = choice_encoder(pretrained.vocabulary, lower_case=pretrained.lower_case,
                                         seq_length=self.config.seq_length)
    self.dev_batches = self._dataset(self.dev, batch_size=DEV_BATCH)

  def _dataset(self, choices: choice.Choices, **options) -> tf.data.Dataset:
    return choice.dataset(choices, self.num_endings, self.choice_encoder, **options)

  def train_batches(self, batch_size: int, order: np.ndarray) -> tf.data.Dataset:
    return self._dataset(self.train, batch_size=batch_size, order=order)

  @staticmethod
  def head(encoder: keras.Model, num_labels: int, initializer_range: float) -> keras.Model:
    return choice_model(encoder, initializer_range=initializer_range)

  def evaluate(self, model: keras.Model) -> tuple[dict, None]:
    labels, predictions = predicted_classes(model, self.dev_batches)
    return {"dev_accuracy": accuracy(labels, predictions)}, None

  def noted(self) -> dict:
    return {"endings": self.num_endings}

  @classmethod
  def serving(cls, model: keras.Model, task, vocabulary) -> Serving:
    module = ChooserModule(model, choice_encoder(vocabulary, lower_case=task.lower_case,
                                                 seq_length=task.seq_length, pad_to_longest=True))
    return Serving(module, module.choose, {})

  @classmethod
  def huggingface_head(cls, task) -> TaskHead:
    return TaskHead("BertForMultipleChoice", "classifier", pooler=True, config={})

  @staticmethod
  def one_example(inputs: dict) -> dict:
    """A pair as a context with one ending: [1, 1, seq]."""
    return {name: value[:, None] for name, value in inputs.items()}

  @classmethod
  def for_keras(cls, model: keras.Model, vocabulary, *, lower_case: bool,
                seq_length: int) -> None:
    """`model.choice_features(contexts, endings)` (endings a list per context): raw strings
    as the input [contexts, endings, seq]."""
    encoder = choice_encoder(vocabulary, lower_case=lower_case, seq_length=seq_length)
    model.choice_features = lambda contexts, endings: encoder.features(
        tf.constant(list(contexts), tf.string), tf.constant(choice.padded(endings)))

  @classmethod
  def to_predict(cls, config) -> tuple[list[str], tuple]:
    test = choice.read_choices(config.predict_file, "--predict_file", labelled=False)
    return [str(i) for i in range(len(test))], (test.contexts, test.endings)

  @classmethod
  def signature_inputs(cls, task, columns: tuple) -> dict:
    contexts, endings = columns
    return {"context": tf.constant(contexts), "endings": tf.constant(choice.padded(endings))}

  @staticmethod
  def predictions(outputs: dict) -> list:
    return [int(chosen) for chosen in outputs["choice"].numpy()]


KIND = Choose

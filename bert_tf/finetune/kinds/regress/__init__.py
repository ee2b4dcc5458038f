"""regress: a number per text or pair of texts (TSV, the label column; STS-B), BERT's
classification head with one output, mean squared error; ranked by dev Pearson, then Spearman
(a GLUE task's score first). Served as `score(text)` or `score(text_a, text_b)` -> `score`
[batch] float32; exported as `BertForSequenceClassification` with `num_labels=1`,
`problem_type="regression"`."""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.finetune import data
from bert_tf.finetune.data import TextEncoder
from bert_tf.finetune.kinds.base import DEV_BATCH, Serving
from bert_tf.finetune.kinds.regress import regression
from bert_tf.finetune.kinds.regress.head import regression_loss, regression_model
from bert_tf.finetune.kinds.signatures import checked_batch
from bert_tf.finetune.kinds.texts import TextReference, TextTask, text_signature
from bert_tf.finetune.metrics import pearson, spearman
from bert_tf.interop.huggingface import TaskHead
from bert_tf.serving.verification import Results


class RegressorModule(tf.Module):
  """Tokenizer + regression model, with the `score` outputs."""

  def __init__(self, model: keras.Model, text_encoder: TextEncoder):
    super().__init__(name="bert_regressor_serving")
    self.model = model
    self.text_encoder = text_encoder

  def outputs(self, **texts) -> dict:
    features = self.text_encoder.features(*checked_batch(**texts))
    return {"score": tf.cast(self.model(features, training=False), tf.float32)[:, 0]}


class RegressReference(TextReference):
  """The score."""

  def compared(self, outputs: dict, name: str) -> tuple[Results, Results]:
    return {"score": self.outputs[:, 0]}, {"score": np.array(outputs["score"])}


class Regress(TextTask):
  """A number per text or pair (see the module's docstring)."""

  name = "regress"
  ranking = ("dev_pearson", "dev_spearman")
  probe_figure = "pearson"
  signature = "score"
  reference = RegressReference
  labelled = False
  portable_shapes = {"score": ["batch"]}

  def read(self) -> None:
    super().read()
    self.train_targets, self.dev_targets = map(regression.targets, (self.train, self.dev))

  def encode(self, pretrained) -> None:
    self.encode_texts(pretrained)
    self.dev_batches = data.text_dataset(self.dev, self.dev_targets, self.text_encoder,
                                         batch_size=DEV_BATCH)

  def train_batches(self, batch_size: int, order: np.ndarray) -> tf.data.Dataset:
    return data.text_dataset(self.train, self.train_targets, self.text_encoder,
                             batch_size=batch_size, order=order)

  @staticmethod
  def head(encoder: keras.Model, num_labels: int, initializer_range: float) -> keras.Model:
    return regression_model(encoder, initializer_range=initializer_range)

  @staticmethod
  def loss() -> keras.losses.Loss:
    return regression_loss()

  def evaluate(self, model: keras.Model) -> tuple[dict, None]:
    scores = np.concatenate([model(features, training=False).numpy()[:, 0]
                             for features, _ in self.dev_batches])
    return {"dev_pearson": pearson(self.dev_targets, scores),
            "dev_spearman": spearman(self.dev_targets, scores),
            "dev_mse": float(np.mean((scores - self.dev_targets) ** 2)),
            **self.glue_figures({"": scores})}, None

  @classmethod
  def summary(cls, figures: dict) -> str:
    return (f"dev Pearson {figures['dev_pearson']:.4f}, Spearman "
            f"{figures['dev_spearman']:.4f}, mean squared error {figures['dev_mse']:.4f}"
            + cls.glue_summary(figures))

  @classmethod
  def serving(cls, model: keras.Model, task, vocabulary) -> Serving:
    module = RegressorModule(model, data.text_encoder(
        vocabulary, lower_case=task.lower_case, seq_length=task.seq_length, pad_to_longest=True))
    return Serving(module, text_signature(module.outputs, task.pair), {})

  @staticmethod
  def predictions(outputs: dict) -> list:
    return [float(v) for v in np.reshape(outputs["score"].numpy(), [-1])]

  @classmethod
  def huggingface_head(cls, task) -> TaskHead:
    return TaskHead("BertForSequenceClassification", "classifier", pooler=True, config={
        "num_labels": 1, "problem_type": "regression", "id2label": {"0": "LABEL_0"},
        "label2id": {"LABEL_0": 0}})

  @staticmethod
  def portable_outputs(logits: tf.Tensor) -> dict:
    return {"score": tf.cast(logits, tf.float32)[:, 0]}

  @staticmethod
  def portable_logits(outputs: dict) -> np.ndarray:
    return outputs["score"][:, None]


KIND = Regress

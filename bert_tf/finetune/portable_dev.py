"""The dev figure of a LiteRT or ONNX export beside the Keras model's, on a classifier's or a
regressor's dev file: what quantizing its weights cost (`python -m bert_tf.export --dev_file`).
The converted model runs in its runtime, on the pre-training tokenizer's ids, so the figures
differ by the model alone."""

import numpy as np

from bert_tf.data import builtin_tasks
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.export.portable import INPUTS, PortableModel
from bert_tf.finetune import data, metrics

BATCH = 32
# The figure of each kind: (its name, from (labels, the model's outputs)).
FIGURES = {
    "classify": ("dev_accuracy", lambda labels, out: metrics.accuracy(
        labels, np.argmax(out["logits"], axis=-1))),
    "regress": ("dev_pearson", lambda labels, out: metrics.pearson(labels, out["score"])),
}


class PortableDev:
  """The dev file's examples as ids, and their labels as the model's targets."""

  def __init__(self, portable: PortableModel, dev_file: str, *, data_dir: str,
               text_columns: str, label_column: str, header: bool):
    if portable.kind not in FIGURES:
      raise UserError(f"--dev_file: dev figures are computed for a classify or regress "
                      f"fine-tune, not for {portable.kind!r}")
    self.kind = portable.kind
    path = builtin_tasks.resolve(dev_file, data_dir, "dev", portable.kind)
    columns = builtin_tasks.columns(dev_file)
    self.examples = (data.read_examples(path, *columns) if columns else data.read_examples(
        path, data.column_names(text_columns), label_column, header=header))
    if (len(self.examples.texts) == 2) != portable.task["pair"]:
      raise UserError(f"--dev_file {dev_file}: the fine-tune takes "
                      f"{'pairs of texts' if portable.task['pair'] else 'one text'}, the file "
                      f"gives {len(self.examples.texts)} text columns")
    if self.kind == "classify":
      unknown = sorted(set(self.examples.labels) - set(portable.task["labels"]))
      if unknown:
        raise UserError(f"--dev_file {dev_file} has labels the fine-tune has not: "
                        f"{', '.join(map(repr, unknown[:5]))}")
      self.labels = np.array([portable.task["labels"].index(x) for x in self.examples.labels])
    else:
      self.labels = np.array([float(x) for x in self.examples.labels])
    encoder = data.text_encoder(Vocabulary(portable.vocab_file),
                                lower_case=portable.lower_case, seq_length=portable.seq_length)
    features = encoder.features(*[np.array(column) for column in self.examples.texts])
    self.inputs = {name: features[ours].numpy() for name, ours in zip(
        INPUTS, ("token_ids", "segment_ids", "padding_mask"))}

  @property
  def texts(self) -> list[str]:
    return list(self.examples.texts[0])

  def figure(self, run) -> float:
    """The figure of the outputs that `run(inputs)` gives, batch by batch."""
    batches = [run({k: v[i:i + BATCH] for k, v in self.inputs.items()})
               for i in range(0, len(self.labels), BATCH)]
    outputs = {name: np.concatenate([batch[name] for batch in batches]) for name in batches[0]}
    return FIGURES[self.kind][1](self.labels, outputs)

  def line(self, portable: PortableModel, runtime_run, export_name: str) -> str:
    """The dev figure of the export (`runtime_run`) beside the Keras model's, in a line."""
    keras_figure = self.figure(lambda inputs: {k: np.asarray(v) for k, v in portable.outputs(
        *(inputs[name] for name in INPUTS)).items()})
    figure = self.figure(runtime_run)
    return (f"dev: {export_name} {FIGURES[self.kind][0]} {figure:.4f}, the Keras model's "
            f"{keras_figure:.4f} ({len(self.labels)} examples)")

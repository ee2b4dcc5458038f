"""`keras_hub`: a keras-hub preset (`BertBackbone` + `BertTokenizer`) of a pre-trained model
(`interop/keras_hub_preset.py`), checked by loading it with keras-hub
(`serving/verification.py`). It has no task heads: it serves no fine-tuned model."""

from bert_tf.export.formats.format import PRETRAINED, ExportFormat
from bert_tf.serving.tolerances import KERAS_HUB_TOLERANCE


class KerasHubFormat(ExportFormat):
  def write(self, trained, output: str, top_k: int) -> str:
    from bert_tf.interop.keras_hub_preset import export_keras_hub

    return export_keras_hub(trained.model, trained.config, trained.vocabulary, output,
                            lower_case=trained.lower_case, seq_length=trained.seq_length)

  def verify(self, trained, output: str) -> str:
    from bert_tf.serving import verification

    reference = verification.KerasReference(trained.model, trained.vocabulary,
                                            trained.lower_case, trained.seq_length)
    return verification.verify(self.name, reference.results,
                               lambda: verification.keras_hub_results(output, reference),
                               self.tolerance)


FORMAT = KerasHubFormat("keras_hub", "a keras-hub preset", serves=(PRETRAINED,),
                        tolerance=KERAS_HUB_TOLERANCE)

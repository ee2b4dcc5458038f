"""`savedmodel`: a SavedModel that takes raw text, tokenized inside its graph as in training:
the pre-trained model's signatures (`serving/savedmodel.py`) or a fine-tuned model's task
signature (`finetune/export.py`); checked in a fresh process with tensorflow and
tensorflow-text only (`serving/verification.py`, `finetune/verification.py`)."""

from bert_tf.export.formats.format import ExportFormat
from bert_tf.serving.tolerances import SAVEDMODEL_TOLERANCE


class SavedModelFormat(ExportFormat):
  def write(self, trained, output: str, top_k: int) -> str:
    from bert_tf.serving.savedmodel import export_savedmodel

    return export_savedmodel(trained.model, trained.vocabulary, output,
                             seq_length=trained.seq_length, lower_case=trained.lower_case,
                             top_k=top_k)

  def verify(self, trained, output: str) -> str:
    return verify_pretrained(output, trained.model, trained.vocabulary,
                             lower_case=trained.lower_case, seq_length=trained.seq_length)

  def write_finetuned(self, finetuned, output: str) -> str:
    from bert_tf.finetune.export import export_task

    return export_task(finetuned.model, finetuned.task, finetuned.vocabulary, output)

  def verify_finetuned(self, finetuned, output: str) -> str:
    from bert_tf.finetune.verification import verify_task_export

    return verify_task_export(output, finetuned.model, finetuned.task, finetuned.vocabulary)


FORMAT = SavedModelFormat("savedmodel", "serving, raw text in", tolerance=SAVEDMODEL_TOLERANCE)


def verify_pretrained(directory: str, model, vocabulary, *, lower_case: bool,
                      seq_length: int) -> str:
  """Checks the pre-trained `model`'s SavedModel in `directory` (what a run writes when it
  ends, too); returns the line saying so."""
  from bert_tf.serving import verification

  reference = verification.KerasReference(model, vocabulary, lower_case, seq_length)
  return verification.verify(FORMAT.name, reference.results,
                             lambda: verification.saved_model_results(directory),
                             FORMAT.tolerance)

"""`hf`: a Hugging Face directory (config.json, safetensors weights, vocab.txt and the
tokenizer's files): `BertForPreTraining` of a pre-trained model, the transformers class of a
fine-tuned model's kind (`interop/huggingface.py`); checked with transformers, or without it
by a numpy forward pass of its weights (`serving/verification.py`,
`finetune/huggingface_verification.py`)."""

from bert_tf.export.formats.format import ExportFormat
from bert_tf.serving.tolerances import HUGGINGFACE_TOLERANCE


class HuggingFaceFormat(ExportFormat):
  def write(self, trained, output: str, top_k: int) -> str:
    from bert_tf.interop.huggingface import export_huggingface

    return export_huggingface(trained.model, trained.config, trained.vocabulary, output,
                              lower_case=trained.lower_case)

  def verify(self, trained, output: str) -> str:
    from bert_tf.serving import verification

    reference = verification.KerasReference(trained.model, trained.vocabulary,
                                            trained.lower_case, trained.seq_length)
    return verification.verify(self.name, reference.results,
                               lambda: verification.huggingface_results(output, reference),
                               self.tolerance)

  def write_finetuned(self, finetuned, output: str) -> str:
    from bert_tf.finetune.kinds.registry import kind_named
    from bert_tf.interop.huggingface import export_huggingface

    task = finetuned.task
    return export_huggingface(finetuned.model, finetuned.config, finetuned.vocabulary, output,
                              lower_case=task.lower_case,
                              head=kind_named(task.task).huggingface_head(task))

  def verify_finetuned(self, finetuned, output: str) -> str:
    from bert_tf.finetune.huggingface_verification import verify_task_huggingface

    return verify_task_huggingface(output, finetuned.model, finetuned.task,
                                   finetuned.vocabulary)


FORMAT = HuggingFaceFormat(
    "hf", "Hugging Face BertForPreTraining, or a fine-tuned model's task class",
    tolerance=HUGGINGFACE_TOLERANCE)

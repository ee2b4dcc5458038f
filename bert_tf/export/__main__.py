"""Exports a trained model: `python -m bert_tf.export --model_dir=... --format=... --output=...`.

Formats: `savedmodel` (serving, raw text in), `hf` (Hugging Face `BertForPreTraining`
directory), `keras_hub` (a `BertBackbone` + `BertTokenizer` preset). `--model_dir` may also be
a fine-tune's output_dir (it has task.json): `savedmodel` then serves its task, and `hf` is the
transformers class of its task. Before `wrote`, the export is loaded as its user will load it
and checked against the Keras model (`verification.py`; of a fine-tuned model,
`finetune/verification.py` and `finetune/huggingface_verification.py`), unless --skip_verify.
"""

import logging
import sys

from bert_tf import console

console.start(sys.argv)  # before TensorFlow is imported: its start-up lines, unless debug
from bert_tf.export.export_settings import ExportConfig  # noqa: E402  (no TensorFlow import)

log = logging.getLogger("bert_tf")


def export(config: ExportConfig) -> None:
  config.check()
  from bert_tf.export.trained import export, load_trained, verify
  from bert_tf.finetune import finetuned
  log.info("Exporting %s as %s to %s", config.model_dir, config.format, config.output)
  if finetuned.is_finetuned(config.model_dir):
    model = finetuned.load_finetuned(config.model_dir)
    finetuned.export_finetuned(model, config.format, config.output)
    if not config.skip_verify:
      print(finetuned.verify_finetuned(model, config.format, config.output))
  else:
    trained = load_trained(config.model_dir)
    export(trained, config.format, config.output, top_k=config.top_k)
    if not config.skip_verify:
      print(verify(trained, config.format, config.output))
  print(f"wrote {config.output}")


if __name__ == "__main__":
  console.run_command(ExportConfig, export)

"""Exports a trained model: `python -m bert_tf.export --model_dir=... --format=... --output=...`.

Formats: `savedmodel` (serving, raw text in), `hf` (Hugging Face `BertForPreTraining`
directory), `keras_hub` (a `BertBackbone` + `BertTokenizer` preset).
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
  trained = load_trained(config.model_dir)
  log.info("Exporting %s as %s to %s", config.model_dir, config.format, config.output)
  export(trained, config.format, config.output, top_k=config.top_k)
  if not config.skip_verify:
    print(verify(trained, config.format, config.output))
  print(f"wrote {config.output}")


if __name__ == "__main__":
  console.run_command(ExportConfig, export)

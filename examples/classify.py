"""Classifies texts with a `classify` fine-tune's LiteRT or ONNX export, as its SavedModel's
`classify` signature does: each text (or pair) as training fed it, `[CLS] text [SEP]` or
`[CLS] text_a [SEP] text_b [SEP]`, the longer text cut first to the sequence length.

  python examples/classify.py EXPORT_DIR "a text" "another text"
  python examples/classify.py EXPORT_DIR "a premise ||| its hypothesis"   (a fine-tune of pairs)

prints a JSON object per input: `probabilities`, the classes' (in the order of portable.json's
`labels`), and `label`, the most probable class. Runs with numpy, tokenizers and the export's
runtime alone (examples/portable_model.py)."""

import numpy as np
from portable_model import PortableModel, main, text_rows

USAGE = ('python examples/classify.py EXPORT_DIR "TEXT" ... (a fine-tune of pairs: '
         '"TEXT_A ||| TEXT_B" ...)')


def classify(model: PortableModel, inputs: list[str]) -> list[dict]:
  probabilities = model.run(model.inputs(text_rows(model, inputs)))["probabilities"]
  classes = model.description["labels"]
  return [{"probabilities": [float(p) for p in row], "label": classes[int(np.argmax(row))]}
          for row in probabilities]


if __name__ == "__main__":
  main("classify", USAGE, classify)

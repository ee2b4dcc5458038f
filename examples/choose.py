"""Chooses the ending of a context with a `choose` fine-tune's LiteRT or ONNX export, as its
SavedModel's `choose` signature does: each ending paired with its context as in training,
`[CLS] context [SEP] ending [SEP]` cut to the sequence length (the longer text first), the
endings' logits softmaxed. An empty ending is none: probability 0, never chosen. (SWAG: put
`sent2` before each ending, as training does.)

  python examples/choose.py EXPORT_DIR "a context ||| an ending ||| another ending" ...

prints a JSON object per input: `probabilities` (one per ending, in the order given), `choice`
(the most probable ending's number, from 0) and `ending` (its text). Runs with numpy,
tokenizers and the export's runtime alone (examples/portable_model.py)."""

import numpy as np
from portable_model import ExampleError, PortableModel, main, parts

USAGE = 'python examples/choose.py EXPORT_DIR "CONTEXT ||| ENDING ||| ENDING ..." ...'


def choose(model: PortableModel, inputs: list[str]) -> list[dict]:
  examples = [parts(text, given, 2, None, "'CONTEXT ||| ENDING ||| ENDING ...'")
              for given, text in enumerate(inputs, 1)]
  for given, (_, *endings) in enumerate(examples, 1):
    if not any(endings):
      raise ExampleError(f"input {given} has no ending: write it as "
                         f"'CONTEXT ||| ENDING ||| ENDING ...'")
  chosen = []
  for context, *endings in examples:  # a batch of one context: its number of endings
    context_ids = model.ids(context)
    rows = [model.pair(context_ids, model.ids(ending)) if ending else ([], [])
            for ending in endings]
    inputs = {name: value[None] for name, value in model.inputs(rows).items()}
    probabilities = model.run(inputs)["probabilities"][0]
    best = int(np.argmax(probabilities))
    chosen.append({"probabilities": [float(p) for p in probabilities], "choice": best,
                   "ending": endings[best]})
  return chosen


if __name__ == "__main__":
  main("choose", USAGE, choose)

"""Scores texts with a `regress` fine-tune's LiteRT or ONNX export, as its SavedModel's `score`
signature does: each text (or pair) as training fed it, `[CLS] text [SEP]` or
`[CLS] text_a [SEP] text_b [SEP]`, the longer text cut first to the sequence length.

  python examples/regress.py EXPORT_DIR "a text" "another text"
  python examples/regress.py EXPORT_DIR "a sentence ||| another sentence"   (a fine-tune of pairs)

prints a JSON object per input: `score`, the model's number. Runs with numpy, tokenizers and
the export's runtime alone (examples/portable_model.py)."""

from portable_model import PortableModel, main, text_rows

USAGE = ('python examples/regress.py EXPORT_DIR "TEXT" ... (a fine-tune of pairs: '
         '"TEXT_A ||| TEXT_B" ...)')


def regress(model: PortableModel, inputs: list[str]) -> list[dict]:
  scores = model.run(model.inputs(text_rows(model, inputs)))["score"]
  return [{"score": float(score)} for score in scores]


if __name__ == "__main__":
  main("regress", USAGE, regress)

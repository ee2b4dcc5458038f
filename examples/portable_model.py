"""A LiteRT or ONNX export of bert_tf (`python -m bert_tf.export --format=litert|onnx`) loaded
with its runtime and its tokenizer alone: no TensorFlow, no bert_tf. Needs numpy, tokenizers
and onnxruntime or ai-edge-litert (whichever the export's format is)."""

import json
import os

import numpy as np
from tokenizers import Tokenizer


class PortableModel:
  """The export in `directory`: `description` (its portable.json), `tokenizer` (its
  tokenizer.json, with padding and truncation off: the examples cut and pad themselves) and
  `run(inputs)`: {input name: int32 [batch, seq_length]} -> {output name: array}."""

  def __init__(self, directory: str):
    with open(os.path.join(directory, "portable.json")) as f:
      self.description = json.load(f)
    self.seq_length = self.description["seq_length"]
    self.tokenizer = Tokenizer.from_file(os.path.join(directory, self.description["tokenizer"]))
    self.tokenizer.no_padding()
    self.tokenizer.no_truncation()
    self.cls_id, self.sep_id, self.pad_id = (
        self.tokenizer.token_to_id(token) for token in ("[CLS]", "[SEP]", "[PAD]"))
    model_file = os.path.join(directory, self.description["model_file"])
    if self.description["format"] == "onnx":
      import onnxruntime
      session = onnxruntime.InferenceSession(model_file, providers=["CPUExecutionProvider"])
      names = [output.name for output in session.get_outputs()]
      self.run = lambda inputs: dict(zip(names, session.run(names, inputs)))
    else:
      from ai_edge_litert.interpreter import Interpreter
      runner = Interpreter(model_path=model_file).get_signature_runner()
      self.run = lambda inputs: runner(**inputs)

  def inputs(self, rows: list[tuple[list[int], list[int]]]) -> dict:
    """The model's inputs of rows of (token ids, token type ids), each padded to the
    sequence length."""
    batch = {name: np.zeros([len(rows), self.seq_length], np.int32)
             for name in ("input_ids", "token_type_ids", "attention_mask")}
    batch["input_ids"][:] = self.pad_id
    for row, (ids, types) in enumerate(rows):
      batch["input_ids"][row, :len(ids)] = ids
      batch["token_type_ids"][row, :len(ids)] = types
      batch["attention_mask"][row, :len(ids)] = 1
    return batch

"""What the examples share: a LiteRT or ONNX export of bert_tf (`python -m bert_tf.export
--format=litert|onnx`) loaded with its runtime and its tokenizer alone (no TensorFlow, no
bert_tf; numpy, tokenizers and onnxruntime or ai-edge-litert, whichever the export's format
is), and the command line every example has:

  python examples/KIND.py EXPORT_DIR INPUT [INPUT ...]

one JSON line per INPUT on standard output, with the keys and meaning of the outputs of the
SavedModel's signature of that kind (docs/serving.md#fine-tuned-exports). An input of several
texts (a pair, a question and its context, a context and its endings) separates them with
`|||`, as original BERT's extract_features.py reads its input; the spaces around it are not
part of the texts. A mistake (no export, another kind's export, a malformed input) is a usage
line or one `error:` line on standard error, exit status 2, and nothing printed before it."""

import json
import os
import sys
from collections.abc import Callable

import numpy as np
from tokenizers import Tokenizer

SEPARATOR = "|||"
INPUTS = ("input_ids", "token_type_ids", "attention_mask")
RUNTIMES = {"onnx": "onnxruntime", "litert": "ai-edge-litert"}


class ExampleError(Exception):
  """What stops an example, said as one `error:` line: a mistake in its arguments, an export
  that does not load or run."""


class PortableModel:
  """The `kind` export in `directory`: `description` (its portable.json), `seq_length` (where
  its inputs are cut), `tokenizer` (its tokenizer.json, with padding and truncation off: the
  examples cut and pad themselves), `length` (the sequence dimension of its inputs, or None
  when the model takes any length: it is read from the model, so a batch is padded to that
  length or only to its longest row) and `run(inputs)`: {input name: int32 array} ->
  {output name: array}."""

  def __init__(self, directory: str, kind: str):
    described = os.path.join(directory, "portable.json")
    if not os.path.isdir(directory):
      raise ExampleError(f"{directory} is not a directory: give the directory that "
                         f"python -m bert_tf.export --format=onnx|litert --output=DIR wrote")
    if not os.path.isfile(described):
      raise ExampleError(f"{directory} is not a LiteRT or ONNX export (it has no portable.json):"
                         f" make one with python -m bert_tf.export --format=onnx|litert")
    try:
      with open(described) as f:
        self.description = json.load(f)
      found, export_format = self.description["kind"], self.description["format"]
      model_file = os.path.join(directory, self.description["model_file"])
      tokenizer_file = os.path.join(directory, self.description["tokenizer"])
      self.seq_length = int(self.description["seq_length"])
    except (ValueError, KeyError, TypeError) as error:
      raise ExampleError(f"{described} is not the description an export writes ({error!r})") \
          from None
    if found != kind:
      what = "a pre-training run's encoder" if found == "encoder" else f"a {found} fine-tune's"
      advice = "" if found == "encoder" else f" (use examples/{found}.py)"
      raise ExampleError(f"{directory} is {what} export; examples/{kind}.py takes a {kind} "
                         f"fine-tune's{advice}")
    try:
      self.tokenizer = Tokenizer.from_file(tokenizer_file)
    except Exception as error:  # noqa: BLE001  the library's own errors, said in one line
      raise ExampleError(f"{tokenizer_file} cannot be read: {_first_line(error)}") from None
    self.tokenizer.no_padding()
    self.tokenizer.no_truncation()
    self.cls_id, self.sep_id, self.pad_id = (
        self.tokenizer.token_to_id(token) for token in ("[CLS]", "[SEP]", "[PAD]"))
    self.length, self._run = _runtime(export_format, model_file)

  def run(self, inputs: dict) -> dict:
    """The model's outputs on `inputs`; a runtime's failure is one line."""
    try:
      return self._run(inputs)
    except Exception as error:  # noqa: BLE001  the runtime's own errors, said in one line
      raise ExampleError(f"running the model failed: {_first_line(error)}") from None

  def inputs(self, rows: list[tuple[list[int], list[int]]]) -> dict:
    """The model's inputs of rows of (token ids, token type ids), each padded to the model's
    sequence length, or to the longest row when it takes any."""
    length = self.length or max(len(ids) for ids, _ in rows)
    batch = {name: np.zeros([len(rows), length], np.int32) for name in INPUTS}
    batch["input_ids"][:] = self.pad_id
    for row, (ids, types) in enumerate(rows):
      batch["input_ids"][row, :len(ids)] = ids
      batch["token_type_ids"][row, :len(ids)] = types
      batch["attention_mask"][row, :len(ids)] = 1
    return batch

  def ids(self, text: str) -> list[int]:
    """The text's WordPiece ids, without [CLS] and [SEP]."""
    return self.tokenizer.encode(text, add_special_tokens=False).ids

  def pair(self, ids_a: list[int], ids_b: list[int]) -> tuple[list[int], list[int]]:
    """`[CLS] a [SEP]`, or `[CLS] a [SEP] b [SEP]` when b has ids, cut to the sequence length
    as in training (original BERT's `truncate_seq_pair`: a token at a time from the longer
    text, from b on a tie); (token ids, token type ids)."""
    room = self.seq_length - (3 if ids_b else 2)
    if len(ids_a) >= len(ids_b):
      fit_b = min(len(ids_b), room // 2)
      fit_a = min(len(ids_a), room - fit_b)
    else:
      fit_a = min(len(ids_a), room - room // 2)
      fit_b = min(len(ids_b), room - fit_a)
    head = [self.cls_id, *ids_a[:fit_a], self.sep_id]
    tail = [*ids_b[:fit_b], self.sep_id] if ids_b else []
    return head + tail, [0] * len(head) + [1] * len(tail)


def _runtime(export_format: str, model_file: str) -> tuple:
  """(the sequence dimension of the model's inputs or None, its run function). bert_tf loads
  an export in its runtime in one place, each format's `runner` (bert_tf/export/formats/);
  the examples keep their own loading because they run where bert_tf is not installed."""
  package = RUNTIMES.get(export_format)
  if package is None:
    raise ExampleError(f"unknown export format {export_format!r} (litert or onnx)")
  try:
    if export_format == "onnx":
      import onnxruntime
    else:
      from ai_edge_litert.interpreter import Interpreter
  except ImportError:
    raise ExampleError(f"this {export_format} export needs {package}: pip install {package}") \
        from None
  try:
    if export_format == "onnx":
      options = onnxruntime.SessionOptions()
      options.log_severity_level = 4  # its failures are said in our one line, not its log's
      session = onnxruntime.InferenceSession(model_file, options,
                                             providers=["CPUExecutionProvider"])
      names = [output.name for output in session.get_outputs()]
      shape = {given.name: given.shape for given in session.get_inputs()}["input_ids"]
      return (shape[-1] if isinstance(shape[-1], int) else None,
              lambda inputs: dict(zip(names, session.run(names, inputs))))
    runner = Interpreter(model_path=model_file).get_signature_runner()
    shape = runner.get_input_details()["input_ids"]["shape_signature"]
    return (None if shape[-1] < 0 else int(shape[-1]), lambda inputs: runner(**inputs))
  except Exception as error:  # noqa: BLE001  the runtime's own errors, said in one line
    raise ExampleError(f"{model_file} cannot be loaded by {package}: {_first_line(error)}") \
        from None


def _first_line(error: Exception) -> str:
  return (str(error).strip().splitlines() or [type(error).__name__])[0]


def parts(text: str, given: int, least: int, most: int | None, form: str) -> list[str]:
  """The texts of the `given`th input (from 1), split at `|||`, each without the spaces around
  it: from `least` to `most` of them (None: any number), else an error showing `form`."""
  found = [part.strip() for part in text.split(SEPARATOR)]
  if len(found) < least or (most is not None and len(found) > most):
    raise ExampleError(f"input {given} has {len(found)} part{'s' * (len(found) != 1)} "
                       f"({text!r}): write it as {form}")
  return found


def main(kind: str, usage: str, answer: Callable[[PortableModel, list[str]], list[dict]]):
  """The example's command: `answer(model, inputs)` gives a dict per input, printed as a JSON
  line each; a mistake is one line, exit status 2."""
  if len(sys.argv) < 3:
    print(f"usage: {usage}", file=sys.stderr)
    raise SystemExit(2)
  try:
    answers = answer(PortableModel(sys.argv[1], kind), sys.argv[2:])
  except ExampleError as error:
    print(f"error: {error}", file=sys.stderr)
    raise SystemExit(2) from None
  for one in answers:
    print(json.dumps(one, ensure_ascii=False))


def text_rows(model: PortableModel, inputs: list[str]) -> list[tuple[list[int], list[int]]]:
  """Each input of a classify or regress model as its (token ids, token type ids): a text,
  or for a fine-tune of pairs (portable.json's `pair`) `TEXT_A ||| TEXT_B`, an empty TEXT_B
  being no pair (`[CLS] a [SEP]`, as the SavedModel's signature takes `text_b` "")."""
  pair = model.description.get("pair", False)
  form = "'TEXT_A ||| TEXT_B' (this fine-tune's examples are pairs)" if pair else (
      "one text (this fine-tune's examples are single texts)")
  texts = [parts(text, given, 1 + pair, 1 + pair, form)
           for given, text in enumerate(inputs, 1)]
  return [model.pair(model.ids(a), model.ids(b[0]) if b else []) for a, *b in texts]

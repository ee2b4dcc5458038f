"""How a LiteRT or ONNX export's outputs are held to the Keras model's: each output's largest
difference on that output's own scale, and what each head decides
(docs/serving.md#litert-and-onnx).

- **Scale.** An output's difference is its largest absolute one divided by its own scale, the
  root mean square of the Keras model's values that count over the verification examples: a
  classifier's logits, a regressor's scores, a tagger's logits at each word's first piece, the
  span head's logits where an answer may start or end (the -10000 that marks the other
  positions is kept apart: `MARK`), the endings' logits of the endings present, the encoder's
  outputs at real tokens. No floor: an output whose values are all below 1 is held to its own
  scale, so a head bias moved by a fraction of it shows, however small the output is. (Not the
  values' spread over the examples: a head on an encoder that has learned little, or a
  regressor that answers near its mean, varies by less than honest int8 weights move it.)
- **Decisions.** Each head's choices on the examples are the Keras model's: the class, each
  word's tag, the answer span (the best start + end logit over the spans the head may give, at
  most `max_answer_length` tokens), the chosen ending. A choice that differs passes only where
  the Keras model's own scores of the two are within the tolerance of each other on the same
  scale (a near-tie, which the rounding of a quantized weight may break either way); a
  regressor's score is held by the first rule.

One tolerance per quantization (`TOLERANCES`) serves both."""

import dataclasses

import numpy as np

from bert_tf.errors import UserError

# Largest difference from the Keras model, as a fraction of the output's scale, by
# quantization: float32 differs by the order of summation (about 1e-6 of the scale); float16
# weights by their rounding (up to about 5e-3 of the scale); int8 weights by their quantization
# (up to about 6e-2 on the tests' one-layer models). A weight put wrong moves its output by a
# good part of its scale, and what the head decides with it.
TOLERANCES = {"none": 1e-3, "fp16": 2e-2, "int8": 1.5e-1}

# Below this an expected output is a mark, not a figure: the heads' -10000 where an answer can
# neither start nor end, or for an absent ending. The export must keep each mark, and the marks
# count neither in an output's scale nor in its difference.
MARK = -1000.0


@dataclasses.dataclass
class Examples:
  """What the comparison knows of the verification examples: the model's `kind`, which
  outputs have a value per token (`per_token`) and where a token counts (`positions`, [examples,
  seq]: a real token; for a tagger, a word's first piece), the `labels` of a classifier's
  classes or a tagger's tags, and an answer's `max_answer_length`."""

  kind: str
  per_token: set
  positions: np.ndarray
  labels: list
  max_answer_length: int = 0


def compare(name: str, examples: Examples, expected: dict, got: dict, tolerance: float) -> str:
  """The clause of the verification line that says how `got` (the export's outputs) held to
  `expected` (the Keras model's); a one-line UserError naming the first that did not."""
  if sorted(got) != sorted(expected):
    raise UserError(f"{name} export failed verification: its outputs are "
                    f"{', '.join(sorted(got))}, the Keras model's {', '.join(sorted(expected))}")
  counted, scales, largest, where = {}, {}, 0.0, ""
  for output in sorted(expected):
    want, have = np.asarray(expected[output], np.float64), np.asarray(got[output], np.float64)
    if want.shape != have.shape:
      raise UserError(f"{name} export failed verification: its {output} has shape "
                      f"{list(have.shape)}, the Keras model's {list(want.shape)}")
    marks = want < MARK
    if np.any(marks & ~(have < MARK)):
      raise UserError(f"{name} export failed verification: its {output} lost "
                      f"{int(np.sum(marks & ~(have < MARK)))} of the -10000 marks of what cannot "
                      f"be chosen")
    counted[output] = ~marks & _positions(examples, output, want.shape)
    scales[output] = float(np.sqrt(np.mean(np.square(want[counted[output]]))))
    difference = _relative(np.max(np.abs(want - have)[counted[output]], initial=0.0),
                           scales[output])
    if difference >= largest:
      largest, where = difference, output
  if not largest <= tolerance:
    raise UserError(f"{name} export failed verification: its {where} differs from the Keras "
                    f"model's by {largest:.1e} of its scale (tolerance {tolerance:.2g})")
  decided = _decisions(name, examples, expected, got, counted, scales, tolerance)
  return (f"{decided}largest output difference {largest:.1e} of its scale ({where}; "
          f"tolerance {tolerance:.2g})")


def _relative(difference: float, scale: float) -> float:
  """`difference` as a fraction of `scale`; an output that is all 0 must not move."""
  if scale > 0:
    return float(difference / scale)
  return 0.0 if difference == 0 else float("inf")


def _positions(examples: Examples, output: str, shape: tuple) -> np.ndarray:
  """Where the values of `output` count, broadcast to its `shape`: the positions that count of
  an output per token, everywhere for the others."""
  if output not in examples.per_token:
    return np.ones(shape, bool)
  return np.broadcast_to(examples.positions.reshape(
      examples.positions.shape + (1,) * (len(shape) - 2)), shape)


def _decisions(name, examples, expected, got, counted, scales, tolerance) -> str:
  """Checks what the head decides on each example; the clause saying how many were the Keras
  model's ("" for a model that decides nothing: the encoder, a regressor)."""
  choices = _choices(examples, expected, got, counted, scales)
  if not choices:
    return ""
  same = 0
  for what, names, want, have, scale in choices:
    mine, theirs = int(np.argmax(want)), int(np.argmax(have))
    same += mine == theirs
    gap = _relative(want[mine] - want[theirs], scale)
    if gap > tolerance:
      raise UserError(f"{name} export failed verification: its {what} is {names(theirs)}, the "
                      f"Keras model's {names(mine)}, which it scores higher by {gap:.1e} of its "
                      f"scale (tolerance {tolerance:.2g})")
  kind = {"classify": "classes", "tag": "tags", "answer": "answers", "choose": "endings"}
  return f"{same} of {len(choices)} {kind[examples.kind]} the Keras model's, "


def _choices(examples, expected, got, counted, scales) -> list[tuple]:
  """Each decision of the head: (what it is, the name of a candidate by its number, the Keras
  model's and the export's scores of the candidates, the scores' scale)."""
  kind, labels = examples.kind, examples.labels
  if kind == "classify":
    return [(f"class of example {i}", labels.__getitem__, want, have, scales["logits"])
            for i, (want, have) in enumerate(zip(expected["logits"], got["logits"]))]
  if kind == "choose":
    return [(f"ending of example {i}", "ending {}".format, want[counted["logits"][i]],
             have[counted["logits"][i]], scales["logits"])
            for i, (want, have) in enumerate(zip(expected["logits"], got["logits"]))]
  if kind == "tag":
    return [(f"tag of the word at token {token} of example {i}", labels.__getitem__,
             expected["logits"][i, token], got["logits"][i, token], scales["logits"])
            for i, token in zip(*np.nonzero(examples.positions))]
  if kind == "answer":
    scale = scales["start_logits"] + scales["end_logits"]
    return [_span_choice(examples, expected, got, counted, i, scale)
            for i in range(len(expected["start_logits"]))]
  return []


def _span_choice(examples, expected, got, counted, i, scale) -> tuple:
  """The answer span of example `i`: every (start, end) the head may give, at most
  `max_answer_length` tokens of the context or [CLS] alone (no answer), scored by its start +
  end logit."""
  starts, ends = np.nonzero(counted["start_logits"][i])[0], np.nonzero(counted["end_logits"][i])[0]
  pairs = [(s, e) for s in starts for e in ends
           if s <= e < s + examples.max_answer_length and (s == 0) == (e == 0)]

  def scores(outputs):
    return np.array([outputs["start_logits"][i, s] + outputs["end_logits"][i, e]
                     for s, e in pairs], np.float64)
  return (f"answer of example {i}", lambda k: "tokens {} to {}".format(*pairs[k]),
          scores(expected), scores(got), scale)

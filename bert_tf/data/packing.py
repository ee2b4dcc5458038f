"""Packing: several pre-training pairs in one row, so that short documents stop paying for
padding (docs/design.md#packing).

Each pair keeps its own `[CLS] A [SEP] B [SEP]`, segment ids and masked positions; in the row
it gets positions starting again at 0 (`position_ids`), its number in the row (`pair_ids`: 1,
2, ...; 0 on padding, and the encoder lets a token attend only to its own pair's tokens) and
the place of its `[CLS]` (`cls_positions`, read by the NSP head). Labels and weights are per
pair (`nsp`, [rows, pairs]) and per masked token (`mlm`, [rows, predictions]), so the losses
average over pairs and masked tokens as they do over unpacked rows.

A batch is `batch_size` rows. Examples are placed in stream order, each into the row with the
least room that still holds it (best fit, the batch's rows being the window); the first
example no row can hold closes the batch and opens the next. So a batch holds a run of
consecutive examples, and the stream position of its last one resumes the stream exactly
after it, as an unpacked batch's does. A row holds at most `max_pairs` pairs and
`max_predictions_per_seq + max_pairs` masked tokens (each pair rounds its share up).

Packing is done here because no library packs BERT's pairs with NSP: tf.data's and
tensorflow-text's ops pad or trim, and keras-hub's packers join segments of one example.
"""

import dataclasses

import tensorflow as tf

TOKENS_PER_PAIR = 16  # a row of seq_length tokens holds at most seq_length // 16 pairs


def max_pairs(seq_length: int) -> int:
  """The pairs a packed row of `seq_length` tokens holds at most."""
  return max(2, seq_length // TOKENS_PER_PAIR)


@dataclasses.dataclass(frozen=True)
class RowShape:
  """A packed batch's shape: `rows` of `seq_length` tokens, `pairs` pairs and `predictions`
  masked tokens at most each."""

  rows: int
  seq_length: int
  predictions: int
  pairs: int

  @classmethod
  def of(cls, example_spec, rows: int) -> "RowShape":
    """The shape of packed batches of `rows` rows of examples of `example_spec`."""
    features = example_spec[0]
    seq_length = features["token_ids"].shape[-1]
    pairs = max_pairs(seq_length)
    return cls(rows, seq_length, features["masked_positions"].shape[-1] + pairs, pairs)


def packed(examples: tf.data.Dataset, rows: int, keyed: bool,
           finite: bool) -> tf.data.Dataset:
  """`examples` (`(features, labels, weights)`, or `(key, example)` when `keyed`) packed in
  batches of `rows` rows: `(features, labels, weights)`, or `(keys, batch)` with each row's
  key the largest of its examples'. A `finite` stream's last batch keeps only its rows that
  hold a pair; an endless one's batches all have `rows` rows. Examples that carry the facts
  of their pair (a fourth element, `Batching.with_pairs`) give each fact per pair, [rows,
  pairs] (0 on an empty slot)."""
  if not keyed:
    examples = examples.map(lambda *example: (tf.constant(-1, tf.int64), example))
  key_spec, example_spec = examples.element_spec
  shape = RowShape.of(example_spec[:3], rows)
  packer = _Packer(shape, key_spec.shape, example_spec[3] if len(example_spec) > 3 else {})
  elements = examples.map(lambda key, example: (False, key, (*example[:3], (
      example[3] if len(example) > 3 else {}))))
  if finite:  # an end marker closes the last batch
    end = tf.nest.map_structure(lambda spec: tf.zeros(spec.shape, spec.dtype),
                                elements.element_spec)
    elements = elements.concatenate(tf.data.Dataset.from_tensors((True, *end[1:])))
  batches = elements.scan(packer.empty(), packer.step).filter(lambda closed, batch: closed)
  batches = batches.map(lambda closed, batch: packer.batch(batch, trim=finite))
  return batches if keyed else batches.map(lambda keys, batch: batch)


class _Packer:
  """The steps of the packing scan: its state is the batch being filled (a dict of
  [rows, ...] tensors, `empty`), each step places one example in it (`step`)."""

  def __init__(self, shape: RowShape, key_shape: tf.TensorShape, facts_spec: dict):
    self.shape = shape
    self.key_shape = key_shape
    self.facts_spec = facts_spec  # the facts of a pair, each a scalar

  def empty(self) -> dict:
    rows, seq, predictions, pairs = (self.shape.rows, self.shape.seq_length,
                                     self.shape.predictions, self.shape.pairs)
    zeros = lambda *dims: tf.zeros([rows, *dims], tf.int32)  # noqa: E731
    return {
        "free": tf.fill([rows], seq), "pairs": zeros(), "masked": zeros(),
        "token_ids": zeros(seq), "segment_ids": zeros(seq), "position_ids": zeros(seq),
        "pair_ids": zeros(seq),
        "masked_positions": zeros(predictions), "masked_ids": zeros(predictions),
        "masked_weights": tf.zeros([rows, predictions]),
        "cls_positions": zeros(pairs), "is_next": zeros(pairs),
        "nsp_weights": tf.zeros([rows, pairs]),
        "keys": tf.fill([rows, *self.key_shape], tf.constant(-1, tf.int64)),
        "facts": {name: tf.zeros([rows, pairs], spec.dtype)
                  for name, spec in self.facts_spec.items()},
    }

  def step(self, batch: dict, element) -> tuple:
    """Places `element`'s example in `batch`, or, if no row holds it (or it is the end
    marker), closes `batch` and places it in an empty one. Emits (closed, the batch closed)."""
    is_end, key, (features, labels, weights, facts) = element
    example = _Example.of(features, labels, weights, facts)
    closes = tf.logical_or(is_end, tf.logical_not(tf.reduce_any(self._fits(batch, example))))
    fresh = self.empty()
    opened = tf.nest.map_structure(lambda new, old: tf.where(closes, new, old), fresh, batch)
    closed_with_pairs = tf.logical_and(closes, batch["pairs"][0] > 0)
    return self._placed(opened, example, key), (closed_with_pairs, batch)

  def _fits(self, batch: dict, example: "_Example") -> tf.Tensor:
    """[rows] bool: whether each row has room for `example`."""
    return ((batch["free"] >= example.length) & (batch["pairs"] < self.shape.pairs)
            & (batch["masked"] + example.masked <= self.shape.predictions))

  def _placed(self, batch: dict, example: "_Example", key: tf.Tensor) -> dict:
    """`batch` with `example` in its best-fitting row (the one with least room left)."""
    fits = self._fits(batch, example)
    row = tf.argmin(tf.where(fits, batch["free"], self.shape.seq_length + 1),
                    output_type=tf.int32)
    offset = self.shape.seq_length - batch["free"][row]
    slot, first_prediction = batch["pairs"][row], batch["masked"][row]
    tokens = tf.range(example.length)
    written = {
        "token_ids": (offset, example.token_ids),
        "segment_ids": (offset, example.segment_ids),
        "position_ids": (offset, tokens),
        "pair_ids": (offset, tf.fill([example.length], slot + 1)),
        "masked_positions": (first_prediction, example.masked_positions + offset),
        "masked_ids": (first_prediction, example.masked_ids),
        "masked_weights": (first_prediction, example.masked_weights),
        "cls_positions": (slot, offset[None]),
        "is_next": (slot, example.is_next[None]),
        "nsp_weights": (slot, example.nsp_weight[None]),
    }
    placed = {name: _written(batch[name], row, start, values)
              for name, (start, values) in written.items()}
    placed["facts"] = {name: _written(batch["facts"][name], row, slot, value[None])
                       for name, value in example.facts.items()}
    counts = {"free": -example.length, "pairs": 1, "masked": example.masked}
    placed.update({name: tf.tensor_scatter_nd_add(batch[name], [[row]], [change])
                   for name, change in counts.items()})
    placed["keys"] = tf.tensor_scatter_nd_max(batch["keys"], [[row]], key[None])
    return placed

  def batch(self, batch: dict, trim: bool) -> tuple:
    """(keys, (features, labels, weights)) of a closed batch; `trim`: its rows with pairs."""
    if trim:
      batch = tf.nest.map_structure(lambda t: tf.boolean_mask(t, batch["pairs"] > 0), batch)
    features = {
        "token_ids": batch["token_ids"],
        "segment_ids": batch["segment_ids"],
        "padding_mask": tf.cast(batch["pair_ids"] > 0, tf.int32),
        "masked_positions": batch["masked_positions"],
        "position_ids": batch["position_ids"],
        "pair_ids": batch["pair_ids"],
        "cls_positions": batch["cls_positions"],
    }
    labels = {"mlm": batch["masked_ids"], "nsp": batch["is_next"]}
    weights = {"mlm": batch["masked_weights"], "nsp": batch["nsp_weights"]}
    facts = (batch["facts"],) if self.facts_spec else ()
    return batch["keys"], (features, labels, weights, *facts)


def _written(buffer: tf.Tensor, row: tf.Tensor, start: tf.Tensor,
             values: tf.Tensor) -> tf.Tensor:
  """`buffer` [rows, width] with `values` written in row `row` from column `start` on."""
  columns = start + tf.range(tf.shape(values)[0])
  indices = tf.stack([tf.fill(tf.shape(columns), row), columns], axis=1)
  return tf.tensor_scatter_nd_update(buffer, indices, tf.cast(values, buffer.dtype))


@dataclasses.dataclass(frozen=True)
class _Example:
  """One pair's real tokens and real masked tokens, from a padded example."""

  length: tf.Tensor
  token_ids: tf.Tensor
  segment_ids: tf.Tensor
  masked: tf.Tensor
  masked_positions: tf.Tensor
  masked_ids: tf.Tensor
  masked_weights: tf.Tensor
  is_next: tf.Tensor
  nsp_weight: tf.Tensor
  facts: dict  # the facts of its pair (`Batching.with_pairs`), or none

  @classmethod
  def of(cls, features: dict, labels: dict, weights: dict, facts: dict) -> "_Example":
    as_int32 = lambda t: tf.cast(t, tf.int32)  # noqa: E731
    length = tf.reduce_sum(as_int32(features["padding_mask"]))
    real = weights["mlm"] > 0
    return cls(
        length, as_int32(features["token_ids"][:length]),
        as_int32(features["segment_ids"][:length]), tf.reduce_sum(as_int32(real)),
        as_int32(tf.boolean_mask(features["masked_positions"], real)),
        as_int32(tf.boolean_mask(labels["mlm"], real)),
        tf.cast(tf.boolean_mask(weights["mlm"], real), tf.float32),
        as_int32(labels["nsp"]), tf.cast(weights["nsp"], tf.float32), facts)

"""Original BERT's pre-training records, the TFRecords that google-research/bert's
`create_pretraining_data.py` writes and its `run_pretraining.py` reads: their features, and
the conversion to and from this pipeline's (`pipeline.py`) features, labels and weights
(docs/records.md).

Two conventions differ: their `next_sentence_labels` is 1 for a random segment B (NotNext)
and 0 for IsNext, the opposite of our `nsp` label; their `input_mask` is our `padding_mask`.
Padded prediction slots are position 0, id 0 and weight 0 in both.
"""

import dataclasses

import numpy as np
import tensorflow as tf

from bert_tf.errors import UserError

SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")  # [seq_length] int64
PREDICTION_FEATURES = ("masked_lm_positions", "masked_lm_ids")  # [max_predictions] int64
WEIGHT_FEATURE = "masked_lm_weights"  # [max_predictions] float32
LABEL_FEATURE = "next_sentence_labels"  # [1] int64: 0 IsNext, 1 NotNext
FEATURE_NAMES = SEQUENCE_FEATURES + PREDICTION_FEATURES + (WEIGHT_FEATURE, LABEL_FEATURE)


@dataclasses.dataclass(frozen=True)
class RecordShape:
  """The padded lengths of a set of records (what the original calls max_seq_length and
  max_predictions_per_seq)."""

  seq_length: int
  max_predictions_per_seq: int

  def feature_spec(self) -> dict:
    """The original's `name_to_features`, for `tf.io.parse_example`."""
    spec = {name: tf.io.FixedLenFeature([self.seq_length], tf.int64)
            for name in SEQUENCE_FEATURES}
    spec.update({name: tf.io.FixedLenFeature([self.max_predictions_per_seq], tf.int64)
                 for name in PREDICTION_FEATURES})
    spec[WEIGHT_FEATURE] = tf.io.FixedLenFeature([self.max_predictions_per_seq], tf.float32)
    spec[LABEL_FEATURE] = tf.io.FixedLenFeature([1], tf.int64)
    return spec

  def check_settings(self, seq_length: int | None, max_predictions_per_seq: int | None) -> None:
    """Rejects settings that disagree with the records (None: take the records' own)."""
    for name, asked, found in (("seq_length", seq_length, self.seq_length),
                               ("max_predictions_per_seq", max_predictions_per_seq,
                                self.max_predictions_per_seq)):
      if asked is not None and asked != found:
        raise UserError(f"--{name}={asked} disagrees with the records, whose {name} is "
                        f"{found} (leave it out, or give {found})")


def parse(serialized: tf.Tensor, shape: RecordShape):
  """string [batch] records -> `(features, labels, weights)` as `pretraining_dataset` gives
  them."""
  parsed = tf.io.parse_example(serialized, shape.feature_spec())
  as_int32 = {name: tf.cast(value, tf.int32) for name, value in parsed.items()
              if name != WEIGHT_FEATURE}
  features = {
      "token_ids": as_int32["input_ids"],  # [batch, seq]
      "segment_ids": as_int32["segment_ids"],
      "padding_mask": as_int32["input_mask"],
      "masked_positions": as_int32["masked_lm_positions"],  # [batch, predictions]
  }
  is_next = 1 - as_int32[LABEL_FEATURE][:, 0]  # [batch]
  labels = {"mlm": as_int32["masked_lm_ids"], "nsp": is_next}
  weights = {"mlm": parsed[WEIGHT_FEATURE], "nsp": tf.ones_like(is_next, tf.float32)}
  return features, labels, weights


def _int64s(values: np.ndarray) -> tf.train.Feature:
  return tf.train.Feature(int64_list=tf.train.Int64List(value=values.tolist()))


def serialize(features: dict, labels: dict, weights: dict) -> list[bytes]:
  """A batch of our examples (numpy) -> one original record each, serialized."""
  records = []
  for row in range(len(labels["nsp"])):
    record = tf.train.Example(features=tf.train.Features(feature={
        "input_ids": _int64s(features["token_ids"][row]),
        "input_mask": _int64s(features["padding_mask"][row]),
        "segment_ids": _int64s(features["segment_ids"][row]),
        "masked_lm_positions": _int64s(features["masked_positions"][row]),
        "masked_lm_ids": _int64s(labels["mlm"][row]),
        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(
            value=weights["mlm"][row].tolist())),
        LABEL_FEATURE: _int64s(1 - labels["nsp"][row:row + 1]),
    }))
    records.append(record.SerializeToString())
  return records

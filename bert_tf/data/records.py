"""Original BERT's pre-training records, the TFRecords that google-research/bert's
`create_pretraining_data.py` writes and its `run_pretraining.py` reads: their features, and
the conversion to and from this pipeline's (`pipeline.py`) features, labels and weights
(docs/records.md).

Two conventions differ: their `next_sentence_labels` is 1 for a random segment B (NotNext)
and 0 for IsNext, the opposite of our `nsp` label; their `input_mask` is our `padding_mask`.
Padded prediction slots are position 0, id 0 and weight 0 in both.
"""

import dataclasses

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


def _encoded(message_type: str, fields: dict) -> tf.Tensor:
  """`tf.io.encode_proto` of a batch of messages: {field: [batch, count] values}, every
  field of every message given `count` values; string [batch] serialized messages."""
  values = list(fields.values())
  sizes = tf.stack([tf.fill([tf.shape(values[0])[0]], tf.shape(v)[1]) for v in values], axis=1)
  return tf.io.encode_proto(sizes, values, list(fields), message_type)


def _feature(values, dtype: tf.DType) -> tf.Tensor:
  """[batch, count] values -> serialized `tf.train.Feature`s of `dtype` (int64 or float32),
  one a row."""
  kind, message = (("float_list", "tensorflow.FloatList") if dtype == tf.float32 else
                   ("int64_list", "tensorflow.Int64List"))
  value_list = _encoded(message, {"value": tf.cast(values, dtype)})
  return _encoded("tensorflow.Feature", {kind: value_list[:, None]})


def serialize(features: dict, labels: dict, weights: dict) -> tf.Tensor:
  """A batch of our examples (tensors or numpy) -> string [batch], one original record each,
  serialized: tf ops (`tf.io.encode_proto` through `tf.train.Example`'s messages, its
  feature map as the map's entries), so that it runs in tf.data, in parallel."""
  columns = {
      "input_ids": features["token_ids"],
      "input_mask": features["padding_mask"],
      "segment_ids": features["segment_ids"],
      "masked_lm_positions": features["masked_positions"],
      "masked_lm_ids": labels["mlm"],
      WEIGHT_FEATURE: weights["mlm"],
      LABEL_FEATURE: 1 - tf.cast(labels["nsp"], tf.int64)[:, None],
  }
  batch = tf.shape(labels["nsp"])[0]
  entries = [_encoded("tensorflow.Features.FeatureEntry", {
      "key": tf.fill([batch, 1], name),
      "value": _feature(values, tf.float32 if name == WEIGHT_FEATURE else tf.int64)[:, None]})
      for name, values in columns.items()]
  feature_map = _encoded("tensorflow.Features", {"feature": tf.stack(entries, axis=1)})
  return _encoded("tensorflow.Example", {"features": feature_map[:, None]})

"""Where every reader's examples become batches (`pipeline.text_batches`,
`record_dataset.record_batches`): the one place a stage over the stream of examples goes
(docs/design.md#the-input-plan), such as packing several pairs a row (`packing.py`).

A reader gives `(key, example)` elements when it is keyed (its stream positions: records
always, text when asked or mixed), else the examples alone; an example is `(features, labels,
weights)`, and with `Batching.with_pairs` the facts of its pair as a fourth element.
"""

import tensorflow as tf

from bert_tf.data import packing, stream_position
from bert_tf.data.input_plan import Batching
from bert_tf.data.prefetching import prefetched


def batched(examples: tf.data.Dataset, batching: Batching, keyed: bool,
            packed: bool = False) -> tf.data.Dataset:
  """`examples` in batches of `batching.batch_size` rows (the last short one dropped when the
  stream repeats), `packed` several pairs a row (`packing.py`), their stream positions among
  the features when asked, prefetched."""
  if packed:
    batches = packing.packed(examples, batching.batch_size, keyed, finite=not batching.repeat)
  else:
    batches = examples.batch(batching.batch_size, drop_remainder=batching.repeat)
  if keyed:
    batches = batches.map(tf.autograph.experimental.do_not_convert(
        _keys_into_features if batching.with_positions else _without_keys))
  return prefetched(batches)


def _keys_into_features(keys: tf.Tensor, batch: tuple) -> tuple:
  """A batch zipped with its stream positions, the positions put among the features."""
  features, *labels_and_weights = batch
  return ({**features, stream_position.FEATURE: keys}, *labels_and_weights)


def _without_keys(keys: tf.Tensor, batch: tuple) -> tuple:
  return batch

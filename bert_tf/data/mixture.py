"""Corpora mixed by weight (docs/pipeline.md#corpora-mixed-by-weight): each group of files has
its own stream of examples (its own pieces, epochs and NotNext partners), and each example of
the mixed stream is drawn from group g with probability weight_g / sum(weights).

The draw of example n is stateless, keyed on (seed, input pipeline, n), and tf.data's
`choose_from_datasets` takes each example from the group drawn: the mixed stream restarts at
any example in constant time, given where each group's stream stood. So a mixed stream's
position (the `stream_position` feature) is a vector per example: the stream position
(`stream_position.py`) of the last example taken from each group up to this one (-1: none
yet), then the example's number n in the mixed stream. Every entry grows along the stream, so
the largest over a batch is where the stream stood after it, as an unmixed stream's key is.
"""

import tensorflow as tf

CHOICE_BLOCK = 4096  # choices drawn by one op: a restart draws at most this many
_CHOOSER = 0x6D6978  # folded into the seed, so that the choices are not another draw's


def group_seed(seed: int, group: int) -> int:
  """The seed of group `group`'s stream: each group's randomness its own, group 0's the one
  its files would have alone."""
  return seed + (group << 32)


def choices(weights, seed: int, shard_index: int, first: int) -> tf.data.Dataset:
  """The group of each example of input pipeline `shard_index`'s mixed stream, from example
  number `first` on: int64 scalars, each drawn in proportion to `weights`."""
  logits = tf.math.log(tf.constant([w / sum(weights) for w in weights], tf.float32))[None, :]
  key = tf.random.experimental.stateless_fold_in(
      tf.constant([seed, shard_index], tf.int64), _CHOOSER)

  def block(index):
    return tf.random.stateless_categorical(
        logits, CHOICE_BLOCK, tf.random.experimental.stateless_fold_in(key, index),
        dtype=tf.int64)[0]

  return tf.data.Dataset.counter(first // CHOICE_BLOCK).map(block).unbatch().skip(
      first % CHOICE_BLOCK)


def mixed(group_examples: list[tf.data.Dataset], weights, *, seed: int, shard_index: int,
          start: list[int]) -> tf.data.Dataset:
  """(positions, example) of the mixed stream from `start` (`starts`) on.

  group_examples: each group's (stream position, example) from its own start on; an example
  that carries the facts of its pair (a fourth element) gets its `group` among them. The
  stream ends when a chosen group's does (a pass of the mixture: `repeat=False`)."""
  tagged = [examples.map(lambda key, example, group=group: (
      tf.constant(group, tf.int32), key, _with_group(example, group)))
      for group, examples in enumerate(group_examples)]
  chosen = tf.data.Dataset.choose_from_datasets(
      tagged, choices(weights, seed, shard_index, start[-1]), stop_on_empty_dataset=True)

  def positioned(state, element):
    last, number = state
    group, key, example = element
    last = tf.tensor_scatter_nd_update(last, [[group]], [key])
    return (last, number + 1), (tf.concat([last, [number]], 0), example)

  initial = (tf.constant([key - 1 for key in start[:-1]], tf.int64),
             tf.constant(start[-1], tf.int64))
  return chosen.scan(initial, positioned)


def _with_group(example: tuple, group: int) -> tuple:
  """The example, its group among the facts of its pair when it carries them."""
  if len(example) < 4:
    return example
  features, labels, weights, facts = example
  group = tf.fill(tf.shape(facts["is_next"]), tf.constant(group, tf.int32))
  return features, labels, weights, {**facts, "group": group}

"""The one way every input pipeline of the project ends (the batches it trains, evaluates and
writes records from): prefetched, with tf.data's autotuning off.

Autotuning runs a thread beside each iterator that re-tunes the pipeline's parallelism at
intervals growing up to a minute. Destroying the iterator (a held-out evaluation's, a finished
fine-tune's, a test's) joins that thread, and TensorFlow 2.21 wakes it before it marks the
iterator cancelled: a thread that wakes first waits out the rest of its interval. The process
then stalls for up to a minute with nothing to do (seen as 3 to 34 s garbage collections in
the test processes). Off, the parallel stages run on as many threads as the process may use
cores, and the prefetch buffer still grows as the consumer needs; on two cores the pre-training
pipeline's throughput is the same within the machine's noise (docs/measured.md, "tf.data's
autotuning off"; `benchmarks/pipeline.py` shows both on any machine).
"""

import tensorflow as tf


def prefetched(dataset: tf.data.Dataset) -> tf.data.Dataset:
  """`dataset` with its elements prefetched while the consumer works, autotuning off."""
  options = tf.data.Options()
  options.autotune.enabled = False
  return dataset.prefetch(tf.data.AUTOTUNE).with_options(options)

"""`PretrainingModel`: the functional pre-training model with the training step BERT needs.

Keras's own `train_step` is replaced, for what Keras does not do:
- the losses are normalised over the global batch of one optimizer update (see `loss.py`);
- gradient accumulation inside one step: the replica's batch is split into
  `gradient_accumulation_steps` parts whose gradients are summed in a `tf.while_loop`, then
  applied once. Keras's optimizer option fails under `MirroredStrategy` (keras#20582); here
  nothing crosses replicas until the one `apply_gradients`, so it works under every strategy,
  and `optimizer.iterations` (hence the learning-rate schedule) counts updates;
- each batch's stream positions (a feature the model does not take) are recorded in the run's
  `DataPosition`, given to `compile_for_pretraining`, so that a resumed run starts after them;
- the whole step waits for its batch, so that a read that fails leaves no state changed.

Two failures of Keras 3.15 under tf.distribute are mended:
- `steps_per_execution` > 1 under `MirroredStrategy` ("You must feed a value for placeholder
  tensor"): Keras runs each step inside a `tf.cond` on an optional batch, whose cross-replica
  sums break. Our training stream never ends, so `make_train_function` runs the N steps in a
  plain loop over the iterator instead.
- Under `MultiWorkerMirroredStrategy`, `fit` reduces each scalar log with
  `strategy.reduce("MEAN", log, axis=0)`, invalid for a scalar: the step returns each log as a
  vector of one. (Keras's build from a first batch fails there too: `keras_internals.py`.)
The design of the step and its losses: docs/design.md#the-training-step.
"""

import keras
import tensorflow as tf

from bert_tf.data import data_position as data_position_lib
from bert_tf.model import loss as loss_lib
from bert_tf.model.keras_internals import BuiltBeforeFit


def _is_multi_worker(strategy) -> bool:
  return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


@keras.saving.register_keras_serializable(package="bert_tf")
class PretrainingModel(BuiltBeforeFit):
  """Takes `(features, labels, sample_weights)` batches as `pretraining_dataset` makes them;
  compile it with `compile_for_pretraining`, whose summed losses this step normalises."""

  gradient_accumulation_steps = 1
  mlm_loss_reduction = "mean"
  data_position = None  # a `DataPosition` to record the batches' stream positions in
  layers_wired = None  # `pretraining.PretrainingLayers`: the layers, wired for packed rows

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    # Two metrics of the training step, for watching it (see training/watching/callbacks.py): the
    # gradient's global norm before clipping, and the real (non-padding) tokens trained on.
    self.gradient_norm_tracker = keras.metrics.Mean(name="gradient_norm")
    self.tokens_tracker = keras.metrics.Sum(name="tokens")

  def call(self, inputs, training=None, mask=None):
    """A batch of packed rows (docs/design.md#packing: `pair_ids` among the features) runs
    the same layers wired for several pairs a row; any other, the functional graph."""
    if "pair_ids" in inputs:
      return self.layers_wired.outputs(inputs, training)
    return super().call(inputs, training=training, mask=mask)

  def _losses_and_metrics(self, x, y, sample_weight, loss_weights, training):
    """Forward pass; updates the metrics; returns the (loss-scaled) total loss."""
    y_pred = self(x, training=training)
    loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=loss_weights,
                             training=training)
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    # As Keras's own step: the total as a replica sees it, averaged over replicas.
    self._total_loss_metric().update_state(loss * replicas,
                                           sample_weight=tf.shape(x["token_ids"])[0])
    self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)  # real masks weigh
    return self.optimizer.scale_loss(loss) if training else loss

  def _gradients(self, x, y, sample_weight, loss_weights):
    with tf.GradientTape() as tape:
      loss = self._losses_and_metrics(x, y, sample_weight, loss_weights, training=True)
    gradients = tape.gradient(loss, self.trainable_variables)
    # Dense: the embeddings' sparse gradients cannot be all-reduced when the replicas' differ
    # in size, and the optimizers update them densely anyway.
    return [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
            for g, v in zip(gradients, self.trainable_variables)]

  def _accumulated_gradients(self, data, parts: int):
    """The mean of the gradients of `parts` equal slices of the batch, one slice at a time."""
    sliced = tf.nest.map_structure(
        lambda t: tf.reshape(t, tf.concat([[parts, -1], tf.shape(t)[1:]], 0)), data)

    def accumulate(part, total):
      gradients = self._gradients(*tf.nest.map_structure(lambda t: t[part], sliced))
      return part + 1, [a + g for a, g in zip(total, gradients)]

    zeros = [tf.zeros(v.shape, v.dtype) for v in self.trainable_variables]
    _, total = tf.while_loop(lambda part, _: part < parts, accumulate,
                             (tf.constant(0), zeros))
    return [g / parts for g in total]

  def train_step(self, data):
    # Nothing of the step may run before its batch is read: what does not take the batch
    # (dropout's random state, the optimizer's step count) would otherwise run while the read
    # is pending and stay done when it fails, and the step saved then would not be the one
    # trained (docs/reliability.md#input-that-fails-mid-run).
    with tf.control_dependencies(tf.nest.flatten(data)):
      return self._update(data)

  def _update(self, data):
    x, y, sample_weight = data
    x = data_position_lib.strip_stream_positions(x, self.data_position)
    parts = self.gradient_accumulation_steps
    loss_weights = loss_lib.normalised_sample_weights(sample_weight, self.mlm_loss_reduction,
                                                      parts)
    if parts == 1:
      gradients = self._gradients(x, y, sample_weight, loss_weights)
    else:
      gradients = self._accumulated_gradients((x, y, sample_weight, loss_weights), parts)
    self._watch(x, gradients)
    self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
    return self._logs()

  def _watch(self, x, gradients):
    """Updates the two watching metrics. The norm is of this replica's gradient, times the
    replica count: with several replicas, an upper bound of the global norm (exact with one);
    with fp16, unscaled."""
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    norm = tf.linalg.global_norm(gradients) * replicas
    if isinstance(self.optimizer, keras.optimizers.LossScaleOptimizer):
      norm = norm / tf.cast(self.optimizer.scale_loss(1.0), norm.dtype)
    self.gradient_norm_tracker.update_state(norm)
    self.tokens_tracker.update_state(tf.reduce_sum(tf.cast(x["padding_mask"], tf.float32)))

  def make_train_function(self, force=False):
    """With several steps per execution: one `tf.function` running `steps_per_execution`
    training steps, each taking the iterator's next batch; returns the last step's logs.

    The data must last (the training stream repeats): a short input raises `OutOfRangeError`,
    which `fit` ends the epoch on, without the logs of that execution's steps."""
    if self.steps_per_execution == 1 or self.run_eagerly:
      return super().make_train_function(force)
    if self.train_function is not None and not force:
      return self.train_function
    strategy = self.distribute_strategy
    steps = self.steps_per_execution

    @tf.function(jit_compile=self.jit_compile, reduce_retracing=True)
    def one_step(data):
      return self._reduced(strategy.run(self.train_step, args=(data,)))

    @tf.function(reduce_retracing=True)
    def several_steps(iterator):
      logs = one_step(next(iterator))
      for _ in tf.range(steps - 1):
        logs = one_step(next(iterator))
      return logs

    self.train_function = several_steps
    return self.train_function

  def test_step(self, data):
    # As in `train_step`: nothing may run before the batch is read. On a stream of unknown
    # length Keras runs the step once more after the last batch, to find that there is none
    # (keras-team/keras#23084); what does not take the batch would run all the same (Keras
    # counts each per-output loss once more, with the batch size it knows statically), and
    # the figures of a one-batch stream would come out halved.
    with tf.control_dependencies(tf.nest.flatten(data)):
      return self._evaluated(data)

  def _evaluated(self, data):
    x, y, sample_weight = data
    loss_weights = loss_lib.normalised_sample_weights(sample_weight, self.mlm_loss_reduction)
    self._losses_and_metrics(x, y, sample_weight, loss_weights, training=False)
    return self._logs()

  def _total_loss_metric(self) -> keras.metrics.Metric:
    """The metric `fit` reports as `loss` (Keras's own step feeds it; ours must too)."""
    return next(metric for metric in self.metrics if metric.name == "loss")

  def _reduced(self, logs: dict) -> dict:
    """Each log's mean over the replicas, as Keras's own multi-replica step reports it."""
    strategy = self.distribute_strategy
    return {name: tf.reshape(strategy.reduce("MEAN", value, axis=None), [])
            if isinstance(value, tf.distribute.DistributedValues) else value
            for name, value in logs.items()}

  def _logs(self):
    logs = self.get_metrics_result()
    if _is_multi_worker(self.distribute_strategy):
      return {name: tf.reshape(value, [1]) for name, value in logs.items()}
    return logs

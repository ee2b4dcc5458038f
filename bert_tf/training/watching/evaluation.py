"""Evaluation on held-out data while training (`--eval_every`, `--eval_steps`).

Evaluations run at the end of a Keras epoch (a checkpoint interval here): Keras's `evaluate`
shares the compiled metrics with training and resets them, so evaluating inside an interval
would corrupt its running training means. Each evaluation measures the same `steps` batches
(dropout off): the first ones of a dataset made afresh from the same seed (a dataset object
reshuffles on each pass; nothing is held in memory), so successive figures compare. Each goes
to:
- TensorBoard, as an `eval` run beside the `train` run, under the same tags (`loss`,
  `mlm_accuracy`, ...) at the step it measured, so the two curves share a chart and an axis;
- `history.jsonl`, as records `{"step": ..., "eval_loss": ..., ...}` for curves.png (the
  `TrainingCurves` callback writes the file after this one's `on_epoch_end`);
- the console, as one line.
With a probe (`probe.py`), each evaluation also fine-tunes a copy of the encoder on the probe's
task: its figure (`probe_accuracy`, ...) goes with the held-out figures (and alone, without
held-out data).
"""

import collections
import logging
import math
from collections.abc import Callable

import keras
import tensorflow as tf

from bert_tf.data import corpus, holdout
from bert_tf.training.watching import summaries
from bert_tf.training.watching.callbacks import read_records

log = logging.getLogger("bert_tf")

METRICS = ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy")
FIGURE_PREFIXES = ("eval_", "probe_")  # an evaluation's record in history.jsonl has these


def check_held_out(config) -> None:
  """A `TrainConfig`'s --eval_files, or its --eval_fraction of the corpus, has enough
  documents (its settings are checked by `TrainConfig.check`)."""
  needed = 2 if config.nsp else 1
  if config.eval_files:
    corpus.check_documents(corpus.list_files(config.eval_files, config.data_dir),
                           config.input_format, needed)
  if config.eval_fraction:  # of each group of a mixed corpus
    mixed = config.weights() is not None
    for number, files in enumerate(
        corpus.training_groups(config.input_files, mixed, config.data_dir), 1):
      with corpus.about_group(number if mixed else None, config.input_files):
        holdout.check_split(files, config.input_format, config.eval_fraction, needed)


def most_frequent_token_accuracy(dataset: tf.data.Dataset, num_batches: int) -> float:
  """MLM accuracy of always predicting the most frequent masked token: the baseline that
  training must beat."""
  counts = collections.Counter()
  for _, labels, weights in dataset.take(num_batches):
    ids = labels["mlm"].numpy()[weights["mlm"].numpy() > 0]
    counts.update(ids.tolist())
  total = sum(counts.values())
  return counts.most_common(1)[0][1] / total if total else 0.0


def evaluate(model: keras.Model, dataset: tf.data.Dataset, steps: int,
             prefix: str = "eval_") -> dict:
  """Losses and accuracies of `model` on the first `steps` batches of `dataset`, names
  prefixed."""
  results = model.evaluate(dataset, steps=steps, return_dict=True, verbose=0)
  return {prefix + name: float(results[name]) for name in METRICS}


class HeldOutEvaluation(keras.callbacks.Callback):
  """Evaluates every `every` steps (at the end of the interval that reaches a multiple of it)
  and at `train_steps`."""

  def __init__(self, make_dataset: Callable[[], tf.data.Dataset] | None, *, steps: int,
               every: int, train_steps: int, log_dir: str, curves,
               probe: Callable[[keras.Model], dict] | None = None):
    """`log_dir`: the TensorBoard run directory (`logs/eval`); `make_dataset` None: the probe
    only."""
    super().__init__()
    self.make_dataset = make_dataset  # the held-out batches, the same on each call; or None
    self._dataset = None  # made at the first evaluation, read again at each (the same batches)
    self._latest = None  # (step, results) of the latest evaluation
    self.probe = probe  # model -> {"probe_accuracy": ...} (or the kind's figure), or None
    self.steps = steps
    self.every = every
    self.train_steps = train_steps
    self.writer = summaries.ScalarWriter(log_dir)
    self.curves = curves  # the `TrainingCurves` whose history.jsonl gets the records
    self._last_step = 0
    self._owed_step = None  # a resumed run's step whose evaluation a kill lost (`_owed`)

  def on_train_begin(self, logs=None):
    step = int(self.model.optimizer.iterations.numpy())
    owed = self._owed(step)
    self.writer.start(step - 1 if owed else step)  # a point of the lost evaluation dropped
    self._last_step = step
    self._owed_step = step if owed else None

  def on_epoch_begin(self, epoch, logs=None):
    if self._owed_step is None:
      return
    # Once the curves have read history.jsonl (their on_train_begin) and before the first
    # step; `evaluate` leaves its figures in the compiled metrics, reset for training again.
    self._record(self._owed_step, self.evaluate(self.model))
    self._owed_step = None
    self.model.reset_metrics()

  def _owed(self, step: int) -> bool:
    """Whether a resumed run owes the evaluation of the interval that ended at `step`: one
    was due there (a multiple of `every` passed since the latest evaluation on record, or the
    final step) but is not in history.jsonl, as after a kill between the checkpoint at `step`
    and the evaluation's record."""
    evaluated = [record["step"] for record in read_records(self.curves.path)
                 if record["step"] <= step and any(name.startswith(FIGURE_PREFIXES)
                                                   for name in record)]
    latest = max(evaluated, default=0)
    return 0 < step and latest < step and (step // self.every > latest // self.every
                                           or step >= self.train_steps)

  def on_epoch_end(self, epoch, logs=None):
    step = int(self.model.optimizer.iterations.numpy())  # once per interval
    reached = step // self.every > self._last_step // self.every
    finished = step >= self.train_steps and step > self._last_step
    loss = (logs or {}).get("loss")
    if not (reached or finished) or (loss is not None and not math.isfinite(float(loss))):
      return
    self._last_step = step
    self._record(step, self.evaluate(self.model))

  def _record(self, step: int, results: dict) -> None:
    """An evaluation's figures to TensorBoard, history.jsonl (at its next write) and the
    console."""
    self.writer.write(step, {name.removeprefix("eval_"): v for name, v in results.items()})
    self.writer.flush()
    self.curves.add({"step": step, **results})
    log.info("held-out at step %s: %s", f"{step:,}",
             " ".join(f"{name}: {value:.4f}" for name, value in results.items()))

  def evaluate(self, model: keras.Model) -> dict:
    """`eval_*` figures of `model` now, and the probe's (also used once training is over:
    those of the evaluation at the final step when there was one, the weights being the
    same)."""
    step = int(model.optimizer.iterations.numpy())
    if self._latest and self._latest[0] == step:
      return self._latest[1]
    results = {}
    if self.make_dataset:
      self._dataset = self._dataset or self.make_dataset()
      results = evaluate(model, self._dataset, self.steps)
    results.update(self.probe(model) if self.probe else {})
    self._latest = (step, results)
    return results

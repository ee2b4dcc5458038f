"""`train`: one pre-training run from a `TrainConfig`, usable from a notebook or `train.py`.

The story of a run, each step in its own module: check every input, writing nothing
(`preparation`), take the model_dir (`run_lock`), learn the vocabulary if asked
(`preparation`), compare the run with the model_dir's last one (`run_changes`), build the
model under the strategy, resume or initialise its weights (`initialisation`), write the files
that make the model_dir stand alone (`run_files`), train (`fitting`) and finish: final figures
and the serving SavedModel (`finishing`).
"""

import dataclasses
import os

from bert_tf.data.data_position import LAYOUT_NAME, DataPosition
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.model_dir import CHECKPOINTS
from bert_tf.runtime import checkpointing, optimization, preamble, precision, run_lock
from bert_tf.runtime import strategy as strategy_lib
from bert_tf.training import (
  finishing,
  fitting,
  initialisation,
  preparation,
  resizing,
  run_changes,
  run_files,
)
from bert_tf.training.datasets import RunInputs
from bert_tf.training.train_settings import TrainConfig
from bert_tf.training.watching.monitor import RunMonitor


def train(config: TrainConfig, flags_text: str = "") -> dict:
  """Runs pre-training as configured; returns the metrics also written to metrics.json.

  `flags_text`, the command line as a flagfile, is kept as `model_dir/flags.txt`. Raises
  `checkpointing.TrainingStopped` when preempted or on a non-finite loss, and `UserError` for
  a mistake in the settings or the files.
  """
  strategy = preamble.create(config)  # first: before any other TensorFlow op
  chief_checkpoints = os.path.join(config.model_dir, CHECKPOINTS)
  config = dataclasses.replace(
      config, model_dir=strategy_lib.worker_model_dir(strategy, config.model_dir))
  checked = preparation.check_inputs(config)  # every input, before anything is written
  with run_lock.RunLock.acquire(config.model_dir):  # one run per model_dir
    config, vocabulary, bert_config = preparation.prepare(checked)
    config = precision.resolved(config, config.strategy)  # auto's choice, said and recorded
    changes = run_changes.compare(config, bert_config, vocabulary)  # since the last run here
    inputs = RunInputs(config, vocabulary)  # the files listed once, the streams' plans
    with preamble.building_models(strategy, config, global_batch_size=config.global_batch_size,
                                  accumulation_steps=config.gradient_accumulation_steps):
      data_position = DataPosition(strategy.num_replicas_in_sync,
                                   resizing.input_pipelines(strategy), inputs.position_width())
      model = compile_for_pretraining(
          pretraining_model(bert_config), optimization.optimizer_for(config),
          data_position=data_position, **_compile_options(config))
      checkpointer = checkpointing.Checkpointer(
          os.path.join(config.model_dir, CHECKPOINTS), model, model.optimizer,
          keep=config.keep_checkpoints, data_position=data_position.saved,
          read_only={LAYOUT_NAME: data_position.saved_layout},
          chief_directory=chief_checkpoints,
          other_workers_saved=data_position.saved_by_other_pipelines,
          record=run_files.run_record_of(config, bert_config, vocabulary))
      initialisation.restore_or_initialise(checkpointer, model, bert_config, vocabulary, config,
                                           strategy)
      changes.carry_on(data_position, checkpointer, inputs.training)  # a new stream, or size
    run_files.write_run_files(config, bert_config, vocabulary, flags_text)
    monitor = RunMonitor(config, vocabulary, bert_config, inputs)
    checkpointer.before_save.append(monitor.write_curves)  # on disk before a save names them
    fitting.fit(model, checkpointer, data_position, config, inputs, strategy, monitor)
    return finishing.finish(model, config, vocabulary, monitor, inputs)


def _compile_options(config: TrainConfig) -> dict:
  """How the model is compiled. MLM only (--nonsp), the NSP loss weighs 0: pairing draws an
  IsNext label all the same (`pairing.py`), a coin flip that must train nothing."""
  nsp_loss_weight = config.nsp_loss_weight if config.nsp else 0.0
  return dict(mlm_loss_weight=config.mlm_loss_weight, nsp_loss_weight=nsp_loss_weight,
              mlm_loss_reduction=config.mlm_loss_reduction,
              gradient_accumulation_steps=config.gradient_accumulation_steps,
              jit_compile=config.jit_compile, steps_per_execution=config.steps_per_execution)

"""Fine-tunes an encoder on a labelled task of any kind (`--task=classify|regress|tag|answer`):
`python -m bert_tf.finetune --model_dir=runs/mine --train_file=train.tsv --dev_file=dev.tsv
--output_dir=runs/mine_task`."""

import sys

from bert_tf import console

console.start(sys.argv)  # before TensorFlow is imported: its start-up lines, unless debug
from bert_tf.finetune.finetune_settings import FinetuneConfig  # noqa: E402  (no TensorFlow)

# Ctrl-C outside the training steps (those save, then stop) keeps the latest checkpoint.
INTERRUPTED = "interrupted: what was saved is kept; re-run the command to go on"


def finetune(config: FinetuneConfig) -> None:
  from bert_tf.runtime import cluster
  from bert_tf.runtime.checkpointing import TrainingStopped
  try:
    with cluster.losses_said():
      run(config)
  except TrainingStopped as e:  # saved (a signal) or not (a non-finite loss): said in the line
    console.stop(f"stopped: {e}", 1)


def run(config: FinetuneConfig) -> None:
  if config.sweeps:
    from bert_tf.finetune import sweep
    sweep.report(sweep.run(config))
    return
  from bert_tf.finetune.kinds.registry import kind_named
  from bert_tf.finetune.output_dir import EXPORT, WEIGHTS_FILE
  from bert_tf.finetune.training import finetune
  results = finetune(config)
  task_kind = kind_named(config.task)
  where = (f"{config.output_dir}/{EXPORT} (signature {task_kind.signature})"
           if config.serving_export else f"{config.output_dir}/{WEIGHTS_FILE}")
  print(f"Best epoch {results['best_epoch']} of {results['epochs']}: "
        f"{task_kind.summary(results)}. The model is in {where}.")


if __name__ == "__main__":
  from bert_tf.runtime import cluster
  with cluster.exiting_at_once():  # a multi-worker run: without TensorFlow's slow teardown
    console.run_command(FinetuneConfig, finetune, interrupted=INTERRUPTED)

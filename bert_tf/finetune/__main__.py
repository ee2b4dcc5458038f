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
  """One run, or a sweep (`--seeds`, a grid) with its table; a single run with a GLUE task or
  predictions goes through the sweep's code but is said as one run, its predictions before
  its closing line."""
  if not config.sweeps:
    from bert_tf.finetune.training import finetune
    say_kept(config, finetune(config))
    return
  from bert_tf.finetune import sweep
  summary = sweep.run(config)
  if not sweep.is_single(config):
    sweep.report(summary)
    return
  sweep.report_predictions(summary)
  say_kept(config, summary["results"])


def say_kept(config: FinetuneConfig, results: dict) -> None:
  """The closing line: the kept epoch's figures and where the model is (the run's kind: a
  GLUE task's, whatever --task says)."""
  from bert_tf.finetune.kinds.registry import kind_named
  from bert_tf.finetune.output_dir import EXPORT, WEIGHTS_FILE
  task_kind = kind_named(results["task"])
  where = (f"{config.output_dir}/{EXPORT} (signature {task_kind.signature})"
           if config.serving_export else f"{config.output_dir}/{WEIGHTS_FILE}")
  print(f"Best epoch {results['best_epoch']} of {results['epochs']}: "
        f"{task_kind.summary(results)}. The model is in {where}.")


if __name__ == "__main__":
  from bert_tf.runtime import cluster
  with cluster.exiting_at_once():  # a multi-worker run: without TensorFlow's slow teardown
    console.run_command(FinetuneConfig, finetune, interrupted=INTERRUPTED)

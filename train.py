"""Pre-trains a BERT (MLM + NSP): `python train.py --flagfile=configs/quickstart.flags`."""

import os
import sys

from bert_tf import console

console.start(sys.argv)  # before TensorFlow is imported: its start-up lines, unless debug
from bert_tf.training.train_settings import TrainConfig  # noqa: E402  (no TensorFlow import)

QUICKSTART = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs",
                          "quickstart.flags")
# Ctrl-C outside the training steps (those save, then stop) keeps the latest checkpoint.
INTERRUPTED = "interrupted: what was saved is kept; re-run the command to go on"


def command_line(argv: list[str]) -> list[str]:
  """A bare `python train.py` is the quickstart."""
  return argv if len(argv) > 1 else [*argv, f"--flagfile={QUICKSTART}"]


def train(config: TrainConfig) -> None:
  # Heavy imports after the flags are parsed.
  import tensorflow as tf

  from bert_tf import settings
  from bert_tf.data.data_settings import RECORDS
  from bert_tf.runtime import checkpointing, cluster, failures, strategy
  from bert_tf.serving import examples
  from bert_tf.training import trainer
  from bert_tf.training.watching import report
  try:
    with cluster.losses_said():
      metrics = trainer.train(config, flags_text=settings.flags_text(TrainConfig))
  except checkpointing.TrainingStopped as e:
    console.stop(f"stopped: {e}", 1)
  except tf.errors.OpError as e:  # after training (fitting saves when it fails during)
    if not failures.is_input_failure(e):
      raise
    console.stop(f"stopped: could not read the input: {failures.describe(e)}", 1)
  print(report.summary(metrics, nsp=config.nsp))
  chief = strategy.is_chief(cluster.joined())
  if chief and config.serving_export and config.input_format != RECORDS:  # records: no text
    # Other workers wrote their copies elsewhere (strategy.worker_model_dir).
    print(examples.show_predictions(os.path.join(config.model_dir, "export"),
                                    config.input_files, config.input_format,
                                    config.data_dir))


if __name__ == "__main__":
  from bert_tf.runtime import cluster
  with cluster.exiting_at_once():  # a multi-worker run: without TensorFlow's slow teardown
    console.run_command(TrainConfig, train, argv=command_line(sys.argv), interrupted=INTERRUPTED)

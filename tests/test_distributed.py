"""Training under MirroredStrategy over two logical CPU devices (in a subprocess, because
logical devices must be set before TensorFlow starts)."""

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json, sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
from bert_tf.training.trainer import TrainConfig, train
metrics = train(TrainConfig(
    data_dir=sys.argv[1], vocab_file=sys.argv[2], model_dir=sys.argv[3], strategy="mirrored",
    config="bert_tiny", seq_length=64, max_predictions_per_seq=10, global_batch_size=8,
    train_steps=4, checkpoint_every=2, warmup_steps=1, eval_steps=2, verbose=0))
print(json.dumps({"replicas": tf.distribute.MirroredStrategy().num_replicas_in_sync,
                  **metrics}))
"""


def test_mirrored_strategy_on_two_logical_cpus(tmp_path, data_dir, vocab_file):
  result = subprocess.run(
      [sys.executable, "-c", SCRIPT, data_dir, vocab_file, str(tmp_path / "run")],
      capture_output=True, text=True, timeout=600,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert result.returncode == 0, result.stderr[-3000:]
  metrics = json.loads(result.stdout.strip().splitlines()[-1])
  assert metrics["replicas"] == 2
  assert metrics["steps"] == 4
  assert 0 < metrics["mlm_loss"] < 20
  assert os.path.exists(tmp_path / "run" / "export" / "saved_model.pb")

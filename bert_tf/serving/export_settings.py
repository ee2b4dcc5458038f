"""`ServingExportConfig`: the settings of the SavedModel a pre-training or fine-tuning run
writes when it ends, declared once (see `bert_tf.settings`); those of `python -m
bert_tf.export` are `formats/export_config.py`'s. No TensorFlow import: the flags are read
before TensorFlow loads."""

import dataclasses

from bert_tf.settings import NOTED, setting


@dataclasses.dataclass(frozen=True)
class ServingExportConfig:
  """The serving SavedModel a run writes when it ends, and its check.

  Pre-training's (train.py) and fine-tuning's (`python -m bert_tf.finetune`) alike."""

  serving_export: bool = setting(
      True, "Write the serving SavedModel (export/) when the run ends; --noserving_export "
      "leaves it out (a phase that another continues, a run judged by its weights; `python -m "
      "bert_tf.export --model_dir=...` writes it from the run's directory at any time).",
      change=NOTED)
  skip_verify: bool = setting(False, "Do not check the serving SavedModel (export/) against "
                              "the Keras model after writing it.", change=NOTED)

"""Fine-tuning a pre-trained encoder on a task: classification, regression, token tagging or
extractive question answering (docs/finetuning.md). From the command line, `python -m
bert_tf.finetune` (`finetune(FinetuneConfig(...))`); from Keras, `classifier`, the compiled
classifier on a model_dir's encoder, and `task_model`, the compiled model of any kind.

Importing this package loads no TensorFlow (the command line reads its flags first); each
function imports its module when called.
"""

from bert_tf.finetune.finetune_settings import FinetuneConfig

__all__ = ["FinetuneConfig", "classifier", "finetune", "task_model"]


def finetune(config: FinetuneConfig) -> dict:
  """See `bert_tf.finetune.training.finetune`."""
  from bert_tf.finetune import training
  return training.finetune(config)


def classifier(model_dir: str, num_classes: int, **options):
  """See `bert_tf.finetune.model.classifier`."""
  from bert_tf.finetune import model
  return model.classifier(model_dir, num_classes, **options)


def task_model(model_dir: str, task: str, **options):
  """See `bert_tf.finetune.tasks.task_model`."""
  from bert_tf.finetune import tasks
  return tasks.task_model(model_dir, task, **options)

"""BERT pre-training (MLM + NSP) in TensorFlow 2 / Keras 3.

The names below are imported when first used, so that importing a light module of the package
(`bert_tf.console`, which must run before TensorFlow is imported) does not import TensorFlow.
"""

import importlib

_MODULES = {
    "BertConfig": "bert_tf.model.bert_config",
    "Vocabulary": "bert_tf.data.tokenization",
    "build_vocabulary": "bert_tf.data.vocabulary_learner",
    "compile_for_pretraining": "bert_tf.model.pretraining",
    "create_optimizer": "bert_tf.runtime.optimization",
    "export_savedmodel": "bert_tf.serving.savedmodel",
    "pretraining_dataset": "bert_tf.data.pipeline",
    "pretraining_model": "bert_tf.model.pretraining",
}

__all__ = sorted(_MODULES)


def __getattr__(name):
  if name in _MODULES:
    return getattr(importlib.import_module(_MODULES[name]), name)
  raise AttributeError(f"module 'bert_tf' has no attribute {name!r}")

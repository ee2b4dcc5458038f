"""BERT pre-training (MLM + NSP) in TensorFlow 2 / Keras 3."""

from bert_tf.config import BertConfig
from bert_tf.data.pipeline import pretraining_dataset
from bert_tf.data.tokenization import Vocabulary
from bert_tf.export.savedmodel import export_savedmodel
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model
from bert_tf.training.optimization import create_optimizer
from bert_tf.vocab import build_vocabulary

__all__ = ["BertConfig", "Vocabulary", "build_vocabulary", "compile_for_pretraining",
           "create_optimizer", "export_savedmodel", "pretraining_dataset", "pretraining_model"]

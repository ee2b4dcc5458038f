"""BERT pre-training (MLM + NSP) in TensorFlow 2 / Keras 3."""

from bert_tf.config import BertConfig
from bert_tf.data.pipeline import pretraining_dataset
from bert_tf.model.pretraining import compile_for_pretraining, pretraining_model

__all__ = ["BertConfig", "compile_for_pretraining", "pretraining_dataset",
           "pretraining_model"]

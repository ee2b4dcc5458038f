"""A fine-tuned model's Hugging Face export checks itself as the pre-training model's does
(`serving/verification.py`): the directory's tokenizer gives the pre-training tokenizer's ids
(on the examples and on the vocabulary's own words), and the transformers class of the task's
kind (its `huggingface_head`), or without transformers a numpy forward pass of the weights,
gives the Keras task model's head logits on the same ids (the kind's `head_logits` and
`transformers_logits`, each pair given as the kind's `one_example`): a classifier's or
regressor's logits, a tagger's at every token, a span head's start and end logits at every
token, a multiple-choice model's score of a context with one ending.
"""

import keras
import numpy as np

from bert_tf.data.tokenization import Vocabulary
from bert_tf.finetune.kinds.registry import kind_named
from bert_tf.interop import huggingface
from bert_tf.serving.numpy_bert import NumpyBert
from bert_tf.serving.tolerances import HUGGINGFACE_TOLERANCE
from bert_tf.serving.verification import (
  EXAMPLES,
  Results,
  huggingface_text_ids,
  model_inputs,
  pair_ids,
  text_ids,
  torch_inputs,
  transformers_installed,
  verify,
  word_texts,
)


class HeadReference:
  """The pre-training tokenizer's ids of each text of EXAMPLES, each pair truncated to the
  task's sequence, and the Keras task model's head logits on each, [tokens, outputs] for the
  kinds with an output per token."""

  def __init__(self, model: keras.Model, task, vocabulary: Vocabulary):
    tokenizer = vocabulary.tokenizer(task.lower_case)
    self.text_ids = [text_ids(tokenizer, text) for pair in EXAMPLES for text in pair]
    self.words = word_texts(vocabulary)
    self.word_ids = [text_ids(tokenizer, text) for text in self.words]
    self.pairs = [pair_ids(vocabulary, a, b, task.seq_length)
                  for a, b in zip(self.text_ids[::2], self.text_ids[1::2])]
    task_kind = kind_named(task.task)
    self.logits = [task_kind.head_logits(model, task_kind.one_example(model_inputs(ids, segments)))
                   for ids, segments in self.pairs]

  def results(self) -> Results:
    return {"text_ids": self.text_ids, "word_ids": self.word_ids,
            "logits": np.concatenate(self.logits)}


def verify_task_huggingface(directory: str, model: keras.Model, task,
                            vocabulary: Vocabulary) -> str:
  """Checks the Hugging Face directory `interop.huggingface.export_huggingface` wrote from the
  fine-tuned `model` of `task` (the output_dir's `TaskRecord`); returns the line saying so, or
  raises a one-line UserError."""
  reference = HeadReference(model, task, vocabulary)
  with_transformers = transformers_installed(directory)
  head_logits = transformers_logits if with_transformers else numpy_logits

  def loaded() -> Results:
    texts = [text for pair in EXAMPLES for text in pair]
    return {"text_ids": huggingface_text_ids(directory, texts, with_transformers),
            "word_ids": huggingface_text_ids(directory, reference.words, with_transformers),
            "logits": np.concatenate(head_logits(directory, task, reference.pairs))}

  return verify(f"{task.task} hf", reference.results, loaded, HUGGINGFACE_TOLERANCE)


def transformers_logits(directory: str, task, pairs: list) -> list[np.ndarray]:
  """The head logits of transformers' class for the task, loaded from `directory`, on each
  (token ids, segment ids) of `pairs`."""
  import torch
  import transformers

  task_kind = kind_named(task.task)
  class_name = task_kind.huggingface_head(task).class_name
  model = getattr(transformers, class_name).from_pretrained(directory).eval()
  with torch.no_grad():
    return [task_kind.transformers_logits(model(**task_kind.one_example(
        torch_inputs(ids, segments)))) for ids, segments in pairs]


def numpy_logits(directory: str, task, pairs: list) -> list[np.ndarray]:
  """The same logits by `NumpyBert` over the directory's config.json and weights: the head's
  layer on the pooled output (a head with the pooler) or on every token."""
  head = kind_named(task.task).huggingface_head(task)
  config, state = huggingface.read_huggingface(directory)
  bert = NumpyBert(config, state, directory)
  logits = []
  for ids, segments in pairs:
    sequence = bert.encode(ids, segments)
    logits.append(bert.linear(bert.pooled(sequence) if head.pooler else sequence, head.layer))
  return logits

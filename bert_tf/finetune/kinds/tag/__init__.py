"""tag: a tag per word (CoNLL-style files; BIO tags), a dense layer on every token, the first
piece of each word scored, cross-entropy; ranked by dev entity F1, then token accuracy. Served
as `tag(text)` -> every word as the tokenizer splits the text, with its tag and character
offsets (`served_tags`); exported as `BertForTokenClassification`."""

import logging

import keras
import numpy as np
import tensorflow as tf

from bert_tf.data.token_offsets import tokenize_with_offsets
from bert_tf.data.tokenization import Vocabulary
from bert_tf.finetune import batches
from bert_tf.finetune.kinds.base import DEV_BATCH, Serving, TaskKind, without_pooler_training
from bert_tf.finetune.kinds.references import TEXTS, chosen_score
from bert_tf.finetune.kinds.signatures import checked_batch, signature
from bert_tf.finetune.kinds.tag import tagging
from bert_tf.finetune.kinds.tag.head import tagging_loss, tagging_model
from bert_tf.finetune.kinds.tag.metrics import entity_scores
from bert_tf.finetune.kinds.tag.served_tags import WordTagger
from bert_tf.interop.huggingface import TaskHead, label_names
from bert_tf.serving.verification import Results

log = logging.getLogger("bert_tf")


class TagReference:
  """Each text's words and their offsets as the pre-training tokenizer splits it, and the
  Keras model's logits at each word's first piece, the words fed as tagging training feeds
  them (`tagging.tagging_features`)."""

  def __init__(self, model: keras.Model, task, vocabulary: Vocabulary):
    self.tags = task.labels
    self.inputs = {"text": TEXTS}
    continues = vocabulary.continuation_flags()
    ids, starts, ends = (ragged.to_list() for ragged in tokenize_with_offsets(
        vocabulary.tokenizer(task.lower_case), tf.constant(TEXTS)))
    self.words, self.offsets = [], []
    for text, row_ids, row_starts, row_ends in zip(TEXTS, ids, starts, ends):
      first = [i for i, piece in enumerate(row_ids) if not continues[piece]]
      self.offsets.append([[row_starts[a], row_ends[b - 1]]
                           for a, b in zip(first, first[1:] + [len(row_ids)])])
      self.words.append([text[start:end] for start, end in self.offsets[-1]])
    features = tagging.tagging_features(
        tagging.Sentences("verification", self.words,
                          [[self.tags[0]] * len(words) for words in self.words]),
        self.tags, vocabulary, lower_case=task.lower_case, seq_length=task.seq_length)
    logits = keras.ops.convert_to_numpy(model(features.features, training=False))
    # Each word's logits, or None for a word past the sequence (tagged O).
    self.word_logits = [[logits[row, position] if position >= 0 else None
                         for position in positions]
                        for row, positions in enumerate(features.first_pieces)]

  def compared(self, outputs: dict, name: str) -> tuple[Results, Results]:
    counts = outputs["num_words"]
    tags = [row[:count] for row, count in zip(outputs["tags"], counts)]

    def score(scores, tag):  # a word past the sequence is O
      if scores is None:
        return 0.0 if tag == tagging.OUTSIDE else np.inf
      return chosen_score(scores, self.tags, tag)

    expected = {"words": self.words, "word_offsets": self.offsets,
                "tags": np.array([0.0 if scores is None else scores.max()
                                  for row in self.word_logits for scores in row])}
    return expected, {
        "words": [row[:count] for row, count in zip(outputs["words"], counts)],
        "word_offsets": [[list(pair) for pair in zip(starts[:count], ends[:count])]
                         for starts, ends, count in zip(outputs["starts"], outputs["ends"],
                                                        counts)],
        "tags": np.array([score(scores, tag)
                          for row_scores, row_tags in zip(self.word_logits, tags)
                          for scores, tag in zip(row_scores, row_tags)])}


class Tag(TaskKind):
  """A tag per word (see the module's docstring)."""

  name = "tag"
  ranking = ("dev_entity_f1", "dev_token_accuracy")
  probe_figure = "entity_f1"
  signature = "tag"
  reference = TagReference
  portable_shapes = {"logits": ["batch", "seq_length", "labels"]}

  def read(self) -> None:
    self.train, self.dev, self.labels = tagging.read_tagging_task(self.train_file,
                                                                  self.dev_file)

  def encode(self, pretrained) -> None:
    self.train_features, self.dev_features = (
        tagging.tagging_features(sentences, self.labels, pretrained.vocabulary,
                                 lower_case=pretrained.lower_case,
                                 seq_length=self.config.seq_length)
        for sentences in (self.train, self.dev))
    for sentences, features in ((self.train, self.train_features),
                                (self.dev, self.dev_features)):
      if features.words_cut:
        log.warning("%s: %d words are past the end of --seq_length %d and go untagged",
                    sentences.path, features.words_cut, self.config.seq_length)

  def train_batches(self, batch_size: int, order: np.ndarray) -> tf.data.Dataset:
    return batches.batches(self.train_features.features, self.train_features.labels,
                           batch_size=batch_size, order=order)

  @staticmethod
  def head(encoder: keras.Model, num_labels: int, initializer_range: float) -> keras.Model:
    return tagging_model(without_pooler_training(encoder), num_labels,
                         initializer_range=initializer_range)

  @staticmethod
  def loss() -> keras.losses.Loss:
    return tagging_loss()

  def evaluate(self, model: keras.Model) -> tuple[dict, None]:
    logits = model.predict(self.dev_features.features, batch_size=DEV_BATCH, verbose=0)
    predicted = tagging.word_tags(np.argmax(logits, axis=-1), self.dev_features.first_pieces,
                                  self.labels)
    scores = entity_scores(self.dev.tags, predicted)
    return {"dev_entity_f1": scores["f1"], "dev_entity_precision": scores["precision"],
            "dev_entity_recall": scores["recall"],
            "dev_token_accuracy": float(scores["token_accuracy"]),
            "dev_entity_per_type": scores["per_type"]}, None

  @staticmethod
  def summary(figures: dict) -> str:
    return (f"dev entity F1 {figures['dev_entity_f1']:.4f} (precision "
            f"{figures['dev_entity_precision']:.4f}, recall "
            f"{figures['dev_entity_recall']:.4f}), token accuracy "
            f"{figures['dev_token_accuracy']:.4f}")

  @classmethod
  def serving(cls, model: keras.Model, task, vocabulary) -> Serving:
    module = WordTagger(model, vocabulary, task)
    function = signature(lambda **text: module.outputs(*checked_batch(**text)), "text")
    return Serving(module, function, {"tags.txt": task.labels})

  @classmethod
  def huggingface_head(cls, task) -> TaskHead:
    return TaskHead("BertForTokenClassification", "classifier", pooler=False,
                    config=label_names(task.labels))

  @staticmethod
  def portable_outputs(logits: tf.Tensor) -> dict:
    return {"logits": tf.cast(logits, tf.float32)}


KIND = Tag

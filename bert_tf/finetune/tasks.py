"""The task of a fine-tuning run, of any kind (`kinds/`): `task_kind(config)`, its files read
and checked; and `task_model`, a kind's compiled model on a model_dir's encoder, for Keras's
`fit` on your own data."""

import keras

from bert_tf.errors import UserError
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.glue import tasks as glue_tasks
from bert_tf.finetune.kinds.base import TaskKind
from bert_tf.finetune.kinds.registry import kind_named
from bert_tf.finetune.model import compile_task_model, load_pretrained


def task_kind(config: FinetuneConfig) -> TaskKind:
  """The kind `config.task` names (a GLUE task's own, with `--glue_task`), its files read and
  checked."""
  name = glue_tasks.glue_task(config.glue_task).kind if config.glue_task else config.task
  return kind_named(name)(config)


def task_model(model_dir: str, task: str, *, train_steps: int, num_labels: int = 0,
               seq_length: int = 128, learning_rate: float = 5e-5,
               warmup_steps: int | None = None, from_scratch: bool = False) -> keras.Model:
  """The compiled model of a task kind on `model_dir`'s encoder, for `fit` on your own data:
  classify (`num_labels` classes), regress, tag (`num_labels` tags), answer or choose
  (features [batch, endings, seq], logits [batch, endings]).

  `train_steps` is the number of updates the learning rate decays over; the warm-up is its
  first 10% unless given. `model.vocabulary` and `model.lower_case` are the encoder's, for
  `tagging.tagging_features` and `squad.squad_features`; for classify and regress,
  `model.text_features(texts)` (or `(texts_a, texts_b)`) turns raw strings into the input;
  for choose, `model.choice_features(contexts, endings)` (endings a list per context).
  """
  task_kind = kind_named(task)
  if task_kind.labelled and num_labels < 2:
    raise UserError(f"a {task} model needs num_labels of 2 or more, not {num_labels}")
  pretrained = load_pretrained(model_dir, from_scratch=from_scratch)
  model = compile_task_model(
      task_kind.head(pretrained.encoder, num_labels, pretrained.config.initializer_range),
      task_kind.loss(), learning_rate=learning_rate, train_steps=train_steps,
      warmup_steps=train_steps // 10 if warmup_steps is None else warmup_steps)
  model.vocabulary, model.lower_case = pretrained.vocabulary, pretrained.lower_case
  task_kind.for_keras(model, pretrained.vocabulary, lower_case=pretrained.lower_case,
                      seq_length=seq_length)
  return model

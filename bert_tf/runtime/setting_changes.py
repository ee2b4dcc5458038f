"""A run's settings against those its model_dir recorded when it last ran there.

The record is the run's config as JSON (pre-training's `train_config.json`); each setting's
declaration says what changing it means (`change=` in `bert_tf.settings.setting`). Any
workload's re-run on a model_dir compares through here: pre-training's does in
`bert_tf/training/run_changes.py`, which adds the corpus and the model.
"""

import dataclasses
import json
import os
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

from bert_tf import settings


def read_record(model_dir: str, name: str) -> dict | None:
  """The JSON file `name` of `model_dir`, or None when it has none."""
  path = os.path.join(model_dir, name)
  if not tf.io.gfile.exists(path):
    return None
  with tf.io.gfile.GFile(path) as f:
    return json.load(f)


def differences(recorded: dict, config) -> Iterator[tuple[dataclasses.Field, Any, Any]]:
  """(field, recorded value, this run's value) for each setting of `config` that differs; a
  setting the record lacks (it predates the setting) counts as its default."""
  for field in settings.declared(type(config)):
    before = recorded.get(field.name, field.default)
    after = getattr(config, field.name)
    if before != after:
      yield field, before, after


def shown(value) -> str:
  """A setting's value in a line: strings quoted."""
  return repr(value) if isinstance(value, str) else str(value)

"""A run's settings against those its model_dir recorded when it last ran there, each
difference said in one line the same way for every workload.

The record is the run's config as JSON (pre-training's `train_config.json` and checkpoint
record, fine-tuning's checkpoint record); each setting's declaration says what changing it
means (`change=` in `bert_tf.settings.setting`). Pre-training compares in
`bert_tf/training/run_changes.py`, which adds the corpus and the model; fine-tuning in
`bert_tf/finetune/rerun.py`.
"""

import dataclasses
import json
import logging
import os
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

from bert_tf import settings

log = logging.getLogger("bert_tf")

MEANING = {settings.STREAM: "a new stream", settings.MODEL: "the same model",
           settings.NOTED: "noted"}


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


def changed(field: dataclasses.Field, before, after) -> str:
  """A setting's change in words: `name before -> after`."""
  return f"{field.name} {shown(before)} -> {shown(after)}"


def say(directory: str, change: str, kind: str) -> None:
  """One line saying `change` (see `changed`), of the `kind` in `settings.CHANGES`."""
  log.info("Changed since %s last trained: %s (%s)", directory, change, MEANING[kind])

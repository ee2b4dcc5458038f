"""A fine-tune run again on an output_dir that holds its checkpoint: this run's settings
against those the checkpoint recorded, each difference said in one line as pre-training says
its own (`bert_tf/runtime/setting_changes.py`). The run goes on from the checkpoint whatever
else changed (a changed stream of examples, `change=STREAM`, is taken from the checkpoint's
step on in its own order); another task or other labels, whose head the checkpoint does not
hold, are an error, as is a checkpoint that is not a fine-tune's."""

import dataclasses
import os

from bert_tf import run_record, settings
from bert_tf.errors import UserError
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.model_dir import CHECKPOINTS
from bert_tf.runtime import setting_changes

RECORD = "finetune_config"  # the settings' key in a checkpoint's record


def record_of(config: FinetuneConfig, labels: list[str]) -> dict:
  """What each checkpoint of this run records of it: its settings and its labels."""
  return {RECORD: dataclasses.asdict(config), "labels": list(labels)}


def compare(config: FinetuneConfig, labels: list[str]) -> None:
  """Says each setting changed since the output_dir's checkpoint was saved; raises a UserError
  when the checkpoint is of another task or labels, or not a fine-tune's."""
  found = run_record.latest(config.output_dir)
  if not found:
    return
  checkpoint, record = found
  start_again = ("use another --output_dir, or remove "
                 f"{os.path.join(config.output_dir, CHECKPOINTS)} to start again")
  if RECORD not in record:
    raise UserError(f"{config.output_dir} holds checkpoints that are not a fine-tune's "
                    f"({checkpoint}): {start_again}")
  changes = [(setting_changes.changed(field, before, after), field.metadata["change"])
             for field, before, after in setting_changes.differences(record[RECORD], config)]
  another = [line for line, kind in changes if kind == settings.MODEL]
  if record["labels"] != list(labels):
    another.append(f"labels {', '.join(record['labels'])} -> {', '.join(labels)}")
  if another:
    raise UserError(f"the checkpoint {checkpoint} is of another fine-tune "
                    f"({'; '.join(another)}): {start_again}")
  for line, kind in changes:
    setting_changes.say(config.output_dir, line, kind)

"""Fine-tunes every GLUE task found in --glue_dir, each with `python -m bert_tf.finetune`'s
settings (seeds, grid, --predict_file=test), and writes the table: `python -m
bert_tf.finetune.glue --model_dir=runs/mine --glue_dir=glue_data --output_dir=runs/mine_glue`.
Each task's runs go to output_dir/<task's directory>/, the table to output_dir/glue.md and
glue.json, the server's files of every task to output_dir/submission/."""

import dataclasses
import os
import sys

from bert_tf import console

console.start(sys.argv)  # before TensorFlow is imported: its start-up lines, unless debug
from bert_tf.errors import UserError  # noqa: E402
from bert_tf.finetune.finetune_settings import FinetuneConfig  # noqa: E402  (no TensorFlow)
from bert_tf.finetune.glue import table, tasks  # noqa: E402


def run_glue(config: FinetuneConfig) -> dict:
  """Every task present in --glue_dir fine-tuned and scored; returns the table's JSON."""
  import tensorflow as tf

  from bert_tf import files
  from bert_tf.finetune import sweep
  from bert_tf.finetune.glue.reading import SUBMISSION
  present = tasks.present_tasks(config.glue_dir) if config.glue_dir else []
  if not present:
    raise UserError(f"no GLUE task in --glue_dir {config.glue_dir!r} (it holds CoLA/, "
                    "SST-2/, MRPC/, ... each with its train.tsv)")
  entries, submission = {}, os.path.join(config.output_dir, SUBMISSION)
  for task in present:
    summary = sweep.run(dataclasses.replace(
        config, glue_task=task.name, output_dir=os.path.join(config.output_dir, task.directory)))
    for path in summary["predictions"]:
      tf.io.gfile.makedirs(submission)
      files.copy(path, os.path.join(submission, os.path.basename(path)))
    entries[task.name] = table.task_entry(task, summary)
  results = table.glue_json(entries)
  files.write_json(os.path.join(config.output_dir, "glue.json"), results)
  files.write_text(os.path.join(config.output_dir, "glue.md"), table.glue_markdown(results))
  print(table.glue_markdown(results), end="")
  return results


if __name__ == "__main__":
  console.run_command(FinetuneConfig, run_glue)

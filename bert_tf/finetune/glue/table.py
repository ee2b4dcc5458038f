"""The GLUE table of a set of fine-tuned tasks: each task's dev metrics (mean and standard
deviation over seeds, of the grid cell kept), its score (`GlueTask.score`: the mean of its
metrics, as GLUE scores a task) and the macro average of the scores, as markdown and as JSON.
No TensorFlow."""

import numpy as np

from bert_tf.finetune.glue.tasks import GlueTask


def task_entry(task: GlueTask, summary: dict) -> dict:
  """The JSON entry of one task's sweep summary (`sweep.summarize`): its best cell."""
  best = summary["best"]
  return {"directory": task.directory, "mean": best["mean"], "std": best["std"],
          "score": task.score(best["mean"]),
          "learning_rate": best["learning_rate"], "batch_size": best["batch_size"],
          "seeds": len(best["seeds"])}


def glue_json(entries: dict[str, dict]) -> dict:
  """{"tasks": {task name: entry}, "macro_average": the mean of the task scores}."""
  return {"tasks": entries,
          "macro_average": float(np.mean([entry["score"] for entry in entries.values()]))}


def _percent(value: float) -> str:
  return f"{100 * value:.1f}"


def glue_markdown(table: dict) -> str:
  """The table of `glue_json`: figures as GLUE shows them, 100 times the fraction, with ± the
  standard deviation over seeds when there are several."""
  rows = ["| task | dev metrics | score | learning rate | batch size | seeds |",
          "|---|---|---|---|---|---|"]
  for entry in table["tasks"].values():
    figures = ", ".join(
        f"{name.replace('_', ' ')} {_percent(mean)}"
        + (f" ± {_percent(entry['std'][name])}" if entry["seeds"] > 1 else "")
        for name, mean in entry["mean"].items())
    rows.append(f"| {entry['directory']} | {figures} | {_percent(entry['score'])} | "
                f"{entry['learning_rate']:g} | {entry['batch_size']} | {entry['seeds']} |")
  rows.append(f"| macro average | | {_percent(table['macro_average'])} | | | |")
  return "\n".join(rows) + "\n"

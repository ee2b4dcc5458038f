"""The same fine-tune over seeds and a grid of learning rates and batch sizes, each run scored
on dev (a GLUE task by its own metrics, `glue.scoring`; else the run's metrics.json figures):
each seed's scores, their mean and standard deviation per grid cell, and the cell with the best
mean score kept; its best seed's run predicts the test file. `sweep.json` in output_dir holds
it all."""

import dataclasses
import logging
import os

import numpy as np

from bert_tf import files
from bert_tf.finetune import training
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.glue import scoring, tasks
from bert_tf.finetune.sweep_settings import number_list

log = logging.getLogger("bert_tf")

# The figure that ranks plain runs: the first of these the run's metrics.json has.
RANKING = ("dev_accuracy", "dev_pearson", "dev_entity_f1", "dev_f1")


def grid(config: FinetuneConfig) -> list[tuple[float, int]]:
  """(learning rate, batch size) of every cell; the run's own when no grid is given."""
  rates = number_list(config.learning_rates, float, "learning_rates") or [config.learning_rate]
  sizes = number_list(config.batch_sizes, int, "batch_sizes") or [config.batch_size]
  return [(rate, size) for rate in rates for size in sizes]


def seeds(config: FinetuneConfig) -> list[int]:
  return number_list(config.seeds, int, "seeds") or [config.seed]


def spread(values: list[float]) -> tuple[float, float]:
  """(mean, standard deviation) of a figure over seeds; the sample's deviation (n - 1), 0 for
  one seed."""
  values = np.asarray(values, np.float64)
  return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0


def task_score(figures: dict) -> float:
  """One number per run to rank by: the mean of a GLUE task's metrics (GLUE's task score), or
  a plain run's first `RANKING` figure."""
  ranked = [figures[name] for name in RANKING if name in figures]
  return ranked[0] if ranked else float(np.mean(list(figures.values())))


def summarize(runs: list[dict]) -> dict:
  """Per grid cell, the mean and spread of every figure over its seeds; the best cell (by the
  mean task score) with its best seed's run. `runs`: {"learning_rate", "batch_size", "seed",
  "output_dir", "scores"}."""
  cells = []
  for rate, size in dict.fromkeys((run["learning_rate"], run["batch_size"]) for run in runs):
    own = [run for run in runs if (run["learning_rate"], run["batch_size"]) == (rate, size)]
    names = list(own[0]["scores"])
    figures = {name: spread([run["scores"][name] for run in own]) for name in names}
    cells.append({"learning_rate": rate, "batch_size": size,
                  "seeds": {run["seed"]: run["scores"] for run in own},
                  "mean": {name: mean for name, (mean, _) in figures.items()},
                  "std": {name: std for name, (_, std) in figures.items()},
                  "score": spread([task_score(run["scores"]) for run in own])[0],
                  "best_run": max(own, key=lambda run: task_score(run["scores"]))["output_dir"]})
  return {"cells": cells, "best": max(cells, key=lambda cell: cell["score"])}


def _run_dir(config: FinetuneConfig, rate: float, size: int, seed: int, single: bool) -> str:
  return config.output_dir if single else os.path.join(
      config.output_dir, f"lr{rate:g}_batch{size}_seed{seed}")


def _scores(run_dir: str, glue_task, glue_dev, results: dict) -> dict:
  """A run's dev figures: a GLUE task's own metrics, else metrics.json's figures."""
  if glue_task is None:
    return {name: value for name, value in results.items()
            if name.startswith("dev_") and name != "dev_examples" and isinstance(value, float)}
  return scoring.dev_scores(glue_task, glue_dev, run_dir)


def run(config: FinetuneConfig) -> dict:
  """Fine-tunes every (cell, seed), scores each on dev, writes and returns the summary, and
  predicts `--predict_file` with the best run."""
  config.check()
  config.check_sweep()
  glue_task = tasks.glue_task(config.glue_task) if config.glue_task else None
  base = tasks.task_config(glue_task, config) if glue_task else config
  cells, seed_list = grid(config), seeds(config)
  predicted = to_predict(base, glue_task)  # read, as the dev sets, before anything trains
  glue_dev = scoring.read_dev(glue_task, config.glue_dir) if glue_task else None
  runs = []
  for rate, size in cells:
    for seed in seed_list:
      run_config = dataclasses.replace(
          base, learning_rate=rate, batch_size=size, seed=seed,
          output_dir=_run_dir(config, rate, size, seed, len(cells) * len(seed_list) == 1))
      results = training.finetune(run_config)
      scores = _scores(run_config.output_dir, glue_task, glue_dev, results)
      log.info("learning rate %g, batch %d, seed %d: %s", rate, size, seed,
               ", ".join(f"{name} {value:.4f}" for name, value in scores.items()))
      runs.append({"learning_rate": rate, "batch_size": size, "seed": seed,
                   "output_dir": run_config.output_dir, "scores": scores})
  summary = {"task": config.glue_task or None, "runs": runs, **summarize(runs)}
  summary["predictions"] = scoring.write_all(
      predicted, summary["best"]["best_run"], kind=base.task,
      pair=len(base.text_columns.split(",")) == 2, output_dir=config.output_dir
  ) if predicted else []
  files.write_json(os.path.join(config.output_dir, "sweep.json"), summary)
  return summary


def to_predict(config: FinetuneConfig, glue_task) -> list:
  """`--predict_file` read before anything trains: [(file to write, indices, texts)]."""
  if not config.predict_file:
    return []
  if glue_task is not None:
    return scoring.read_test_files(glue_task, config.glue_dir)
  columns = [name.strip() for name in config.text_columns.split(",")]
  return [("predictions.tsv", *scoring.read_test(config.predict_file, columns,
                                                 header=not config.no_header))]


def report(summary: dict) -> None:
  """The summary on the console: each cell's seeds, mean and standard deviation; the best."""
  for cell in summary["cells"]:
    print(f"learning rate {cell['learning_rate']:g}, batch size {cell['batch_size']}:")
    for seed, scores in cell["seeds"].items():
      print(f"  seed {seed}: " + ", ".join(f"{n} {v:.4f}" for n, v in scores.items()))
    print("  mean: " + ", ".join(f"{name} {value:.4f} ± {cell['std'][name]:.4f}"
                                 for name, value in cell["mean"].items()))
  best = summary["best"]
  print(f"Best: learning rate {best['learning_rate']:g}, batch size {best['batch_size']} "
        f"(mean score {best['score']:.4f}); its best run is in {best['best_run']}.")
  for path in summary["predictions"]:
    print(f"Predictions: {path}")

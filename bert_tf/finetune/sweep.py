"""The same fine-tune over seeds and a grid of learning rates and batch sizes: each seed's dev
figures (a GLUE task's own, else the run's metrics.json figures), their mean and standard
deviation per grid cell, and the cell with the best mean score kept, a run's score being the
figure that chose its epoch (`ranked_by`, a GLUE task's score first); the cell's best seed
predicts the test files. `sweep.json` in output_dir holds it all. A single run (a GLUE task
or predictions, no seeds nor grid) goes through here too, in output_dir itself, and is a run:
no table, no sweep.json."""

import dataclasses
import logging
import os

import numpy as np

from bert_tf import files
from bert_tf.finetune import predictor, training
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.finetune.glue import reading, tasks
from bert_tf.finetune.kinds.registry import kind_named
from bert_tf.finetune.sweep_settings import number_list

log = logging.getLogger("bert_tf")


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


def summarize(runs: list[dict]) -> dict:
  """Per grid cell, the mean and spread of every figure over its seeds; the best cell (by its
  seeds' mean score) with its best seed's run (by score; the first of equals). `runs`:
  {"learning_rate", "batch_size", "seed", "output_dir", "scores", "score"}."""
  cells = []
  for rate, size in dict.fromkeys((run["learning_rate"], run["batch_size"]) for run in runs):
    own = [run for run in runs if (run["learning_rate"], run["batch_size"]) == (rate, size)]
    names = list(own[0]["scores"])
    figures = {name: spread([run["scores"][name] for run in own]) for name in names}
    cells.append({"learning_rate": rate, "batch_size": size,
                  "seeds": {run["seed"]: run["scores"] for run in own},
                  "mean": {name: mean for name, (mean, _) in figures.items()},
                  "std": {name: std for name, (_, std) in figures.items()},
                  "score": spread([run["score"] for run in own])[0],
                  "best_run": max(own, key=lambda run: run["score"])["output_dir"]})
  return {"cells": cells, "best": max(cells, key=lambda cell: cell["score"])}


def is_single(config: FinetuneConfig) -> bool:
  """Whether the command is one run: no seeds nor grid beyond its own."""
  return len(grid(config)) * len(seeds(config)) == 1


def _run_dir(config: FinetuneConfig, rate: float, size: int, seed: int, single: bool) -> str:
  return config.output_dir if single else os.path.join(
      config.output_dir, f"lr{rate:g}_batch{size}_seed{seed}")


def scored(results: dict, glue_task) -> tuple[dict, float]:
  """(dev figures, score) of a run from its metrics.json `results`: the figures are a GLUE
  task's own (`score_names`), else every dev figure; the score is the figure that chose the
  run's epoch (the first it is `ranked_by`: a GLUE task's score, a classifier's accuracy)."""
  if glue_task is not None:
    figures = {name: results[f"dev_{name}"] for name in glue_task.score_names}
  else:
    figures = {name: value for name, value in results.items()
               if name.startswith("dev_") and name != "dev_examples" and isinstance(value, float)}
  return figures, results[results["ranked_by"][0]]


def run(config: FinetuneConfig) -> dict:
  """Fine-tunes every (cell, seed), scores each on dev, writes (several runs) and returns the
  summary, and predicts `--predict_file` with the best run. The summary's `results` are the
  last run's figures (its metrics.json), a single run's own."""
  config.check()
  glue_task = tasks.glue_task(config.glue_task) if config.glue_task else None
  cells, seed_list = grid(config), seeds(config)
  predicted = to_predict(config, glue_task)  # read before anything trains
  runs = []
  for rate, size in cells:
    for seed in seed_list:
      run_config = dataclasses.replace(
          config, learning_rate=rate, batch_size=size, seed=seed,
          output_dir=_run_dir(config, rate, size, seed, is_single(config)))
      results = training.finetune(run_config)
      scores, score = scored(results, glue_task)
      log.info("learning rate %g, batch %d, seed %d: %s", rate, size, seed,
               ", ".join(f"{name} {value:.4f}" for name, value in scores.items()))
      runs.append({"learning_rate": rate, "batch_size": size, "seed": seed,
                   "output_dir": run_config.output_dir, "scores": scores, "score": score})
  summary = {"task": config.glue_task or None, "scored_by": results["ranked_by"][0],
             "runs": runs, **summarize(runs)}
  summary["predictions"] = predictor.write_all(
      predicted, summary["best"]["best_run"], config.output_dir) if predicted else []
  if not is_single(config):
    files.write_json(os.path.join(config.output_dir, "sweep.json"), summary)
  return {**summary, "results": results}


def to_predict(config: FinetuneConfig, glue_task) -> list:
  """`--predict_file` read before anything trains, by its kind (`to_predict`): [(file to
  write, indices, columns)]."""
  if not config.predict_file:
    return []
  if glue_task is not None:
    return reading.read_test_files(glue_task, config.glue_dir)
  return [("predictions.tsv", *kind_named(config.task).to_predict(config))]


def report(summary: dict) -> None:
  """The summary of several runs on the console: each cell's seeds, mean and standard
  deviation; the best; the predictions."""
  for cell in summary["cells"]:
    print(f"learning rate {cell['learning_rate']:g}, batch size {cell['batch_size']}:")
    for seed, scores in cell["seeds"].items():
      print(f"  seed {seed}: " + ", ".join(f"{n} {v:.4f}" for n, v in scores.items()))
    print("  mean: " + ", ".join(f"{name} {value:.4f} ± {cell['std'][name]:.4f}"
                                 for name, value in cell["mean"].items()))
  best = summary["best"]
  print(f"Best: learning rate {best['learning_rate']:g}, batch size {best['batch_size']} "
        f"(mean {summary['scored_by']} {best['score']:.4f}); its best run is in "
        f"{best['best_run']}.")
  report_predictions(summary)


def report_predictions(summary: dict) -> None:
  for path in summary["predictions"]:
    print(f"Predictions: {path}")

"""The end-of-run report: a short text summary and a plot of the loss and accuracy curves."""

import json

import tensorflow as tf


def plot_curves(history_path: str, png_path: str, baseline_accuracy: float) -> None:
  """Draws losses and accuracies against optimizer steps from `TrainingCurves`' file."""
  import matplotlib
  matplotlib.use("Agg")  # no display needed
  from matplotlib import pyplot

  with tf.io.gfile.GFile(history_path) as f:
    records = [json.loads(line) for line in f if line.strip()]
  steps = [r["step"] for r in records]
  figure, (losses, accuracies) = pyplot.subplots(1, 2, figsize=(11, 4))
  for name in ("loss", "mlm_loss", "nsp_loss"):
    losses.plot(steps, [r.get(name) for r in records], label=name)
  for name in ("mlm_accuracy", "nsp_accuracy"):
    accuracies.plot(steps, [r.get(name) for r in records], label=name)
  accuracies.axhline(baseline_accuracy, color="gray", linestyle=":",
                     label="most frequent token")
  accuracies.axhline(0.5, color="gray", linestyle="--", label="NSP chance")
  for axes, title in ((losses, "Loss"), (accuracies, "Accuracy")):
    axes.set_xlabel("step")
    axes.set_title(title + " (running mean within each checkpoint interval)")
    axes.legend()
    axes.grid(alpha=0.3)
  figure.tight_layout()
  with tf.io.gfile.GFile(png_path, "wb") as f:
    figure.savefig(f, format="png", dpi=100)
  pyplot.close(figure)


def summary(metrics: dict) -> str:
  """The final figures in three lines, the baselines beside the accuracies."""
  return "\n".join([
      f"Trained {metrics['steps']} steps at {metrics['examples_per_second']:.0f} examples/s.",
      f"MLM accuracy {metrics['mlm_accuracy']:.3f} (always predicting the most frequent "
      f"token: {metrics['most_frequent_token_accuracy']:.3f}); MLM loss "
      f"{metrics['mlm_loss']:.3f}.",
      f"NSP accuracy {metrics['nsp_accuracy']:.3f} (chance: 0.5); NSP loss "
      f"{metrics['nsp_loss']:.3f}.",
  ])

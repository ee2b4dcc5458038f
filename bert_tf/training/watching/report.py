"""The end-of-run report: a short text summary and a plot of the loss and accuracy curves."""

import json

import tensorflow as tf

from bert_tf.console import counted

RANDOM = "probe_random_"  # the probe's figure on random weights, beside `probe_<figure>`


def probe_figure(record: dict) -> str | None:
  """The figure a record's probe reports (its task kind's: `accuracy`, `f1`, ...), or None
  without one."""
  return next((name.removeprefix(RANDOM) for name in record if name.startswith(RANDOM)), None)


def plot_curves(history_path: str, png_path: str, baseline_accuracy: float) -> None:
  """Draws losses and accuracies against optimizer steps from `history.jsonl`: training's
  windowed means (solid) and the held-out evaluations (dashed, same colour), when there are."""
  import matplotlib
  matplotlib.use("Agg")  # no display needed
  from matplotlib import pyplot

  records = []
  if tf.io.gfile.exists(history_path):  # none when the run trained no step
    with tf.io.gfile.GFile(history_path) as f:
      records = [json.loads(line) for line in f if line.strip()]
  figure, (losses, accuracies) = pyplot.subplots(1, 2, figsize=(11, 4))
  for axes, names in ((losses, ("loss", "mlm_loss", "nsp_loss")),
                      (accuracies, ("mlm_accuracy", "nsp_accuracy"))):
    for name in names:
      train = [(r["step"], r[name]) for r in records if name in r]
      held_out = [(r["step"], r["eval_" + name]) for r in records if "eval_" + name in r]
      (line,) = axes.plot(*zip(*train), label=name) if train else axes.plot([], [])
      if held_out:
        axes.plot(*zip(*held_out), color=line.get_color(), linestyle="--", marker=".",
                  label=f"{name} (held out)")
  probe = [r for r in records if probe_figure(r)]
  if probe:
    name = probe_figure(probe[-1])
    (line,) = accuracies.plot([r["step"] for r in probe], [r[f"probe_{name}"] for r in probe],
                              linestyle="--", marker="o",
                              label=f"probe (dev {name.replace('_', ' ')})")
    accuracies.axhline(probe[-1][f"probe_random_{name}"], color=line.get_color(),
                       linestyle=":", label="probe on random weights")
  accuracies.axhline(baseline_accuracy, color="gray", linestyle=":",
                     label="most frequent token")
  accuracies.axhline(0.5, color="gray", linestyle="-.", label="NSP chance")
  for axes, title in ((losses, "Loss"), (accuracies, "Accuracy")):
    axes.set_xlabel("step")
    axes.set_title(title + " (training: the mean of each --log_every steps)", fontsize=9)
    axes.legend(fontsize=7)
    axes.grid(alpha=0.3)
  figure.tight_layout()
  with tf.io.gfile.GFile(png_path, "wb") as f:
    figure.savefig(f, format="png", dpi=100)
  pyplot.close(figure)


def summary(metrics: dict, nsp: bool = True) -> str:
  """The final figures in three lines (the rates over training time only), the baselines
  beside the accuracies, a fourth for the held-out data when there is some, and one for the
  probe. MLM only (`nsp` False) leaves out the NSP line and figures: of a head nothing
  trained."""
  tokens = (f" ({metrics['tokens_per_second']:,.0f} real tokens/s, "
            f"{metrics['padding_share']:.0%} padding)" if "tokens_per_second" in metrics else "")
  return "\n".join([
      f"Trained {counted(metrics['steps'], 'step')} at "
      f"{metrics['examples_per_second']:,.0f} examples/s"
      f"{tokens}.",
      f"MLM accuracy {metrics['mlm_accuracy']:.3f} (always predicting the most frequent "
      f"token: {metrics['most_frequent_token_accuracy']:.3f}); MLM loss "
      f"{metrics['mlm_loss']:.3f}.",
      *([f"NSP accuracy {metrics['nsp_accuracy']:.3f} (chance: 0.5); NSP loss "
         f"{metrics['nsp_loss']:.3f}."] if nsp else []),
      *([_held_out(metrics, nsp)] if "eval_mlm_loss" in metrics else []),
      *[f"Probe: dev {name.replace('_', ' ')} {metrics[f'probe_{name}']:.3f} after "
        f"fine-tuning a copy of the encoder (the same on random weights: "
        f"{metrics[f'probe_random_{name}']:.3f})." for name in [probe_figure(metrics)] if name],
  ])


def _held_out(metrics: dict, nsp: bool) -> str:
  nsp_figures = (f"; NSP accuracy {metrics['eval_nsp_accuracy']:.3f}, NSP loss "
                 f"{metrics['eval_nsp_loss']:.3f}" if nsp else "")
  return (f"Held out: MLM accuracy {metrics['eval_mlm_accuracy']:.3f}, MLM loss "
          f"{metrics['eval_mlm_loss']:.3f}{nsp_figures}.")

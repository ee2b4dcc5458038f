"""The progress line: counted in optimizer steps from where the run starts, printed every N
steps off a terminal and rewritten in place on one, with the last window's figures; it never
reads the logs."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.watching import progress, run_time
from bert_tf.training.watching.callbacks import TrainingWindow


def test_progress_line():
  line = progress.progress_line(1500, 2000, 79.2, 380, {
      "loss": 5.1234, "mlm_loss": 4.47, "nsp_loss": 0.4271, "mlm_accuracy": 0.193,
      "nsp_accuracy": 0.795, "learning_rate": 1e-3})
  assert line == ("step 1,500/2,000 | 79 examples/s | 6m 20s left | loss: 5.1234 "
                  "mlm_loss: 4.4700 nsp_loss: 0.4271 mlm_accuracy: 0.1930 nsp_accuracy: 0.7950")
  assert progress.progress_line(1, 10, None, None, {"loss": 2}) == "step 1/10 | loss: 2.0000"
  mlm_only = progress.progress_line(1, 10, None, None, {
      "loss": 4.0, "mlm_loss": 4.0, "nsp_loss": 0.0, "nsp_accuracy": 0.0}, nsp=False)
  assert mlm_only == "step 1/10 | loss: 4.0000 mlm_loss: 4.0000"


def test_lines_every():
  assert [progress.lines_every(n) for n in (6, 100, 2000, 1_000_000)] == [1, 5, 100, 100]
  # A multiple of --log_every: each line shows a window of its own.
  assert [progress.lines_every(n, 20) for n in (100, 300, 2000, 5000)] == [20, 20, 100, 100]


def fit(callback, *, start_step=0, steps=12, steps_per_epoch=5, steps_per_execution=1,
        log_every=1):
  """Fits a one-weight model `steps` updates (in epochs of `steps_per_epoch`) from
  `start_step`, as a resumed run would, with a window of `log_every` steps shown; returns
  the model and the windows' records."""
  model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
  model.compile(optimizer="sgd", loss="mse", steps_per_execution=steps_per_execution)
  model.optimizer.build(model.trainable_variables)
  model.optimizer.iterations.assign(start_step)
  x, y = np.ones((4, 2), "float32"), np.ones((4, 1), "float32")
  data = tf.data.Dataset.from_tensors((x, y)).repeat()

  def stop_at_the_last_step(batch, logs):  # as the trainer's checkpoint callback does
    if int(model.optimizer.iterations.numpy()) >= start_step + steps:
      model.stop_training = True

  records = []
  window = TrainingWindow(log_every, global_batch_size=4, seq_length=2,
                          learning_rate=lambda steps: 0 * steps, clock=run_time.Clock(),
                          listeners=[callback.add, records.append])
  model.fit(data, epochs=-(-steps // steps_per_epoch), steps_per_epoch=steps_per_epoch,
            verbose=0, shuffle=False, callbacks=[
                window, callback,
                keras.callbacks.LambdaCallback(on_train_batch_end=stop_at_the_last_step)])
  return model, records


def printed_steps(text: str) -> list[int]:
  return [int(line.split()[1].split("/")[0].replace(",", "")) for line in text.splitlines()
          if line.startswith("step ")]


@pytest.mark.parametrize("steps_per_execution, printed", [
    (1, [1004, 1008, 1012, 1015]),  # every 4 steps from the resumed step, and the last one
    (3, [1006, 1009, 1012, 1015]),  # Keras calls once per 3 steps: the first call past each
])
def test_off_a_terminal_a_line_every_n_steps_from_the_resumed_step(capsys,
                                                                    steps_per_execution,
                                                                    printed):
  callback = progress.Progress(train_steps=1015, terminal=False, every_steps=4)
  model, _ = fit(callback, start_step=1000, steps=15, steps_per_epoch=6,
              steps_per_execution=steps_per_execution, log_every=2)
  assert callback.step == int(model.optimizer.iterations.numpy()) == 1015
  out = capsys.readouterr().out
  assert printed_steps(out) == printed
  assert all("/1,015 | " in line and "loss: " in line for line in out.splitlines())
  assert "examples/s" in out.splitlines()[-1] and "left" in out.splitlines()[-1]
  assert "\r" not in out


def test_on_a_terminal_the_line_is_rewritten_in_place(capsys, monkeypatch):
  monkeypatch.setattr("shutil.get_terminal_size", lambda: __import__("os").terminal_size(
      (60, 24)))
  callback = progress.Progress(train_steps=6, terminal=True, every_seconds=0)
  fit(callback, steps=6, steps_per_epoch=3)
  out = capsys.readouterr().out
  drawn = out.split("\r\033[K")
  assert [piece.split()[1] for piece in drawn if piece] == [f"{s}/6" for s in range(1, 7)]
  assert out.endswith("\n") and out.count("\n") == 1
  assert all(len(piece.rstrip("\n")) <= 59 for piece in drawn)


def test_the_line_shows_the_last_windows_figures(capsys):
  callback = progress.Progress(train_steps=8, terminal=False, every_steps=4)
  _, records = fit(callback, steps=8, steps_per_epoch=8, log_every=4)
  lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
  assert [r["step"] for r in records] == [4, 8] and len(lines) == 2
  for line, record in zip(lines, records):
    assert line.endswith(f"loss: {record['loss']:.4f}")
    assert f"| {record['examples_per_second']:,.0f} examples/s |" in line


class Counted(float):
  """A log value that counts how often it is read (a read of a device tensor)."""

  reads = 0

  def __float__(self):
    Counted.reads += 1
    return super().__float__()


def test_the_logs_are_never_read(capsys):
  class FakeOptimizer:
    iterations = keras.Variable(0)

  callback = progress.Progress(train_steps=100, terminal=False, every_steps=10)
  callback.set_model(type("Model", (), {"optimizer": FakeOptimizer()})())
  callback.on_train_begin()
  callback.on_epoch_begin(0)
  Counted.reads = 0
  for batch in range(25):
    callback.on_train_batch_end(batch, {"loss": Counted(1.0)})
  assert Counted.reads == 0
  assert printed_steps(capsys.readouterr().out) == [10, 20]

"""Where a run's wall time goes: training, start-up (the first step traces and compiles),
checkpoints, held-out evaluations, probes, and the rest; one line at the end says it."""

import functools
import time

TRAINING = "training"
START_UP = "start-up"
CHECKPOINTS = "checkpoints"
EVALUATIONS = "held-out evaluations"
PROBES = "probes"


def duration(seconds: float) -> str:
  """3h 05m, 6m 20s, 42s."""
  seconds = int(round(seconds))
  if seconds >= 3600:
    return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
  if seconds >= 60:
    return f"{seconds // 60}m {seconds % 60:02d}s"
  return f"{seconds}s"


class Clock:
  """Seconds by kind of work, and the wall time since it was made. A timed call inside another
  (a probe inside a held-out evaluation) counts under its own kind only."""

  def __init__(self):
    self.started = time.perf_counter()
    self.seconds = {}
    self._nested = []  # per timed call under way: the seconds of the calls timed inside it

  def add(self, kind: str, seconds: float) -> None:
    self.seconds[kind] = self.seconds.get(kind, 0.0) + seconds

  def timing(self, kind: str, function):
    """`function`, its calls' time added under `kind`."""
    @functools.wraps(function)
    def timed(*args, **kwargs):
      start = time.perf_counter()
      self._nested.append(0.0)
      try:
        return function(*args, **kwargs)
      finally:
        elapsed = time.perf_counter() - start
        self.add(kind, elapsed - self._nested.pop())
        if self._nested:
          self._nested[-1] += elapsed
    return timed

  def split(self) -> str:
    """"Wall time 5m 02s: training 81% (4m 05s), start-up 6% (18s), ..., other 1% (3s)"."""
    wall = time.perf_counter() - self.started
    other = max(0.0, wall - sum(self.seconds.values()))
    parts = [f"{kind} {seconds / wall:.0%} ({duration(seconds)})"
             for kind, seconds in [*self.seconds.items(), ("other", other)] if wall]
    return f"Wall time {duration(wall)}: " + ", ".join(parts)

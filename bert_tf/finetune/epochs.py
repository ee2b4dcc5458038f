"""Where a fine-tune is in its training data, and the order each epoch takes the examples in.

A fine-tune's data is a finite set of rows read into memory, taken once per epoch in an order
drawn from the seed and the epoch's number alone: any epoch's order is known without the
epochs before it. So the run's position is one number, the batches trained since its start
(saved in each checkpoint), and a run resumed there trains on the batches an uninterrupted
run would have: the rest of its epoch, in the same order, then the epochs after it.
"""

import dataclasses
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class EpochPlan:
  """`epochs` passes over `rows` training rows in batches of `batch_size`, shuffled by `seed`."""

  rows: int
  batch_size: int
  epochs: int
  seed: int

  @property
  def steps_per_epoch(self) -> int:
    return math.ceil(self.rows / self.batch_size)  # the last batch may be short

  @property
  def train_steps(self) -> int:
    return self.steps_per_epoch * self.epochs

  def position(self, batches: int) -> tuple[int, int]:
    """(epoch, batch within it) of the next batch after `batches` trained."""
    return divmod(batches, self.steps_per_epoch)

  def order(self, epoch: int, first_batch: int = 0) -> np.ndarray:
    """The rows epoch `epoch` takes from its batch `first_batch` on, in order."""
    rows = np.random.default_rng([self.seed, epoch]).permutation(self.rows)
    return rows[first_batch * self.batch_size:]

"""Dealing the unread pieces of a stream to another number of input pipelines
(docs/design.md#another-number-of-workers).

A run re-run with more or fewer input pipelines (workers) cannot start each new pipeline at a
recorded position: the positions index the old pipelines' shares of the pieces. What the old
pipelines had left of their current epoch (the rest of the piece each stood in, from the example
after its last one, and the pieces after it in its epoch's order) is dealt to the new pipelines,
which read it first: a *carried* list of pieces per pipeline, whose keys are (the carried
epoch, rank in the list, example rank in the piece). After it every new pipeline goes on with
the next epoch, shared the usual way among the new pipelines. So each piece of the interrupted
epoch is read once, from where it stood: no example twice, none skipped.

The same dealing serves every stream made of pieces read in an order drawn from the epoch:
a text corpus's pieces (keys of `stream_position`), each group's of a mixture (one layout per
group), and original BERT's record files or their shares (keys of `record_position`).

This module is pure: the epochs' orders, the pipelines' shares and the keys' packing are
given to it.
"""

import dataclasses
import itertools
import json
from collections.abc import Callable

from bert_tf.data import stream_position


@dataclasses.dataclass(frozen=True)
class Unread:
  """The rest of one piece in one epoch: its examples from `first_example` on. `piece` is its
  index in the plan made for `plan_pipelines` input pipelines (the plan of a small corpus
  depends on that number: `pieces.plan_pieces`' `min_pieces`)."""
  epoch: int
  piece: int
  plan_pipelines: int
  first_example: int = 0


@dataclasses.dataclass(frozen=True)
class Layout:
  """How the data position of a checkpoint is to be read: the number of input pipelines that
  made it and, after a change of that number, each pipeline's carried pieces (read first, with
  keys of the epoch `carried_epoch`; the pipeline's own epochs start at `carried_epoch + 1`).
  A mixture's groups are dealt each within itself: `groups` holds one such layout per group
  (of the same pipelines), and this one carries nothing itself."""
  pipelines: int
  carried_epoch: int = -1
  carried: tuple[tuple[Unread, ...], ...] = ()  # one tuple per pipeline, or () when none
  groups: tuple["Layout", ...] = ()  # a mixture's, once dealt; () otherwise

  def carried_by(self, pipeline: int) -> tuple[Unread, ...] | None:
    """The pieces carried by `pipeline`, None when this layout carries none."""
    return self.carried[pipeline] if self.carried else None

  def group(self, group: int) -> "Layout":
    """The layout of a mixture's group `group`: its own once dealt, else one that carries
    nothing."""
    return self.groups[group] if self.groups else Layout(self.pipelines)

  def to_json(self) -> str:
    return json.dumps(self._values())

  def _values(self) -> dict:
    return {"pipelines": self.pipelines, "carried_epoch": self.carried_epoch,
            "carried": [[dataclasses.astuple(u) for u in mine] for mine in self.carried],
            **({"groups": [group._values() for group in self.groups]} if self.groups else {})}

  @classmethod
  def from_json(cls, text: str) -> "Layout":
    return cls._of(json.loads(text))

  @classmethod
  def _of(cls, values: dict) -> "Layout":
    """From `_values`; a layout written before mixtures were dealt has no "groups"."""
    return cls(values["pipelines"], values["carried_epoch"],
               tuple(tuple(Unread(*u) for u in mine) for mine in values["carried"]),
               tuple(cls._of(group) for group in values.get("groups", ())))


def unread(next_key: int, share: list[int], order: Callable[[int], list[int]],
           plan_pipelines: int, through_epoch: int,
           carried: tuple[Unread, ...] | None = None, carried_epoch: int = -1,
           positions=stream_position, interleaved: bool = False) -> list[Unread]:
  """What one old pipeline has left up to the end of `through_epoch`, in the order it would
  have read it, from `next_key`, the key after its last example: first the rest of its carried
  pieces (if `next_key` is among their keys), then the rest of each epoch.

  `share`: the plan indices of the pipeline's pieces; `order(epoch)`: the permutation of
  range(len(share)) the pipeline reads them in that epoch; `positions`: the module that packs
  the keys (`stream_position` or `record_position`). `interleaved`: the pipeline reads each
  epoch's pieces interleaved instead (unshuffled records), example j of its f-th piece keyed
  (epoch, 0, j * len(share) + f); what is left of each piece starts at its first example not
  yet read."""
  epoch, rank, example = positions.decode(next_key)
  left = []
  if carried is not None:
    if epoch <= carried_epoch:
      left += [dataclasses.replace(u, first_example=example) if i == rank else u
               for i, u in enumerate(carried) if i >= rank]
      epoch, rank, example = carried_epoch + 1, 0, 0
  for e in range(epoch, through_epoch + 1):
    if interleaved:
      k, count = (example if e == epoch else 0), len(share)
      left += [Unread(e, share[f], plan_pipelines, max(0, -(-(k - f) // count)))
               for f in range(count)]
      continue
    permutation = order(e)
    first = rank if e == epoch else 0
    left += [Unread(e, share[permutation[r]], plan_pipelines,
                    example if (e == epoch and r == rank) else 0)
             for r in range(first, len(share))]
  return left


def deal(left: list[list[Unread]], pipelines: int) -> tuple[tuple[Unread, ...], ...]:
  """The old pipelines' unread pieces (`left`, one list each) dealt to `pipelines` new ones:
  taken in turn from each old list (so the pieces each old pipeline had begun come first, and
  earlier epochs before later ones), the k-th to new pipeline k mod `pipelines`. The new
  pipelines' counts differ by at most one piece."""
  turns = [u for turn in itertools.zip_longest(*left) for u in turn if u is not None]
  return tuple(tuple(turns[p::pipelines]) for p in range(pipelines))


def first_key(carried_epoch: int, mine: tuple[Unread, ...], positions=stream_position) -> int:
  """The key of a new pipeline's first example: its first carried piece's next example, or
  the first example of the epoch after the carried ones when it carries none."""
  if mine:
    return positions.encode(carried_epoch, 0, mine[0].first_example)
  return positions.encode(carried_epoch + 1, 0, 0)


def redeal(next_keys: list[int], old: Layout, shares: list[list[int]],
           order: Callable[[int, int], list[int]], plan_pipelines: int,
           pipelines: int, positions=stream_position,
           interleaved: bool = False) -> tuple[Layout, list[int]]:
  """The layout of `pipelines` new input pipelines that go on from the old pipelines' next
  keys (one each), and each new pipeline's first key.

  The epoch carried on is the latest any old pipeline has begun (pipelines drift apart by the
  sizes of their pieces): every old pipeline's unread pieces up to its end are dealt, and the
  new pipelines' own epochs start after it. `shares[p]`: the plan indices of old pipeline p's
  pieces, in the plan for `plan_pipelines`; `order(epoch, count)`: the permutation of
  range(count) a pipeline reads its pieces in that epoch; `positions`, `interleaved`: as
  `unread`'s."""
  through = max(positions.decode(key)[0] for key in next_keys)
  left = [unread(key, share, _orders_of(order, len(share)), plan_pipelines, through,
                 old.carried_by(p), old.carried_epoch, positions, interleaved)
          for p, (key, share) in enumerate(zip(next_keys, shares))]
  layout = Layout(pipelines, through, deal(left, pipelines))
  return layout, [first_key(through, mine, positions) for mine in layout.carried]


def _orders_of(order: Callable[[int, int], list[int]], count: int) -> Callable[[int], list[int]]:
  """A pipeline's order of its `count` pieces, by epoch."""
  return lambda epoch: order(epoch, count)

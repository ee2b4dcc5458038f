"""Dealing the unread pieces of an epoch to another number of input pipelines: pure, on a
simulated corpus of pieces of known sizes, read the way the pipeline reads its stream (its
carried pieces first, keyed (carried epoch, rank, example), then its own epochs). Whatever
the old pipelines had read, and however often the number changes, every example of the epochs
carried on is read exactly once."""

import random

import pytest

from bert_tf.data import record_position, stream_position
from bert_tf.data.piece_deal import Layout, Unread, deal, redeal, unread

PLAN = 1  # the simulated plan is the same for every number of pipelines


def order(epoch, count):
  """A pipeline's order of its pieces in an epoch: a permutation drawn from the epoch."""
  permutation = list(range(count))
  random.Random(epoch * 1000 + count).shuffle(permutation)
  return permutation


def shares(plan_size, pipelines):
  return [list(range(p, plan_size, pipelines)) for p in range(pipelines)]


def stream(sizes, layout, pipeline, pipelines, next_key, positions=stream_position):
  """The examples (epoch, piece, example) of a pipeline's stream from `next_key` on, as the
  pipeline makes them, each with its key (packed by `positions`)."""
  epoch, rank, example = positions.decode(next_key)
  carried = layout.carried_by(pipeline) if layout else None
  if carried is not None and epoch <= layout.carried_epoch:
    for r in range(rank, len(carried)):
      u = carried[r]
      for x in range(example if r == rank else u.first_example, sizes[u.piece]):
        yield (u.epoch, u.piece, x), positions.encode(layout.carried_epoch, r, x)
    epoch, rank, example = layout.carried_epoch + 1, 0, 0
  share = shares(len(sizes), pipelines)[pipeline]
  while True:
    permutation = order(epoch, len(share))
    for r in range(rank, len(share)):
      piece = share[permutation[r]]
      for x in range(example if r == rank else 0, sizes[piece]):
        yield (epoch, piece, x), positions.encode(epoch, r, x)
      example = 0
    epoch, rank = epoch + 1, 0


def read(sizes, layout, pipelines, next_keys, counts, seen, positions=stream_position):
  """Each pipeline reads `counts[p]` examples from `next_keys[p]` (added to `seen`); returns
  the keys after each one's last."""
  after = []
  for p in range(pipelines):
    key = next_keys[p]
    examples = stream(sizes, layout, p, pipelines, key, positions)
    for _ in range(counts[p]):
      example, last = next(examples)
      seen.append(example)
      key = last + 1
    after.append(key)
  return after


def resized(sizes, layout, pipelines, next_keys, new_pipelines, positions=stream_position):
  return redeal(next_keys, layout, shares(len(sizes), pipelines), order, PLAN, new_pipelines,
                positions)


def assert_each_once(seen, sizes, through_epoch):
  """Every example of the epochs up to `through_epoch` read once, and none of later epochs
  more than once."""
  assert len(seen) == len(set(seen)), "an example read twice"
  for epoch in range(through_epoch + 1):
    expected = {(epoch, piece, x) for piece, size in enumerate(sizes) for x in range(size)}
    assert expected <= set(seen), f"examples of epoch {epoch} skipped"


def test_the_unread_pieces_of_an_epoch_are_dealt_in_turns():
  left = [[Unread(0, 4, PLAN, 7), Unread(0, 2, PLAN)],
          [Unread(0, 5, PLAN, 3), Unread(0, 1, PLAN), Unread(0, 3, PLAN)]]
  dealt = deal(left, 2)
  assert dealt == ((Unread(0, 4, PLAN, 7), Unread(0, 2, PLAN), Unread(0, 3, PLAN)),
                   (Unread(0, 5, PLAN, 3), Unread(0, 1, PLAN)))
  assert deal(left, 1) == ((Unread(0, 4, PLAN, 7), Unread(0, 5, PLAN, 3), Unread(0, 2, PLAN),
                            Unread(0, 1, PLAN), Unread(0, 3, PLAN)),)
  three = deal(left, 3)
  assert sorted(len(mine) for mine in three) == [1, 2, 2]
  dealt_once = [u for mine in three for u in mine]
  assert len(dealt_once) == 5 and set(dealt_once) == {u for old in left for u in old}


def test_what_a_pipeline_left_starts_at_the_example_after_its_last():
  share = [1, 3, 5, 7]
  key = stream_position.encode(2, 1, 6)  # epoch 2, rank 1, example 6
  left = unread(key, share, lambda epoch: [3, 2, 1, 0], PLAN, through_epoch=3)
  assert left[0] == Unread(2, 5, PLAN, 6)  # rank 1 of [3, 2, 1, 0] is share[2]
  assert left[1:3] == [Unread(2, 3, PLAN), Unread(2, 1, PLAN)]
  assert [u.epoch for u in left[3:]] == [3] * 4 and {u.piece for u in left[3:]} == set(share)


def test_what_an_interleaved_pipeline_left_starts_at_each_piece_s_first_unread_example():
  """Unshuffled records: example j of the pipeline's f-th piece is keyed (epoch, 0, j * 3 +
  f); the key after its last is 22, so piece 0 has given 8 examples (keys 0, 3, ..., 21),
  pieces 1 and 2 seven each."""
  key = record_position.encode(1, 0, 22)
  left = unread(key, [2, 5, 8], None, PLAN, through_epoch=2, positions=record_position,
                interleaved=True)
  assert left == [Unread(1, 2, PLAN, 8), Unread(1, 5, PLAN, 7), Unread(1, 8, PLAN, 7),
                  Unread(2, 2, PLAN), Unread(2, 5, PLAN), Unread(2, 8, PLAN)]


def test_a_layout_round_trips_through_json():
  layout = Layout(2, 4, ((Unread(4, 3, 2, 9),), ()))
  assert Layout.from_json(layout.to_json()) == layout
  assert Layout(3) == Layout.from_json(Layout(3).to_json()) and Layout(3).carried_by(1) is None
  mixture = Layout(2, groups=(layout, Layout(2)))
  assert Layout.from_json(mixture.to_json()) == mixture
  assert mixture.group(0) == layout and Layout(2).group(1) == Layout(2)
  # Written before mixtures were dealt: no "groups".
  assert Layout.from_json('{"pipelines": 2, "carried_epoch": -1, "carried": []}') == Layout(2)


@pytest.mark.parametrize("old_pipelines,new_pipelines,positions", [
    (2, 1, stream_position), (1, 2, stream_position), (3, 2, stream_position),
    (2, 3, stream_position), (2, 1, record_position), (1, 3, record_position)])
def test_no_example_of_the_epoch_is_read_twice_or_skipped(old_pipelines, new_pipelines,
                                                          positions):
  """Of pieces keyed as text streams are, or of record files keyed as records are."""
  rng = random.Random(old_pipelines * 10 + new_pipelines)
  sizes = [rng.randint(1, 9) for _ in range(11)]
  for _ in range(30):
    seen = []
    layout = Layout(old_pipelines)
    keys = read(sizes, layout, old_pipelines, [0] * old_pipelines,
                [rng.randint(0, 70) for _ in range(old_pipelines)], seen, positions)
    layout, first_keys = resized(sizes, layout, old_pipelines, keys, new_pipelines, positions)
    assert layout.pipelines == new_pipelines
    # Each new pipeline reads its carried pieces and on, well into the next epochs.
    read(sizes, layout, new_pipelines, first_keys, [120] * new_pipelines, seen, positions)
    assert_each_once(seen, sizes, layout.carried_epoch)


def test_the_number_changes_again_before_the_carried_pieces_are_read():
  rng = random.Random(5)
  sizes = [rng.randint(1, 9) for _ in range(13)]
  for _ in range(30):
    seen, pipelines, layout = [], 2, Layout(2)
    keys = read(sizes, layout, pipelines, [0, 0], [rng.randint(0, 40) for _ in range(2)], seen)
    for new_pipelines in (3, 1, 2):  # each time only a little of the carried pieces read
      layout, keys = resized(sizes, layout, pipelines, keys, new_pipelines)
      pipelines = new_pipelines
      keys = read(sizes, layout, pipelines, keys,
                  [rng.randint(0, 12) for _ in range(pipelines)], seen)
    read(sizes, layout, pipelines, keys, [150] * pipelines, seen)
    assert_each_once(seen, sizes, layout.carried_epoch)

"""A run that goes on with another number of replicas or input pipelines (two workers re-run
as one process, one as two, `mirrored` on other devices): after the restore, the old input
pipelines' unread pieces of their epoch are dealt to this run's pipelines
(`bert_tf/data/piece_deal.py`), so that no example of it is read twice and none skipped
(docs/design.md#another-number-of-workers): a text corpus's pieces, each group's of a mixture
within the group, the parts of original BERT's record files. The weights, the optimizer and
the step are restored as ever; the global batch is the run's setting, checked against the
replicas before.
"""

import dataclasses
import types

import tensorflow as tf

from bert_tf.console import counted
from bert_tf.data import (
  data_position,
  mixture,
  piece_deal,
  pipeline,
  record_dataset,
  record_position,
  stream_position,
)
from bert_tf.data.input_plan import InputPlan
from bert_tf.errors import UserError


def input_pipelines(strategy: tf.distribute.Strategy) -> int:
  """How many input pipelines `strategy` reads with, as `distribute_datasets_from_function`
  makes them: one per worker of a cluster, one per TPU host, else one for all replicas."""
  if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return max(1, len(spec.get("worker", [])) + len(spec.get("chief", [])))
  if isinstance(strategy, tf.distribute.TPUStrategy):
    return strategy.extended.num_hosts
  return 1


@dataclasses.dataclass(frozen=True)
class _Pieces:
  """What dealing needs of one stream the old pipelines read (the corpus, a mixture's group,
  the record files): the size of their plan, the seed their epochs' orders are drawn from,
  the module that packs its keys, and whether a pipeline interleaves its pieces (unshuffled
  records)."""
  plan_size: int
  seed: int
  positions: types.ModuleType = stream_position
  interleaved: bool = False

  def dealt(self, next_keys: list[int], old: piece_deal.Layout,
            pipelines: int) -> tuple[piece_deal.Layout, list[int]]:
    """`piece_deal.redeal` of this stream, with its real shares and epochs' orders."""
    shares = [pipeline.share_of(self.plan_size, old.pipelines, p) for p in range(old.pipelines)]
    return piece_deal.redeal(
        next_keys, old, shares,
        lambda epoch, count: pipeline.epoch_order(self.seed, epoch, count).numpy().tolist(),
        old.pipelines, pipelines, self.positions, self.interleaved)


def _streams(plan: InputPlan, old_pipelines: int) -> list[_Pieces]:
  """The streams of the plan's input as `old_pipelines` pipelines read them: the record
  files', the corpus's, or each group's of a mixture."""
  if plan.records is not None:
    return [_Pieces(len(record_dataset.plan_for(list(plan.files), old_pipelines)), plan.seed,
                    record_position, interleaved=not plan.records.shuffle)]
  seeds = ([plan.seed] if plan.weights is None else
           [mixture.group_seed(plan.seed, group) for group in range(len(plan.groups))])
  return [_Pieces(len(pipeline.plan_for(list(files), plan.examples.piece_bytes, old_pipelines)),
                  seed) for files, seed in zip(plan.groups, seeds, strict=True)]


def carry_on(position: data_position.DataPosition, restored_path: str,
             plan: InputPlan) -> str:
  """Lays out the restored position for this run: as saved when the numbers of replicas and
  pipelines are the ones it was saved with; else dealt anew. Returns the line that says what
  changed ("" when nothing did)."""
  restored = position.restored
  if restored is None:
    return ""
  old = data_position.read_layout(restored_path)
  replicas, pipelines = position.last_consumed.shape[0], position.layout.pipelines
  if old is None:  # written before layouts: by as many pipelines as a run of its replicas
    if len(restored) == replicas:
      return ""
    if len(restored) > 1:
      raise UserError(f"the checkpoint {restored_path} predates resumes on another number of "
                      f"replicas: re-run it on its {len(restored)} replicas")
    old = piece_deal.Layout(1)
  if len(restored) == replicas and old.pipelines == pipelines:
    position.layout = old
    return ""
  streams = _streams(plan, old.pipelines)
  next_keys = data_position.next_keys(restored, old.pipelines)
  if restored.ndim == 1:
    layout, first_keys = streams[0].dealt(next_keys, old, pipelines)
    layouts = [layout]
  else:  # a mixture's (`mixture.py`): each group's keys dealt within it, then the draws'
    dealt = [stream.dealt([keys[group] for keys in next_keys], old.group(group), pipelines)
             for group, stream in enumerate(streams)]
    layouts = [layout for layout, _ in dealt]
    layout = piece_deal.Layout(pipelines, groups=tuple(layouts))
    # Every pipeline draws on from the largest number any old one had reached: draws keyed
    # (seed, pipeline, number) that no pipeline has used, with the same weights.
    draws = max(keys[-1] for keys in next_keys)
    first_keys = [[firsts[p] for _, firsts in dealt] + [draws] for p in range(pipelines)]
  position.place(layout, first_keys)
  return (f"{counted(len(restored), 'replica')} -> {replicas} (input pipelines "
          f"{old.pipelines} -> {pipelines}): "
          f"{_dealt_line(layouts, plan.records is not None)}")


def _dealt_line(layouts: list[piece_deal.Layout], records: bool) -> str:
  """What was dealt, in words: the pieces, by epoch (of each group of a mixture)."""
  carried = [u for layout in layouts for mine in layout.carried for u in mine]
  begun = sum(u.first_example > 0 for u in carried)
  what = "parts of record files" if records else "pieces"
  if len(layouts) > 1:
    epochs = ", ".join(f"{layout.carried_epoch}" for layout in layouts)
    return (f"the {len(carried)} {what} left unread of the groups' epochs {epochs} ({begun} "
            "begun) are dealt to the new pipelines from where they stood, group by group; "
            "each group's next epoch on is shared among them, drawn with the same weights")
  epochs = sorted({u.epoch for u in carried})
  named = f"epoch {epochs[0]}" if len(epochs) == 1 else f"epochs {epochs[0]}-{epochs[-1]}"
  return (f"the {len(carried)} {what} left unread of {named} ({begun} begun) are dealt to "
          f"the new pipelines from where they stood; epoch {layouts[0].carried_epoch + 1} on "
          "is shared among them")

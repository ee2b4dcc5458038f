"""A run that goes on with another number of replicas or input pipelines (two workers re-run
as one process, one as two, `mirrored` on other devices): after the restore, the old input
pipelines' unread pieces of their epoch are dealt to this run's pipelines
(`bert_tf/data/piece_deal.py`), so that no example of it is read twice and none skipped
(docs/design.md#another-number-of-workers). The weights, the optimizer and the step are
restored as ever; the global batch is the run's setting, checked against the replicas before.
"""

import tensorflow as tf

from bert_tf.data import corpus, data_position, piece_deal, pipeline
from bert_tf.data.data_settings import RECORDS
from bert_tf.errors import UserError
from bert_tf.training.train_settings import TrainConfig


def input_pipelines(strategy: tf.distribute.Strategy) -> int:
  """How many input pipelines `strategy` reads with, as `distribute_datasets_from_function`
  makes them: one per worker of a cluster, one per TPU host, else one for all replicas."""
  if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return max(1, len(spec.get("worker", [])) + len(spec.get("chief", [])))
  if isinstance(strategy, tf.distribute.TPUStrategy):
    return strategy.extended.num_hosts
  return 1


def carry_on(position: data_position.DataPosition, restored_path: str,
             config: TrainConfig) -> str:
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
  if config.input_format == RECORDS:
    raise UserError(f"a run on records cannot go on with another number of replicas yet: "
                    f"re-run it on its {len(restored)} replicas in {old.pipelines} input "
                    "pipeline(s)")
  if restored.ndim == 2:  # a mixture's positions (`mixture.py`)
    raise UserError(f"a run of corpora mixed by --input_weights cannot go on with another "
                    f"number of replicas yet: re-run it on its {len(restored)} replicas in "
                    f"{old.pipelines} input pipeline(s)")
  files = corpus.list_files(config.input_files, config.data_dir)
  plan_size = len(pipeline.plan_for(files, config.piece_bytes, old.pipelines))
  shares = [pipeline.share_of(plan_size, old.pipelines, p) for p in range(old.pipelines)]
  layout, first_keys = piece_deal.redeal(
      data_position.next_keys(restored, old.pipelines), old, shares,
      lambda epoch, count: pipeline.epoch_order(config.seed, epoch, count).numpy().tolist(),
      old.pipelines, pipelines)
  position.place(layout, first_keys)
  carried = [u for mine in layout.carried for u in mine]
  epochs = sorted({u.epoch for u in carried})
  named = f"epoch {epochs[0]}" if len(epochs) == 1 else f"epochs {epochs[0]}-{epochs[-1]}"
  were = f"{len(restored)} replica{'s' if len(restored) > 1 else ''}"
  return (f"{were} -> {replicas} (input pipelines {old.pipelines} -> "
          f"{pipelines}): the {len(carried)} pieces left unread of {named} "
          f"({sum(u.first_example > 0 for u in carried)} begun) are dealt to the new pipelines "
          f"from where they stood; epoch {layout.carried_epoch + 1} on is shared among them")

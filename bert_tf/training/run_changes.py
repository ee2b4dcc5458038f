"""What changed since a model_dir last trained, and what a re-run on it does about each change.

A re-run on a model_dir that has a checkpoint compares its settings with the model_dir's
(`train_config.json`, through `runtime/setting_changes.py`), its model with `bert_config.json`
and `vocab.txt`, and its training corpus with the fingerprint `corpus.json` (each file's size
and modification time, as `tf.io.gfile.stat` gives them on any file system). The latest
checkpoint carries the same record (`bert_tf/run_record.py`), which is believed when those
files are gone or disagree with it. Each difference is one line, and each setting declares
what changing it does (`change=` in its `setting(...)`):
- model (--config, the vocabulary): the checkpoints hold another model: an error;
- stream (the corpus, seq_length, masking, NSP, the seed, ...): the recorded data position
  indexes the old stream of examples, so the stream starts afresh at the first piece of the
  next epoch of the new one, and a line says so (phase 2 on phase 1's model_dir goes this way);
  between text and records (--input_format=tfrecord) the recorded position is of another kind
  and means nothing to the new stream, which starts at its beginning;
- noted (train_steps, the learning rate, evaluation, checkpointing, ...): said, nothing else.
Another number of replicas or input pipelines (workers) is said in a line too, and the old
pipelines' unread pieces are dealt to the new ones (`resizing.py`).
The table: docs/reliability.md.
"""

import concurrent.futures
import dataclasses
import logging
import os

import tensorflow as tf

from bert_tf import files, run_record, settings
from bert_tf.data import corpus, record_position, stream_position
from bert_tf.data.data_position import DataPosition
from bert_tf.data.data_settings import RECORDS
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.model.bert_config import BertConfig
from bert_tf.model_dir import CONFIG_FILE, TRAIN_CONFIG_FILE, VOCAB_FILE, has_checkpoint
from bert_tf.run_record import CORPUS_FILE
from bert_tf.runtime import setting_changes
from bert_tf.training import resizing
from bert_tf.training.train_settings import TrainConfig

log = logging.getLogger("bert_tf")

_DROPOUT = ("hidden_dropout_prob", "attention_probs_dropout_prob")  # --dropout, noted
_NAMES_SHOWN = 5  # files named in a line about the corpus, before "and N more"


def corpus_fingerprint(config: TrainConfig) -> dict[str, list[int]]:
  """Each training file's size and modification time, asked in parallel (each a round trip
  on a remote file system)."""
  paths = corpus.list_files(config.input_files, config.data_dir)
  with concurrent.futures.ThreadPoolExecutor(min(32, len(paths))) as pool:
    stats = list(pool.map(tf.io.gfile.stat, paths))
  return {path: [stat.length, stat.mtime_nsec] for path, stat in zip(paths, stats)}


def write_corpus_fingerprint(config: TrainConfig) -> None:
  files.write_json(os.path.join(config.model_dir, CORPUS_FILE), corpus_fingerprint(config))


@dataclasses.dataclass(frozen=True)
class RunChanges:
  """The outcome of `compare`: whether the stream of examples changed, and where it stood."""

  config: TrainConfig
  stream_changed: bool = False
  reads_records: bool = False  # the new stream's positions are record positions
  kind_changed: bool = False  # from text to records or back: the old position means nothing

  def carry_on(self, data_position: DataPosition, checkpointer, plan) -> None:
    """After the restore, where the stream goes on. A changed stream starts at the next
    epoch's first example, saved at once (the checkpoint of the restored step, rewritten):
    `train_config.json` and `corpus.json` then describe the new stream, and a run stopped
    before its next checkpoint must not resume with the old stream's position under them.
    Otherwise, with another number of replicas or input pipelines, the old pipelines' unread
    pieces are dealt to the new ones (`resizing.py`: those of the training `plan`), a line
    says so."""
    if not self.stream_changed:
      change = resizing.carry_on(data_position, checkpointer.restored_path, plan)
      if change:
        log.info("Changed since %s last trained: %s", self.config.model_dir, change)
      return
    step = checkpointer.step
    positions = record_position if self.reads_records else stream_position
    consumed = (data_position.last_consumed.numpy() if data_position.restored is None
                else data_position.restored)
    # A mixture's last column counts its choices (`mixture.py`); they start again.
    keys = consumed if consumed.ndim == 1 else consumed[:, :-1]
    epoch = max(positions.decode(key)[0] for key in keys.flat if key >= 0) + 1 if (
        (keys >= 0).any() and not self.kind_changed) else 0
    data_position.start_all_at(positions.encode(epoch, 0, 0))
    if self.kind_changed:
      log.info("The input changed between text and records: step %d trains on the %s from "
               "their beginning", step, "records" if self.reads_records else "text")
    else:
      log.info("The stream of examples changed: step %d trains on it from the start of its "
               "epoch %d, not where the old stream stood", step, epoch)
    checkpointer.save()


def compare(config: TrainConfig, bert_config: BertConfig, vocabulary: Vocabulary) -> RunChanges:
  """Compares this run with the model_dir's last one (nothing to compare before its first
  checkpoint): logs each difference in a line; raises `UserError` when the model differs."""
  recorded = last_run(config.model_dir) if has_checkpoint(config.model_dir) else {}
  if not recorded.get("train_config"):
    return RunChanges(config)
  model_lines = _model_differences(recorded, bert_config, vocabulary)
  if model_lines:
    raise UserError(f"the model differs from the one {config.model_dir} trained "
                    f"({'; '.join(model_lines)}): its checkpoints cannot go on as another "
                    "model; use a new --model_dir")
  groups_before = _groups(recorded["train_config"].get("input_weights") or "")
  groups_now = _groups(config.input_weights)
  if groups_before != groups_now:
    raise UserError(
        f"{config.model_dir} trained on {_described(groups_before)}, this run gives "
        f"{_described(groups_now)}: its data position cannot go on in the new stream; use a "
        f"new --model_dir (with --init_checkpoint={config.model_dir} to go on from its "
        "weights)")
  recorded_corpus = recorded.get("corpus")
  differences = (_corpus_differences(recorded_corpus, corpus_fingerprint(config))
                 if recorded_corpus else [])
  for field, before, after in setting_changes.differences(recorded["train_config"], config):
    change = field.metadata["change"]
    if field.name == "input_files" and recorded_corpus:
      change = settings.NOTED  # the fingerprint says whether the files changed
    differences.append((setting_changes.changed(field, before, after), change))
  for line, change in differences:
    setting_changes.say(config.model_dir, line, change)
  reads_records = config.input_format == RECORDS
  read_records = recorded["train_config"].get("input_format") == RECORDS
  return RunChanges(config, any(change == settings.STREAM for _, change in differences),
                    reads_records=reads_records, kind_changed=reads_records != read_records)


def _groups(input_weights: str) -> int:
  """The number of groups a run's corpus mixed (its --input_weights), 0 when it was one
  corpus: the shape of its data position."""
  return len(input_weights.split(",")) if input_weights.strip() else 0


def _described(groups: int) -> str:
  return f"a mixture of {groups} group(s) of files" if groups else "one corpus"


def last_run(model_dir: str) -> dict:
  """What the model_dir's last run was: {"bert_config", "tokens", "train_config", "corpus"},
  each None when unknown. The latest checkpoint's record is believed; a side file is read
  when the checkpoint has none (written before records). A side file gone or disagreeing
  with the record is said in a line."""
  side = {"bert_config": setting_changes.read_record(model_dir, CONFIG_FILE),
          "train_config": setting_changes.read_record(model_dir, TRAIN_CONFIG_FILE),
          "corpus": setting_changes.read_record(model_dir, CORPUS_FILE),
          "tokens": (Vocabulary(os.path.join(model_dir, VOCAB_FILE)).tokens
                     if tf.io.gfile.exists(os.path.join(model_dir, VOCAB_FILE)) else None)}
  if side["bert_config"] is not None:  # as a model of it: defaults for keys added since
    side["bert_config"] = BertConfig.from_json_file(os.path.join(model_dir, CONFIG_FILE)
                                                    ).to_dict()
  found = run_record.latest(model_dir)
  if not found:
    return side
  checkpoint, record = found
  believed = {"bert_config": BertConfig(**record["bert_config"]).to_dict(),
              "train_config": record["train_config"], "corpus": record["corpus"],
              "tokens": record["vocabulary"]["tokens"]}
  files_of = {"bert_config": CONFIG_FILE, "train_config": TRAIN_CONFIG_FILE,
              "corpus": CORPUS_FILE, "tokens": VOCAB_FILE}
  gone = [files_of[name] for name in believed if side[name] is None]
  differ = [files_of[name] for name in believed
            if side[name] is not None and side[name] != believed[name]]
  if gone:
    log.info("%s has no %s: compared with the record in its checkpoint %s", model_dir,
             ", ".join(gone), checkpoint)
  if differ:
    log.warning("%s: %s disagree with the record in its checkpoint %s: the checkpoint is "
                "believed", model_dir, ", ".join(differ), checkpoint)
  return believed


def _model_differences(recorded: dict, bert_config: BertConfig,
                       vocabulary: Vocabulary) -> list[str]:
  """Lines naming what differs between this run's model and the model_dir's last one."""
  lines = []
  before = recorded.get("bert_config")
  if before is not None:
    after = bert_config.to_dict()
    lines += [f"{key} {before.get(key)} -> {after.get(key)}" for key in sorted(after)
              if key not in _DROPOUT and before.get(key) != after.get(key)]
  if recorded.get("tokens") is not None and recorded["tokens"] != vocabulary.tokens:
    lines.append(f"the vocabulary {vocabulary.path} is not the one it trained with")
  return lines


def _corpus_differences(before: dict, after: dict) -> list[tuple[str, str]]:
  """(line, change) for the files added, removed and resized (each a new stream), and for
  those only modified (the same size: noted, so that a file put back resumes exactly)."""
  common = sorted(set(before) & set(after))
  resized = [f"{path} ({before[path][0]:,} -> {after[path][0]:,} bytes)" for path in common
             if before[path][0] != after[path][0]]
  touched = [path for path in common
             if before[path][0] == after[path][0] and before[path] != after[path]]
  kinds = (("corpus files added", sorted(set(after) - set(before)), settings.STREAM),
           ("corpus files removed", sorted(set(before) - set(after)), settings.STREAM),
           ("corpus files changed size", resized, settings.STREAM),
           ("corpus files modified, the same size", touched, settings.NOTED))
  return [(f"{kind}: {_listed(names)}", change) for kind, names, change in kinds if names]


def _listed(names: list[str]) -> str:
  more = len(names) - _NAMES_SHOWN
  return ", ".join(names[:_NAMES_SHOWN]) + (f" and {more} more" if more > 0 else "")

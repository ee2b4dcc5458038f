"""What changed since a model_dir last trained, and what a re-run on it does about each change.

A re-run on a model_dir that has a checkpoint compares its settings with the model_dir's
(`train_config.json`, written by `run_files`, through `runtime/setting_changes.py`), its model
with `bert_config.json` and `vocab.txt`, and its training corpus with the fingerprint
`corpus.json` (each file's size and modification time, as `tf.io.gfile.stat` gives them on any
file system). Each difference is one line, and each setting declares what changing it does
(`change=` in its `setting(...)`):
- model (--config, the vocabulary): the checkpoints hold another model: an error;
- stream (the corpus, seq_length, masking, NSP, the seed, ...): the recorded data position
  indexes the old stream of examples, so the stream starts afresh at the first piece of the
  next epoch of the new one, and a line says so (phase 2 on phase 1's model_dir goes this way);
  between text and records (--input_format=tfrecord) the recorded position is of another kind
  and means nothing to the new stream, which starts at its beginning;
- noted (train_steps, the learning rate, evaluation, checkpointing, ...): said, nothing else.
The table: docs/reliability.md.
"""

import concurrent.futures
import dataclasses
import logging
import os

import tensorflow as tf

from bert_tf import files, settings
from bert_tf.data import corpus, record_position, stream_position
from bert_tf.data.data_position import DataPosition
from bert_tf.data.data_settings import RECORDS
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.model.bert_config import BertConfig
from bert_tf.model_dir import CONFIG_FILE, TRAIN_CONFIG_FILE, VOCAB_FILE, has_checkpoint
from bert_tf.runtime import setting_changes
from bert_tf.training.train_settings import TrainConfig

log = logging.getLogger("bert_tf")

CORPUS_FILE = "corpus.json"  # under model_dir: {path: [size, modification time in ns]}
_DROPOUT = ("hidden_dropout_prob", "attention_probs_dropout_prob")  # --dropout, noted
_MEANING = {settings.STREAM: "a new stream", settings.MODEL: "the same model",
            settings.NOTED: "noted"}
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

  stream_changed: bool = False
  reads_records: bool = False  # the new stream's positions are record positions
  kind_changed: bool = False  # from text to records or back: the old position means nothing

  def restart_stream(self, data_position: DataPosition, checkpointer) -> None:
    """After the restore: a changed stream starts at the next epoch's first example. Saved at
    once (the checkpoint of the restored step, rewritten): `train_config.json` and
    `corpus.json` then describe the new stream, and a run stopped before its next checkpoint
    must not resume with the old stream's position under them."""
    if not self.stream_changed:
      return
    step = checkpointer.step
    positions = record_position if self.reads_records else stream_position
    consumed = data_position.last_consumed.numpy()
    epoch = max(positions.decode(key)[0] for key in consumed) + 1 if (
        (consumed >= 0).any() and not self.kind_changed) else 0
    data_position.last_consumed.assign(
        tf.fill(consumed.shape, tf.constant(positions.encode(epoch, 0, 0) - 1, tf.int64)))
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
  recorded_settings = setting_changes.read_record(config.model_dir, TRAIN_CONFIG_FILE)
  if not (has_checkpoint(config.model_dir) and recorded_settings):
    return RunChanges()
  model_lines = _model_differences(config.model_dir, bert_config, vocabulary)
  if model_lines:
    raise UserError(f"the model differs from the one {config.model_dir} trained "
                    f"({'; '.join(model_lines)}): its checkpoints cannot go on as another "
                    "model; use a new --model_dir")
  recorded_corpus = setting_changes.read_record(config.model_dir, CORPUS_FILE)
  differences = (_corpus_differences(recorded_corpus, corpus_fingerprint(config))
                 if recorded_corpus else [])
  for field, before, after in setting_changes.differences(recorded_settings, config):
    change = field.metadata["change"]
    if field.name == "input_files" and recorded_corpus:
      change = settings.NOTED  # the fingerprint says whether the files changed
    differences.append((f"{field.name} {setting_changes.shown(before)} -> "
                        f"{setting_changes.shown(after)}", change))
  for line, change in differences:
    log.info("Changed since %s last trained: %s (%s)", config.model_dir, line, _MEANING[change])
  reads_records = config.input_format == RECORDS
  read_records = recorded_settings.get("input_format") == RECORDS
  return RunChanges(any(change == settings.STREAM for _, change in differences),
                    reads_records=reads_records, kind_changed=reads_records != read_records)


def _model_differences(model_dir: str, bert_config: BertConfig,
                       vocabulary: Vocabulary) -> list[str]:
  """Lines naming what differs between this run's model and the model_dir's."""
  lines = []
  config_file = os.path.join(model_dir, CONFIG_FILE)
  if tf.io.gfile.exists(config_file):
    before = BertConfig.from_json_file(config_file).to_dict()
    after = bert_config.to_dict()
    lines += [f"{key} {before.get(key)} -> {after.get(key)}" for key in sorted(after)
              if key not in _DROPOUT and before.get(key) != after.get(key)]
  vocab_copy = os.path.join(model_dir, VOCAB_FILE)
  if tf.io.gfile.exists(vocab_copy) and Vocabulary(vocab_copy).tokens != vocabulary.tokens:
    lines.append(f"the vocabulary {vocabulary.path} is not the one it trained with "
                 f"({vocab_copy})")
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

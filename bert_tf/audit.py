"""Shows what the pipeline feeds the model: `python -m bert_tf.audit --flagfile=...`; or, with
`--checkpoint`, what a training checkpoint is.

Takes `train.py`'s corpus and pipeline flags (or its records flags: `--input_format=tfrecord`);
prints the first examples as text with the masks visible, then the realised statistics over
`--num_examples` (or, with `--json`, one JSON object), with the share of each group of a
mixed corpus (--input_weights); from records, without the statistics of
the documents the pairs came from, which records do not keep. Notation in the text:
`[MASK](word)` masked, `{other}(word)` replaced by a random token, `=word=` chosen but kept;
`|` separates segment A from B.
`--checkpoint=PATH` (a model_dir, its checkpoints/ or a ckpt-N prefix) prints the record the
checkpoint carries (`bert_tf/run_record.py`): its step, the model's shape, the vocabulary's
size and hash, the corpus's files and the run's settings.
"""

import collections
import contextlib
import dataclasses
import json
import logging
import sys

from bert_tf import console

if __name__ == "__main__":  # as a command: before TensorFlow loads, its start-up lines go
  console.start(sys.argv)
import numpy as np  # noqa: E402

from bert_tf import run_record  # noqa: E402
from bert_tf.errors import UserError  # noqa: E402
from bert_tf.settings import setting  # noqa: E402
from bert_tf.training.train_settings import TrainConfig  # noqa: E402

log = logging.getLogger("bert_tf")


@dataclasses.dataclass(frozen=True)
class AuditConfig(TrainConfig):
  """What the audit measures and shows (besides `train.py`'s settings)."""

  num_examples: int = setting(10_000, "Examples the statistics are measured over.")
  show_examples: int = setting(3, "Examples printed as text.")
  json: bool = setting(False, "Print only the statistics, as one JSON object.")
  checkpoint: str = setting(
      "", "A training checkpoint to describe instead (a model_dir, its checkpoints/ or a "
      "ckpt-N prefix): its step, model, vocabulary, corpus and settings.")


def example_text(tokens, features, labels, weights, row) -> str:
  """One row as text, masked positions marked: its pair, or a packed row's pairs (`||`
  between them)."""
  if "pair_ids" not in features:
    return _pair_text(tokens, features, labels, labels["nsp"][row], weights, row,
                      features["padding_mask"][row].astype(bool))
  return " || ".join(
      _pair_text(tokens, features, labels, labels["nsp"][row][slot], weights, row,
                 features["pair_ids"][row] == slot + 1)
      for slot in range(int(pairs_present(features, labels)[row].sum())))


def pairs_present(features: dict, labels: dict) -> np.ndarray:
  """Which pairs a batch holds, from its features: bool [rows] of an unpacked batch (a row
  with tokens), bool [rows, pairs] of a packed one (a slot whose pair has tokens). Not from
  the NSP weights: an MLM-only stream's are all 0."""
  if "pair_ids" not in features:
    return np.asarray(features["padding_mask"]).any(axis=1)
  slots = np.arange(1, np.shape(labels["nsp"])[1] + 1)
  return (np.asarray(features["pair_ids"])[:, None, :] == slots[None, :, None]).any(axis=2)


def _pair_text(tokens, features, labels, is_next, weights, row, in_pair) -> str:
  """The text of the tokens `in_pair` (bool [seq]) of a row, and its NSP label."""
  ids = features["token_ids"][row]
  marks = {}
  for position, original, weight in zip(features["masked_positions"][row],
                                        labels["mlm"][row], weights["mlm"][row]):
    if weight and in_pair[position]:
      word, shown = tokens[original], tokens[ids[position]]
      marks[position] = ("=" + word + "=" if ids[position] == original else
                         f"[MASK]({word})" if shown == "[MASK]" else f"{{{shown}}}({word})")
  words = []
  for position in np.flatnonzero(in_pair):
    if words and features["segment_ids"][row][position] != features["segment_ids"][row][
        position - 1]:
      words.append("|")
    words.append(marks.get(position, tokens[ids[position]]))
  return f"{'IsNext' if is_next == 1 else 'NotNext'}: {' '.join(words)}"


class Statistics:
  """Running totals over audited batches."""

  def __init__(self, mask_id: int, groups: list[str] | None = None):
    """`groups`: the names of a mixed corpus's groups, whose realised shares are counted."""
    self.mask_id = mask_id
    self.groups = groups
    self.counts = collections.Counter()
    self.documents = set()
    self.with_pairs = True  # until a batch comes without the facts of its pairs
    self.packed = False  # rows of several pairs (--packing): "examples" counts pairs

  def add(self, features, labels, weights, facts=None) -> None:
    """A batch; `facts`: its pairs' documents, windows and short targets (text only)."""
    c = self.counts
    is_slot = weights["mlm"] > 0
    shown = np.take_along_axis(features["token_ids"], features["masked_positions"], axis=1)
    is_pair = pairs_present(features, labels)  # every row's one pair, or a packed row's pairs
    self.packed = "pair_ids" in features
    c["rows"] += len(labels["nsp"])
    c["examples"] += int(is_pair.sum())
    c["tokens"] += int(features["padding_mask"].sum())
    c["slots"] += features["padding_mask"].size
    c["predicted"] += int(is_slot.sum())
    c["mask_token"] += int((is_slot & (shown == self.mask_id)).sum())
    c["kept"] += int((is_slot & (shown == labels["mlm"])).sum())
    c["is_next"] += int((is_pair & (labels["nsp"] == 1)).sum())
    not_next = is_pair & (labels["nsp"] == 0)
    c["not_next"] += int(not_next.sum())
    self.with_pairs &= facts is not None
    if not self.with_pairs:
      return
    # A fact per pair: [rows], or a packed row's per slot [rows, pairs] (only its pairs').
    facts = {name: np.asarray(value)[is_pair] for name, value in facts.items()}
    not_next = not_next[is_pair]
    c["not_next_other"] += int(
        (not_next & (facts["document_a"] != facts["document_b"])).sum())
    c["short"] += int(facts["is_short"].sum())
    groups = facts.get("group", np.zeros_like(facts["window"]))
    c.update(("group", int(group)) for group in groups)
    for group, window, a, b in zip(groups, facts["window"], facts["document_a"],
                                   facts["document_b"]):
      self.documents.update({(group, window, a), (group, window, b)})

  def summary(self) -> dict:
    c = self.counts
    predicted = max(c["predicted"], 1)
    summary = {
        "examples": c["examples"],
        "masked_share": c["predicted"] / max(c["tokens"], 1),
        "mask_token_share": c["mask_token"] / predicted,
        "random_token_share": (c["predicted"] - c["mask_token"] - c["kept"]) / predicted,
        "kept_share": c["kept"] / predicted,
        "is_next_share": c["is_next"] / max(c["examples"], 1),
        "mean_tokens": c["tokens"] / max(c["examples"], 1),
        "padding_share": 1 - c["tokens"] / max(c["slots"], 1),
    }
    if self.packed:
      summary["pairs_per_row"] = c["examples"] / max(c["rows"], 1)
    if self.with_pairs:
      summary.update({
          "not_next_other_document_share": c["not_next_other"] / max(c["not_next"], 1),
          "short_sequence_share": c["short"] / max(c["examples"], 1),
          "documents": len(self.documents),
      })
      if self.groups:
        summary["group_shares"] = {name: c["group", i] / max(c["examples"], 1)
                                   for i, name in enumerate(self.groups)}
    return summary


def audited_batches(config, vocabulary, batch_size: int):
  """The batches a run of `config` trains on; from text with the facts of each pair."""
  from bert_tf.data import input_plan, readers

  plan = input_plan.from_settings(config, vocabulary,
                                  batching=input_plan.Batching(batch_size, with_pairs=True))
  return readers.batches(plan)


def _grown(config, vocabulary):
  """The vocabulary a run with --add_vocabulary trained with, its model_dir's vocab.txt, once
  it has grown it; else `vocabulary` (the audit reads, it grows nothing)."""
  import tensorflow as tf

  from bert_tf.data.tokenization import Vocabulary
  from bert_tf.model_dir import VOCAB_FILE

  grown = f"{config.model_dir.rstrip('/')}/{VOCAB_FILE}"
  return (Vocabulary(grown) if config.add_vocabulary and tf.io.gfile.exists(grown)
          else vocabulary)


@contextlib.contextmanager
def _run_vocabulary(inputs):
  """The vocabulary the run trains with (`_grown`); one it would learn (--vocab_file does not
  exist yet) learned as it would, for the audit's length, and not written: the audit reads."""
  if inputs.vocabulary is not None:
    yield _grown(inputs.config, inputs.vocabulary)
    return
  from bert_tf.data.vocabulary_learner import learned_in_passing, learning_settings

  config = inputs.config
  log.info("Vocabulary %s does not exist: learning one from the corpus for the audit, as the "
           "run would (not written)", config.vocab_file)
  with learned_in_passing(config.input_files, **learning_settings(config)) as vocabulary:
    yield vocabulary


def audit(config, num_examples: int, show_examples: int, batch_size: int = 256):
  """Returns (texts of the first examples, statistics) for a `TrainConfig`."""
  from bert_tf.training.preparation import check_inputs

  inputs = check_inputs(config)
  with _run_vocabulary(inputs) as vocabulary:
    return _audited(inputs.config, vocabulary, num_examples, show_examples, batch_size)


def _audited(config, vocabulary, num_examples: int, show_examples: int, batch_size: int):
  """`audit`'s texts and statistics, once the settings and the vocabulary are known."""
  dataset = audited_batches(config, vocabulary, batch_size)
  from bert_tf.data.data_settings import corpus_groups

  groups = corpus_groups(config.input_files) if config.weights() else None
  statistics = Statistics(vocabulary.mask_id, ["|".join(group) for group in groups or []])
  texts = []
  for batch in dataset.take(-(-num_examples // batch_size)).as_numpy_iterator():
    features, labels, weights, *facts = batch
    texts.extend(example_text(vocabulary.tokens, features, labels, weights, row)
                 for row in range(min(show_examples - len(texts), len(labels["nsp"]))))
    statistics.add(features, labels, weights, *facts)
  return texts, statistics.summary()


def describe_checkpoint(path: str) -> list[str]:
  """Lines saying what the checkpoint `path` is, from the record it carries."""
  checkpoint = run_record.checkpoint_named(path)
  if not checkpoint:
    raise UserError(f"--checkpoint {path} names no checkpoint")
  record = run_record.read(checkpoint)
  if not record:
    raise UserError(f"--checkpoint {checkpoint} carries no record (written before checkpoints "
                    "had one, or unreadable)")
  model, vocabulary = record["bert_config"], record["vocabulary"]
  step = checkpoint.rsplit("-", 1)[1]  # ckpt-N: saved at step N
  return [f"checkpoint  {checkpoint}", f"step        {step}",
          "model       " + ", ".join(f"{key} {value}" for key, value in sorted(model.items())),
          f"vocabulary  {vocabulary['size']} tokens, sha256 {vocabulary['sha256']}",
          *(f"corpus      {name} ({size:,} bytes)"
            for name, (size, _) in sorted(record["corpus"].items())),
          "settings    " + json.dumps(record["train_config"], sort_keys=True)]


def show(config: AuditConfig) -> None:
  """The command: the examples as text and the statistics, or the statistics as JSON; or
  what a checkpoint is."""
  if config.checkpoint:
    print("\n".join(describe_checkpoint(config.checkpoint)))
    return
  texts, summary = audit(config, config.num_examples, 0 if config.json else config.show_examples)
  if config.json:
    print(json.dumps(summary))
    return
  for text in texts:
    print(text + "\n")
  width = max(len(name) for name in summary)
  for name, value in summary.items():
    if isinstance(value, dict):  # the groups' shares
      value = ", ".join(f"{group} {share:.4f}" for group, share in value.items())
    print(f"{name:<{width}}  {value:.4f}" if isinstance(value, float) else
          f"{name:<{width}}  {value}")


if __name__ == "__main__":
  console.run_command(AuditConfig, show)

"""tag's dev figures: entity-level precision, recall and F1 as conlleval counts them, overall
and per type, and token accuracy (CoNLL-2003). Each a fraction in [0, 1], 0 where undefined (a
precision with no prediction)."""

import collections

import numpy as np


def _split_tag(tag: str) -> tuple[str, str]:
  """"B-PER" -> ("B", "PER"); "O" -> ("O", "")."""
  return (tag, "") if tag == "O" else (tag[0], tag[2:])


def entities(tags: list[str]) -> set[tuple[str, int, int]]:
  """The entities of one sentence's BIO/IOB tags, as (type, first word, last word), cut as
  conlleval cuts them: an entity starts at a B-, or at an I- after an O or after a tag of
  another type (so a sentence's leading I-PER starts one, and IOB1's I-only tagging reads as
  it is meant); it ends before an O, a B- or another type."""
  found, start, kind = set(), None, ""
  for position, tag in enumerate([*tags, "O"]):
    prefix, tag_kind = _split_tag(tag)
    if start is not None and (prefix in ("O", "B") or tag_kind != kind):
      found.add((kind, start, position - 1))
      start = None
    if start is None and prefix != "O":
      start, kind = position, tag_kind
  return found


def _precision_recall_f1(correct: int, predicted: int, gold: int) -> dict:
  precision = correct / predicted if predicted else 0.0
  recall = correct / gold if gold else 0.0
  f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
  return {"precision": precision, "recall": recall, "f1": f1}


def entity_scores(gold: list[list[str]], predicted: list[list[str]]) -> dict:
  """Entity-level scores of tagged sentences (a list of tag lists each, the same lengths), as
  conlleval and seqeval's default mode count them: an entity is right only when its type and
  both of its ends are. {"precision", "recall", "f1", "token_accuracy", "per_type": {type:
  {"precision", "recall", "f1", "support"}}}; support is the number of gold entities."""
  counts = collections.defaultdict(lambda: [0, 0, 0])  # type -> [correct, predicted, gold]
  right_tags = total_tags = 0
  for sentence, (gold_tags, predicted_tags) in enumerate(zip(gold, predicted, strict=True)):
    if len(gold_tags) != len(predicted_tags):
      raise ValueError(f"sentence {sentence}: {len(gold_tags)} gold tags, "
                       f"{len(predicted_tags)} predicted")
    right_tags += sum(g == p for g, p in zip(gold_tags, predicted_tags))
    total_tags += len(gold_tags)
    gold_entities, predicted_entities = entities(gold_tags), entities(predicted_tags)
    for kind, *_ in gold_entities:
      counts[kind][2] += 1
    for entity in predicted_entities:
      counts[entity[0]][1] += 1
      counts[entity[0]][0] += entity in gold_entities
  overall = _precision_recall_f1(*np.sum(list(counts.values()) or [[0, 0, 0]], axis=0))
  return {**{name: float(value) for name, value in overall.items()},
          "token_accuracy": right_tags / total_tags if total_tags else 0.0,
          "per_type": {kind: {**_precision_recall_f1(*counts[kind]), "support": counts[kind][2]}
                       for kind in sorted(counts)}}

"""The built-in labelled tasks: files made from the built-in corpus, the same on every call,
train and dev disjoint, read by fine-tuning's readers. Classification: GLUE-style TSV, every
class in both files; tagging: CoNLL-style, the quoted code terms in BIO form, and the words
swapped in from another sentence; question
answering: SQuAD JSON whose answers are at their offsets; regression: STS-B-style pairs
scored by the share of words the second sentence keeps, read by their own columns; multiple
choice: a sentence's next sentence among three of other topics, JSON Lines."""

import collections
import csv
import json
import random
from pydoc_data import topics as pydoc_topics

import pytest

from bert_tf.data import (
  builtin_answering,
  builtin_choice,
  builtin_similarity,
  builtin_swaps,
  builtin_tagging,
  builtin_task,
  builtin_tasks,
)
from bert_tf.data.builtin_corpus import topic_sentences
from bert_tf.errors import UserError
from bert_tf.finetune import FinetuneConfig
from bert_tf.finetune.kinds.answer import squad
from bert_tf.finetune.kinds.choose import choice
from bert_tf.finetune.kinds.tag import tagging
from bert_tf.finetune.tasks import task_kind


def read(path):
  with open(path, encoding="utf-8") as f:
    return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_files_have_a_header_and_two_columns(tmp_path):
  train_path, dev_path = builtin_tasks.task_files("builtin", str(tmp_path))
  for path in (train_path, dev_path):
    rows = read(path)
    assert rows[0] == ["text", "label"]
    assert all(len(row) == 2 and row[0] and row[1] for row in rows[1:])
  assert builtin_tasks.resolve("builtin", str(tmp_path), "train", "classify") == train_path
  assert builtin_tasks.resolve("builtin", str(tmp_path), "dev", "classify") == dev_path
  assert builtin_tasks.resolve("mine.tsv", str(tmp_path), "dev", "classify") == "mine.tsv"
  with pytest.raises(UserError, match=r"^builtin_tag is the built-in tag task, not a classify "
                     r"task: use --task=tag \(the built-in classify task is builtin\)$"):
    builtin_tasks.resolve("builtin_tag", str(tmp_path), "train", "classify")


def test_classes_splits_and_sizes(tmp_path):
  train, dev = (read(path)[1:] for path in builtin_tasks.task_files("builtin", str(tmp_path)))
  train_counts = collections.Counter(label for _, label in train)
  dev_counts = collections.Counter(label for _, label in dev)
  assert len(train_counts) == builtin_task.NUM_CLASSES == len(dev_counts)
  assert set(train_counts) == set(dev_counts)
  assert not {text for text, _ in train} & {text for text, _ in dev}
  # One sentence in DEV_EVERY of each topic is in dev.
  for label, count in dev_counts.items():
    assert count == (train_counts[label] + count) // builtin_task.DEV_EVERY
  assert len(train) >= 500 and len(dev) >= 100
  # Always answering the largest class is well below certainty: the task has to be learned.
  assert max(dev_counts.values()) / len(dev) < 0.4
  assert all(len(text.split()) >= builtin_task.MIN_WORDS for text, _ in train + dev)


@pytest.mark.parametrize("name", sorted(builtin_tasks.TASKS))
def test_same_files_on_every_call(tmp_path, name):
  assert builtin_tasks.TASKS[name].examples() == builtin_tasks.TASKS[name].examples()
  first = [open(p).read() for p in builtin_tasks.task_files(name, str(tmp_path / "a"))]
  second = [open(p).read() for p in builtin_tasks.task_files(name, str(tmp_path / "b"))]
  assert first == second
  assert builtin_tasks.kind_of(name) == builtin_tasks.TASKS[name].KIND


def test_tagging_files_are_bio_and_tag_quoted_terms(tmp_path):
  train_path, dev_path = builtin_tasks.task_files("builtin_tag", str(tmp_path))
  assert train_path.endswith("builtin_tag/train.conll")
  train, dev, tags = tagging.read_tagging_task(train_path, dev_path)  # every line checked
  assert tags == ["B-CODE", "B-EXCEPTION", "B-KEYWORD", "I-CODE", "O"]
  assert len(train) >= 500 and len(dev) >= 120
  assert not {" ".join(w) for w in train.words} & {" ".join(w) for w in dev.words}
  for sentence_tags in train.tags + dev.tags:  # an I- only continues its own type
    for before, tag in zip(["O", *sentence_tags], sentence_tags):
      assert not tag.startswith("I-") or before[2:] == tag[2:]
  assert all(len(words) <= builtin_tagging.MAX_WORDS for words in train.words + dev.words)
  # Entities are a small share of the words, but every dev file has some of each type.
  dev_counts = collections.Counter(tag for sentence in dev.tags for tag in sentence)
  assert all(dev_counts[f"B-{kind}"] >= 5 for kind in builtin_tagging.TYPES)
  assert builtin_tagging.tagged_words('The "if" statement; if "x.y()" raises "KeyError".') == (
      ["The", '"', "if", '"', "statement", ";", "if", '"', "x", ".", "y", "(", ")", '"',
       "raises", '"', "KeyError", '"', "."],
      ["O", "O", "B-KEYWORD", "O", "O", "O", "O", "O", "B-CODE", "I-CODE", "I-CODE", "I-CODE",
       "I-CODE", "O", "O", "O", "B-EXCEPTION", "O", "O"])


def test_swap_files_tag_the_words_swapped_in_from_another_topics_sentence(tmp_path):
  train_path, dev_path = builtin_tasks.task_files("builtin_swap", str(tmp_path))
  assert train_path.endswith("builtin_swap/train.conll")
  train, dev, tags = tagging.read_tagging_task(train_path, dev_path)  # every line checked
  assert tags == ["B-SWAP", "I-SWAP", "O"]
  assert len(train) >= 1000 and len(dev) >= 250
  # Each sentence is a prose sentence of its split with one or two runs swapped: its O words
  # are the original's, its swapped words differ from those they replace, case aside.
  originals = {split: [words for _, words in sentences]
               for split, sentences in zip(("train", "dev"), builtin_similarity.split_sentences(
                   builtin_tagging.WORD.findall))}
  for split, sentences in (("train", train), ("dev", dev)):
    by_length = collections.defaultdict(list)
    for words in originals[split]:
      by_length[len(words)].append(words)
    for words, sentence_tags in zip(sentences.words, sentences.tags):
      runs = sum(tag == "B-SWAP" for tag in sentence_tags)
      assert 1 <= runs <= 2 and builtin_swaps.MIN_WORDS <= len(words) <= builtin_swaps.MAX_WORDS
      original = next(o for o in by_length[len(words)]
                      if all(w == x for w, x, t in zip(words, o, sentence_tags) if t == "O"))
      for word, before, tag in zip(words, original, sentence_tags):
        assert tag == "O" or (word.lower() != before.lower()
                              and len(word) >= builtin_swaps.MIN_LETTERS)
  # Dev's sentences are not in the training file, swapped or not.
  assert not {" ".join(w) for w in originals["dev"]} & {" ".join(w) for w in originals["train"]}
  rng = random.Random(0)
  words, donor = "The list method appends items".split(), "A dict value returns keys".split()
  swapped_words, swap_tags = builtin_swaps.swapped(words, donor, 1, rng)
  assert swap_tags[0] == "O"  # `The` and `A`: too short to swap
  assert [w for w, t in zip(swapped_words, swap_tags) if t != "O"] == [
      d for d, t in zip(donor, swap_tags) if t != "O"]
  assert builtin_swaps.swapped(words, "The list method appends items".split(), 1, rng) is None


def test_answering_files_are_squad_with_answers_at_their_offsets(tmp_path):
  train_path, dev_path = builtin_tasks.task_files("builtin_answer", str(tmp_path))
  train, dev = (squad.read_squad(path) for path in (train_path, dev_path))  # offsets checked
  assert len(train) >= 600 and len(dev) >= 150 and not train.has_unanswerable
  assert not set(train.contexts) & set(dev.contexts)
  with open(dev_path) as f:
    paragraphs = json.load(f)["data"][0]["paragraphs"]
  for paragraph in paragraphs:
    for qa in paragraph["qas"]:
      (answer,) = qa["answers"]
      start = answer["answer_start"]
      assert paragraph["context"][start:start + len(answer["text"])] == answer["text"]
      # The question is a sentence of the context with its answer (quoted) put as "what".
      before, after = qa["question"].split("what", 1) if "what" in qa["question"] else ("", "")
      assert f'{before}"{answer["text"]}"{after}' in paragraph["context"] or (
          qa["question"].count("what") > 1)
  assert builtin_answering.paragraph(['Use "pass" here.', 'Then "x".'], 7) == {
      "context": 'Use "pass" here. Then "x".',
      "qas": [{"id": "builtin-7-0", "question": "Use what here.",
               "answers": [{"text": "pass", "answer_start": 5}]},
              {"id": "builtin-7-1", "question": "Then what.",
               "answers": [{"text": "x", "answer_start": 23}]}]}


def test_similarity_files_are_pairs_scored_by_the_share_of_words_kept(tmp_path):
  train_path, dev_path = builtin_tasks.task_files("builtin_similar", str(tmp_path))
  assert train_path.endswith("builtin_similar/train.tsv")
  train, dev = read(train_path), read(dev_path)
  assert train[0] == dev[0] == ["sentence1", "sentence2", "score"]
  train, dev = train[1:], dev[1:]
  assert len(train) >= 500 and len(dev) >= 150
  for first, second, score in train + dev:
    words, kept_or_not = first.split(), second.split()
    assert len(words) == len(kept_or_not)
    assert builtin_similarity.MIN_WORDS <= len(words) <= builtin_similarity.MAX_WORDS
    # A word is kept as it is or replaced by a different one, case aside.
    assert all(a == b or a.lower() != b.lower() for a, b in zip(words, kept_or_not))
    assert score == f"{sum(a == b for a, b in zip(words, kept_or_not)) / len(words):.2f}"
  # Each share aimed at is a fifth of each file (a score is within half a word of its aim).
  for rows in (train, dev):
    aims = collections.Counter(round(float(score) * 4) / 4 for _, _, score in rows)
    assert sorted(aims) == list(builtin_similarity.KEPT)
    assert max(aims.values()) - min(aims.values()) <= 1, aims
  # No sentence of dev is in the training file; a pair's donor is of the pair's split (a
  # pair that keeps nothing is its donor's first words).
  assert not {first for first, _, _ in dev} & {text for row in train for text in row[:2]}
  for rows, sentences in zip((train, dev), builtin_similarity.split_sentences()):
    starts = [" ".join(words) + " " for _, words in sentences]
    assert all(any(start.startswith(second + " ") for start in starts)
               for _, second, score in rows if score == "0.00")
  assert builtin_similarity.changed("A b c d".split(), "a x c z".split(), 0.5,
                                    random.Random(0)) == "A x c z".split()
  assert builtin_similarity.changed("a b c d".split(), "a x c z".split(), 0.0,
                                    random.Random(0)) is None  # two places the same
  assert builtin_similarity.changed("a b c".split(), "x y".split(), 1.0,
                                    random.Random(0)) is None  # too short


def test_choice_files_put_a_sentences_next_sentence_among_three_of_other_topics(tmp_path):
  train_path, dev_path = builtin_tasks.task_files("builtin_choice", str(tmp_path))
  assert train_path.endswith("builtin_choice/train.jsonl")
  train, dev = (choice.read_choices(path, "--train_file") for path in (train_path, dev_path))
  assert len(train) >= 450 and len(dev) >= 100
  pairs = builtin_choice.next_sentence_pairs()
  topic_of = {sentence: topic for split in pairs for topic, *two in split for sentence in two}
  for read, split in zip((train, dev), pairs):
    assert [(c, e[label]) for c, e, label in zip(read.contexts, read.endings, read.labels)] == [
        (context, ending) for _, context, ending in split]
    # The next sentence follows its context in the topic; the distractors are of as many
    # other topics, each some other context's next sentence of the same split.
    endings = {ending for _, _, ending in split}
    for context, row, label in zip(read.contexts, read.endings, read.labels):
      assert len(row) == builtin_choice.DISTRACTORS + 1 and set(row) <= endings
      assert len({topic_of[sentence] for sentence in [context, *row[:label], *row[label + 1:]]}
                 ) == len(row)
    # Each place of the right ending about a quarter of the time: it has to be read.
    assert max(collections.Counter(read.labels).values()) / len(read) < 0.33
  sentences = [{s for _, *two in split for s in two} for split in pairs]
  assert not sentences[0] & sentences[1]  # no sentence of dev in training
  for topic, context, ending in pairs[1][:20]:
    lines = topic_sentences(pydoc_topics.topics[topic])
    assert lines[lines.index(context) + 1] == ending


def test_a_built_in_tsv_task_is_read_by_its_own_columns(tmp_path):
  assert builtin_tasks.columns("builtin_similar") == (["sentence1", "sentence2"], "score")
  assert builtin_tasks.columns("builtin") == (["text"], "label")
  assert builtin_tasks.columns("builtin_tag") is None
  assert builtin_tasks.columns("mine.tsv") is None
  files = dict(train_file="builtin_similar", dev_file="builtin_similar",
               data_dir=str(tmp_path))
  # The column flags left at their defaults, or naming the task's own columns.
  for columns in ({}, dict(text_columns="sentence1,sentence2", label_column="score")):
    kind = task_kind(FinetuneConfig(task="regress", **files, **columns))
    assert kind.pair and len(kind.train) >= 500 and len(kind.dev) >= 150
    assert 0 <= min(kind.train_targets) < max(kind.train_targets) <= 1
  with pytest.raises(UserError, match="^builtin_similar is the built-in regress task, not a "
                     "classify task"):
    task_kind(FinetuneConfig(task="classify", **files))

"""Small GLUE directories written in each task's exact layout, for tests: the header rows (or
none, CoLA's training files), column orders, label names and index columns GLUE's download
gives, with sentences written for the tests. Some open with a quotation mark, closed later or
never, as GLUE's do: its files are not quoted, and a reader that takes `"` for a quote joins
rows."""

import os

SENTENCES = [
    "The committee approved the budget after a long debate.",
    "A small dog slept under the kitchen table all afternoon.",
    '"The river flooded the lower town," the mayor said of the spring storms.',
    "She finished reading the novel on the train home.",
    '"Prices at the market rose sharply over the winter.',  # never closed
    "The museum opens its new wing to visitors next month.",
    "Two students repaired the old bicycle in the garage.",
    "Heavy snow closed the mountain pass for three days.",
    "The orchestra played the symphony without a conductor.",
    "Farmers in the valley harvested the wheat early this year.",
    "The bridge was painted bright red by the city workers.",
    "A new bakery opened on the corner of our street.",
    "The pilot landed the plane safely despite the fog.",
    "Our neighbours planted three apple trees in their garden.",
    "The library extended its opening hours for the exams.",
    "A sudden power cut stopped the factory for an hour.",
]
QUESTIONS = [
    "When did the committee approve the budget?",
    "Where did the small dog sleep?",
    "What flooded the lower town?",
    '"Where did she finish reading the novel?',
    "Why did prices rise at the market?",
    "When does the museum open its new wing?",
    "Who repaired the old bicycle?",
    "How long was the mountain pass closed?",
    "Did the orchestra play without a conductor?",
    "What did the farmers harvest early?",
    "Who painted the bridge red?",
    "Where did the new bakery open?",
    "How did the pilot land in the fog?",
    "What did our neighbours plant?",
    "Why did the library extend its hours?",
    "What stopped the factory for an hour?",
]
UNACCEPTABLE = [  # CoLA's other class: sentences a grammar rejects
    "The committee approved after a long the budget debate.",
    "Dog a small slept table under the kitchen.",
    "She finished reading the novel on home train the the.",
    "Prices rose at sharply the market winter over.",
]


def _write(path: str, rows: list[list[str]], header: list[str] | None = None) -> None:
  os.makedirs(os.path.dirname(path), exist_ok=True)
  lines = ([header] if header else []) + rows
  with open(path, "w", encoding="utf-8") as f:
    f.write("".join("\t".join(line) + "\n" for line in lines))


def _pairs(count: int, offset: int) -> list[tuple[str, str]]:
  n = len(SENTENCES)
  return [(SENTENCES[(offset + i) % n], SENTENCES[(offset + 3 * i + 1) % n])
          for i in range(count)]


def _splits(write_split) -> None:
  """write_split(name, count, offset) for train (12 rows), dev (4) and test (3)."""
  for name, count, offset in (("train", 12, 0), ("dev", 4, 5), ("test", 3, 9)):
    write_split(name, count, offset)


def write_cola(glue_dir: str) -> None:
  def split(name, count, offset):
    path = os.path.join(glue_dir, "CoLA", f"{name}.tsv")
    if name == "test":
      return _write(path, [[str(i), SENTENCES[offset + i]] for i in range(count)],
                    ["index", "sentence"])
    rows = []
    for i in range(count):
      good = i % 2 == 0
      sentence = SENTENCES[offset + i] if good else UNACCEPTABLE[(offset + i) % 4]
      rows.append(["gj04", "1" if good else "0", "" if good else "*", sentence])
    _write(path, rows)
  _splits(split)


def write_sst2(glue_dir: str) -> None:
  def split(name, count, offset):
    path = os.path.join(glue_dir, "SST-2", f"{name}.tsv")
    if name == "test":
      return _write(path, [[str(i), SENTENCES[offset + i]] for i in range(count)],
                    ["index", "sentence"])
    _write(path, [[SENTENCES[offset + i].lower(), str(i % 2)] for i in range(count)],
           ["sentence", "label"])
  _splits(split)


def write_mrpc(glue_dir: str) -> None:
  def split(name, count, offset):
    path = os.path.join(glue_dir, "MRPC", f"{name}.tsv")
    rows = [[str(i % 2), str(1000 + offset + i), str(2000 + offset + i), a, b]
            for i, (a, b) in enumerate(_pairs(count, offset))]
    if name == "test":
      return _write(path, [[str(i), *row[1:]] for i, row in enumerate(rows)],
                    ["index", "#1 ID", "#2 ID", "#1 String", "#2 String"])
    _write(path, rows, ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"])
  _splits(split)


def write_qqp(glue_dir: str) -> None:
  def split(name, count, offset):
    path = os.path.join(glue_dir, "QQP", f"{name}.tsv")
    n = len(QUESTIONS)
    questions = [(QUESTIONS[(offset + i) % n], QUESTIONS[(offset + 2 * i + 1) % n])
                 for i in range(count)]
    if name == "test":
      return _write(path, [[str(100 + i), a, b] for i, (a, b) in enumerate(questions)],
                    ["id", "question1", "question2"])
    _write(path, [[str(i), str(2 * i), str(2 * i + 1), a, b, str(i % 2)]
                  for i, (a, b) in enumerate(questions)],
           ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"])
  _splits(split)


def write_stsb(glue_dir: str) -> None:
  header = ["index", "genre", "filename", "year", "old_index", "source1", "source2",
            "sentence1", "sentence2"]

  def split(name, count, offset):
    path = os.path.join(glue_dir, "STS-B", f"{name}.tsv")
    rows = [[str(i), "main-news", "headlines", "2015", str(offset + i), "none", "none", a, b]
            for i, (a, b) in enumerate(_pairs(count, offset))]
    if name == "test":
      return _write(path, rows, header)
    _write(path, [[*row, f"{(i * 0.7) % 5:.3f}"] for i, row in enumerate(rows)],
           [*header, "score"])
  _splits(split)


MNLI_LABELS = ["entailment", "neutral", "contradiction"]
_MNLI_HEADER = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
                "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
                "sentence2"]


def _mnli_rows(count, offset, labels_per_row):
  rows = []
  for i, (a, b) in enumerate(_pairs(count, offset)):
    label = MNLI_LABELS[i % 3]
    parses = [f"( {a} )", f"( {b} )", f"(ROOT {a})", f"(ROOT {b})"]
    row = [str(i), str(5000 + i), f"{5000 + i}e", "fiction", *parses, a, b]
    rows.append(row + [label] * labels_per_row)
  return rows


def write_mnli(glue_dir: str) -> None:
  directory = os.path.join(glue_dir, "MNLI")
  _write(os.path.join(directory, "train.tsv"), _mnli_rows(12, 0, 2),
         [*_MNLI_HEADER, "label1", "gold_label"])
  dev_header = [*_MNLI_HEADER, *(f"label{i}" for i in range(1, 6)), "gold_label"]
  _write(os.path.join(directory, "dev_matched.tsv"), _mnli_rows(4, 5, 6), dev_header)
  _write(os.path.join(directory, "dev_mismatched.tsv"), _mnli_rows(3, 7, 6), dev_header)
  _write(os.path.join(directory, "test_matched.tsv"), _mnli_rows(3, 9, 0), _MNLI_HEADER)
  _write(os.path.join(directory, "test_mismatched.tsv"), _mnli_rows(2, 11, 0), _MNLI_HEADER)
  _write(os.path.join(glue_dir, "diagnostic", "diagnostic.tsv"),
         [[str(i), a, b] for i, (a, b) in enumerate(_pairs(2, 13))],
         ["index", "sentence1", "sentence2"])


def _write_pair_task(glue_dir, directory, columns, labels):
  def split(name, count, offset):
    path = os.path.join(glue_dir, directory, f"{name}.tsv")
    rows = [[str(i), a, b] for i, (a, b) in enumerate(_pairs(count, offset))]
    if name == "test":
      return _write(path, rows, ["index", *columns])
    _write(path, [[*row, labels[i % 2]] for i, row in enumerate(rows)],
           ["index", *columns, "label"])
  _splits(split)


def write_qnli(glue_dir: str) -> None:
  _write_pair_task(glue_dir, "QNLI", ["question", "sentence"],
                   ["entailment", "not_entailment"])
  for name in ("train", "dev", "test"):  # QNLI's first text is a question
    path = os.path.join(glue_dir, "QNLI", f"{name}.tsv")
    with open(path, encoding="utf-8") as f:
      header, *rows = [line.rstrip("\n").split("\t") for line in f]
    _write(path, [[row[0], QUESTIONS[SENTENCES.index(row[1])], *row[2:]] for row in rows],
           header)


def write_rte(glue_dir: str) -> None:
  _write_pair_task(glue_dir, "RTE", ["sentence1", "sentence2"],
                   ["entailment", "not_entailment"])


def write_wnli(glue_dir: str) -> None:
  _write_pair_task(glue_dir, "WNLI", ["sentence1", "sentence2"], ["0", "1"])


WRITERS = {"cola": write_cola, "sst2": write_sst2, "mrpc": write_mrpc, "qqp": write_qqp,
           "stsb": write_stsb, "mnli": write_mnli, "qnli": write_qnli, "rte": write_rte,
           "wnli": write_wnli}

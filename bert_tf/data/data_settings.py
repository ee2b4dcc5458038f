"""The data settings: how the corpus's text reads (`TextConfig`), where the corpus is
(`CorpusConfig`), how groups of its files are mixed by weight (`MixtureConfig`), the
vocabulary learned from it (`VocabularyConfig`), how examples are made from it
(`PipelineConfig`) or read from original BERT's records (`RecordsConfig`), and the columns of
a labelled task's files (`ColumnsConfig`).

Each setting is declared here once (see `bert_tf.settings`); `train.py`, `bert_tf.vocab` and
`bert_tf.audit` take their flags from these classes. No TensorFlow import: a flagfile is read
before TensorFlow loads. Why the example settings are what they are: docs/design.md.
"""

import dataclasses

from bert_tf.errors import UserError
from bert_tf.settings import MODEL, NOTED, STREAM, check_choices, setting

INPUT_FORMATS = ("sentence_per_line", "paragraph_per_line")  # the layouts of a text corpus
RECORDS = "tfrecord"  # the other input: original BERT's pre-training records (docs/records.md)
# About 8 MiB of text a piece (`pieces.py`): some 50,000 sentences, enough that opening a piece
# costs nothing next to tokenizing it, and small enough that a resumed run recomputes little
# and a 100 MB corpus still makes a dozen pieces to share between input pipelines.
PIECE_BYTES = 8 << 20
COMPRESSIONS = ("", "GZIP", "ZLIB")  # of record files, as tf.data.TFRecordDataset's


@dataclasses.dataclass(frozen=True)
class TextConfig:
  """How the corpus's text reads: its layout and its case."""

  input_format: str = setting(
      "sentence_per_line", "sentence_per_line: one sentence a line, blank lines between "
      "documents. paragraph_per_line: each line a document, split into sentences. tfrecord: "
      "original BERT's pre-training records (create_pretraining_data.py's, or "
      "bert_tf.prepare's), seq_length and max_predictions_per_seq taken from them.",
      choices=(*INPUT_FORMATS, RECORDS), change=STREAM)
  do_lower_case: bool = setting(True, "Lower-case and strip accents (uncased model).",
                                change=STREAM)


@dataclasses.dataclass(frozen=True)
class DataDirConfig:
  """Where built-in data is written."""

  data_dir: str = setting("data", "Where the built-in corpus and the built-in tasks are "
                          "written.", change=NOTED)


@dataclasses.dataclass(frozen=True)
class CorpusConfig(DataDirConfig, TextConfig):
  """Where the corpus is."""

  input_files: str = setting(
      "builtin", "Training corpus: globs or a comma list, local paths or any tf.io.gfile URL "
      "(`|` separates patterns too: the patterns of one group with --input_weights). "
      "`builtin` is Python's language reference (pydoc_data.topics), written under "
      "--data_dir when first needed.", change=STREAM)


def split_patterns(file_patterns: str) -> list[str]:
  """The patterns of a --input_files value: separated by commas or `|`, blanks dropped."""
  return [p.strip() for p in file_patterns.replace("|", ",").split(",") if p.strip()]


def corpus_groups(file_patterns) -> list[list[str]]:
  """The groups of a mixed --input_files value (docs/pipeline.md#corpora-mixed-by-weight):
  each comma-separated item (or item of a list) is one group, its patterns separated by `|`."""
  items = file_patterns.split(",") if isinstance(file_patterns, str) else file_patterns
  return [split_patterns(item) for item in items if item.strip()]


@dataclasses.dataclass(frozen=True)
class MixtureConfig(CorpusConfig):
  """How the corpus's groups of files are mixed: by weight, or not at all."""

  input_weights: str = setting(
      "", "Mix groups of corpus files by weight, one positive number per comma-separated "
      "item of --input_files (`--input_files='domain/*.txt,general/*.txt' "
      "--input_weights=4,1`; the patterns of one group separated by `|`): examples are "
      "drawn from the groups in that proportion, NotNext partners within each group, and "
      "--eval_fraction holds out that share of each. Empty: one corpus.", change=STREAM)

  def weights(self) -> tuple[float, ...] | None:
    """The groups' weights (None: the corpus is not mixed). Raises UserError unless there is
    one positive number per group of --input_files."""
    if not self.input_weights.strip():
      return None
    try:
      weights = tuple(float(w) for w in self.input_weights.split(","))
    except ValueError:
      raise UserError(f"--input_weights={self.input_weights} is not a comma list of numbers "
                      "(one per group of --input_files)") from None
    groups = corpus_groups(self.input_files)
    if len(weights) != len(groups):
      raise UserError(f"--input_weights gives {len(weights)} weight(s) for "
                      f"{len(groups)} group(s) of --input_files (one per comma-separated "
                      "item; the patterns of one group are separated by `|`)")
    if not all(0 < w < float("inf") for w in weights):
      raise UserError(f"--input_weights={self.input_weights}: every weight must be a "
                      "positive number")
    return weights

  def check(self) -> None:
    self.weights()


@dataclasses.dataclass(frozen=True)
class ColumnsConfig:
  """The columns of a labelled task's TSV files, named by a header row (GLUE's) or numbered."""

  text_columns: str = setting(
      "text", "The text column, or two for a pair of texts (`sentence1,sentence2`); a "
      "built-in task's files are read by their own.", change=STREAM)
  label_column: str = setting("label", "The label column (any strings; the classes are the "
                              "training file's sorted distinct labels).", change=STREAM)
  no_header: bool = setting(False, "The files have no header row (CoLA's): the columns are "
                            "numbered from 0, `--text_columns=3 --label_column=1`.",
                            change=STREAM)


@dataclasses.dataclass(frozen=True)
class VocabularyConfig(CorpusConfig):
  """The WordPiece vocabulary, and how it is learned from the corpus when it does not exist."""

  vocab_file: str = setting("data/vocab.txt", "WordPiece vocabulary, one token a line. Built "
                            "from the corpus if it does not exist.", change=MODEL)
  vocab_size: int = setting(8000, "Largest vocabulary to learn when --vocab_file is built.",
                            change=NOTED)
  min_token_count: int = setting(2, "Leave out tokens seen fewer times when learning the "
                                 "vocabulary.", change=NOTED)


@dataclasses.dataclass(frozen=True)
class PipelineConfig(TextConfig):
  """How examples are made from the corpus's documents."""

  seq_length: int = setting(128, "Tokens per example, [CLS] and [SEP]s included.", change=STREAM)
  max_predictions_per_seq: int = setting(20, "Masked-LM prediction slots per example.",
                                         change=STREAM)
  masked_lm_prob: float = setting(0.15, "Share of tokens to predict.", change=STREAM)
  short_seq_prob: float = setting(0.1, "Chance of a shorter target length for an example.",
                                  change=STREAM)
  mask_token_rate: float = setting(0.8, "Share of the predicted tokens replaced by [MASK].",
                                   change=STREAM)
  random_token_rate: float = setting(0.1, "Share of the predicted tokens replaced by a random "
                                     "token (the rest are kept).", change=STREAM)
  whole_word_masking: bool = setting(False, "Mask whole words (a word and its ## pieces) with "
                                     "one decision.", change=STREAM)
  nsp: bool = setting(True, "Train next sentence prediction; --nonsp is MLM only.", change=STREAM)
  documents_per_window: int = setting(32, "Documents read together, among which a random "
                                      "next sentence is drawn.", change=STREAM)
  document_shuffle_buffer: int = setting(1000, "Documents, then examples, are shuffled in "
                                         "blocks of this many within a piece of the corpus.",
                                         change=STREAM)
  example_shuffle_buffer: int = setting(1000, "Examples shuffled together within a piece.",
                                        change=STREAM)
  piece_bytes: int = setting(PIECE_BYTES, "Bytes of corpus per piece, the unit the stream is "
                             "cut into and resumed by.", change=STREAM)
  packing: bool = setting(
      False, "Pack several pairs into each row of seq_length tokens (each its own [CLS] A "
      "[SEP] B [SEP], positions, attention and NSP), so that short documents stop training "
      "on padding: docs/pipeline.md#packing. The weights are the same BERT's.", change=STREAM)

  def check(self) -> None:
    """Rejects settings that could only train wrongly, before any data is read."""
    check_choices(self)
    if self.seq_length < 8:
      raise UserError(f"seq_length {self.seq_length} is too short (at least 8)")
    if not 0 < self.masked_lm_prob < 1:
      raise UserError(f"masked_lm_prob {self.masked_lm_prob} is not in (0, 1)")
    # Records bring their own prediction slots; re-masking fills at most as many.
    needed = 0 if self.input_format == RECORDS else (
        -(-int(round(self.masked_lm_prob * self.seq_length * 1000)) // 1000))
    if self.max_predictions_per_seq < needed:
      raise UserError(
          f"max_predictions_per_seq {self.max_predictions_per_seq} is below "
          f"ceil(masked_lm_prob * seq_length) = {needed}: fewer tokens would be masked "
          "than masked_lm_prob asks")
    if not 0 <= self.short_seq_prob <= 1:
      raise UserError(f"short_seq_prob {self.short_seq_prob} is not in [0, 1]")
    if min(self.mask_token_rate, self.random_token_rate) < 0 or (
        self.mask_token_rate + self.random_token_rate > 1):
      raise UserError("mask_token_rate and random_token_rate must be >= 0 and sum to <= 1")
    if min(self.documents_per_window, self.document_shuffle_buffer,
           self.example_shuffle_buffer, self.piece_bytes) <= 0:
      raise UserError("documents_per_window, the shuffle buffers and piece_bytes must be "
                      "positive")


@dataclasses.dataclass(frozen=True)
class RecordsConfig:
  """How original BERT's records are read (--input_format=tfrecord; docs/records.md)."""

  record_compression: str = setting("", "The records' compression: GZIP or ZLIB (none: plain "
                                    "TFRecords).", choices=COMPRESSIONS, change=STREAM)
  remask: bool = setting(False, "Mask the records anew each epoch (true tokens back, then "
                         "--masked_lm_prob, the 80/10/10 rates and --whole_word_masking), "
                         "instead of the masks they were written with.", change=STREAM)
  shuffle_records: bool = setting(True, "Read the record files in an order drawn from the seed "
                                  "and the epoch, each file's records shuffled in blocks; "
                                  "--noshuffle_records interleaves the files round-robin as "
                                  "listed, each file's records as written, every epoch alike "
                                  "(bert_tf.prepare's order).", change=STREAM)

  def check(self) -> None:
    check_choices(self)


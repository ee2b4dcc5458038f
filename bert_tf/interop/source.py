"""Where a pre-trained BERT comes from, decided in one place for every command that reads one
(`--init_checkpoint`, fine-tuning's `--model_dir`): a bert_tf model_dir, a Hugging Face BERT
directory or an original BERT checkpoint. `open_source` recognises the path and returns a
`Source`, which every caller asks the same things: the model's shape, its vocabulary and case,
and its weights. Every way the path can be wrong is one line naming the problem."""

import abc
import atexit
import functools
import json
import logging
import os
import shutil
import tempfile

import keras
import tensorflow as tf

from bert_tf import model_dir, run_record
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.interop import huggingface, keras_hub_preset, tf1_checkpoint
from bert_tf.model.bert_config import BertConfig

log = logging.getLogger("bert_tf")

ACCEPTED = ("a bert_tf model_dir, an original BERT checkpoint (the bert_model.ckpt prefix or "
            "its directory, with bert_config.json beside it) or a Hugging Face BertForPreTraining "
            f"directory (config.json and {huggingface.WEIGHTS})")


class Source(abc.ABC):
  """A pre-trained BERT on disk, of the kind `kind` names. `flag` is the setting that gave
  its `path`, for messages."""

  kind = ""
  has_checkpoint = False  # a bert_tf run that can go on: weights, optimizer and step

  def __init__(self, path: str, flag: str):
    self.path, self.flag = path, flag

  @property
  @abc.abstractmethod
  def config(self) -> BertConfig:
    """The model's shape."""

  @property
  @abc.abstractmethod
  def lower_case(self) -> bool:
    """Whether the model was trained on lower-cased text."""

  @abc.abstractmethod
  def vocabulary_file(self) -> str:
    """Where the vocabulary it was trained with is."""

  @functools.cached_property
  def vocabulary(self) -> Vocabulary:
    """The vocabulary it was trained with, of the size of the model's embeddings."""
    vocabulary = Vocabulary(self.vocabulary_file())
    if len(vocabulary) != self.config.vocab_size:
      raise UserError(f"{self.path}: its vocabulary {vocabulary.path} has {len(vocabulary)} "
                      f"tokens, but its model's vocab_size is {self.config.vocab_size}: they "
                      "must match")
    return vocabulary

  @property
  @abc.abstractmethod
  def config_file(self) -> str:
    """Where its shape is written, named in messages."""

  def check_config(self, config: BertConfig, given: str = "the model to load",
                   hint: str = "") -> None:
    """Raises a one-line UserError naming both shapes unless `config`, the shape that `given`
    names, makes the model this one is; `hint` ends the line."""
    theirs = self.config
    differing = theirs.differing(config)
    if differing:
      raise UserError(
          f"{given} is a model of {config.shape}, but {self.flag} {self.path} is one of "
          f"{theirs.shape} ({self.config_file}): " + ", ".join(
              f"{name} {getattr(config, name)} against its {getattr(theirs, name)}"
              for name in differing) + (f"; {hint}" if hint else ""))

  def check_loadable(self) -> None:
    """Raises a one-line UserError unless its weights can be loaded: every file they need is
    there and its shape can be read. Nothing is loaded."""
    _ = self.config

  @abc.abstractmethod
  def load_weights(self, model: keras.Model, config: BertConfig) -> None:
    """Sets the weights of `model`, a pre-training model of `config` (both heads: every kind
    stores them, or says in a line which it lacks); a model of another shape is an error."""


class RunDirectory(Source):
  """A train.py model_dir: finished (its final weights, `model.weights.h5`) or still training
  (its checkpoints only). Its weights are the final ones; a run goes on from its checkpoints
  through the trainer (`has_checkpoint`). A side file that is gone (`bert_config.json`,
  `train_config.json`, `vocab.txt`) is read from the record of its newest whole checkpoint
  (`bert_tf/run_record.py`): reading a model_dir writes nothing into it."""

  kind = "a bert_tf model_dir"

  def __init__(self, path: str, flag: str = "--model_dir"):
    super().__init__(path, flag)

  @property
  def has_checkpoint(self) -> bool:
    return model_dir.has_checkpoint(self.path)

  def _file(self, name: str) -> str:
    if not tf.io.gfile.isdir(self.path):
      raise UserError(f"{self.path} is not found: it takes a finished train.py model_dir")
    path = os.path.join(self.path, name)
    if not tf.io.gfile.exists(path):
      raise UserError(f"{self.path} has no {name}: is it a finished train.py model_dir?")
    return path

  @functools.cached_property
  def _recorded(self) -> dict[str, str]:
    """The texts of the side files it lacks, from its newest whole checkpoint's record (said
    in a line); {} when it lacks none or has no recorded checkpoint."""
    gone = [name for name in (model_dir.CONFIG_FILE, model_dir.TRAIN_CONFIG_FILE,
                              model_dir.VOCAB_FILE)
            if not tf.io.gfile.exists(os.path.join(self.path, name))]
    found = run_record.latest(self.path) if gone else None
    if not found:
      return {}
    checkpoint, record = found
    log.info("%s has no %s: read from the record in its checkpoint %s", self.path,
             ", ".join(gone), checkpoint)
    texts = run_record.side_files(record)
    return {name: texts[name] for name in gone}

  def _text(self, name: str) -> str:
    """The side file `name`'s text: the file's, or the record's when it is gone; a one-line
    UserError when neither is there."""
    if name in self._recorded:
      return self._recorded[name]
    with tf.io.gfile.GFile(self._file(name)) as f:
      return f.read()

  @functools.cached_property
  def config(self) -> BertConfig:
    """Its bert_config.json, or, without one, the record of its latest checkpoint."""
    if model_dir.CONFIG_FILE in self._recorded:
      return BertConfig(**json.loads(self._recorded[model_dir.CONFIG_FILE]))
    return BertConfig.from_json_file(self._file(model_dir.CONFIG_FILE))

  @property
  def config_file(self) -> str:
    return os.path.join(self.path, model_dir.CONFIG_FILE)

  @functools.cached_property
  def settings(self) -> dict:
    """The run's settings, as `train_config.json` (or the record) gives them."""
    return json.loads(self._text(model_dir.TRAIN_CONFIG_FILE))

  @functools.cached_property
  def lower_case(self) -> bool:
    return self.settings["do_lower_case"]

  def vocabulary_file(self) -> str:
    """Its vocab.txt; without one, the record's tokens in a temporary file
    (`_recorded_vocabulary`)."""
    if model_dir.VOCAB_FILE not in self._recorded:
      return self._file(model_dir.VOCAB_FILE)
    return self._recorded_vocabulary

  @functools.cached_property
  def _recorded_vocabulary(self) -> str:
    """The record's vocabulary written to a local temporary directory that is removed when
    the process ends: the exports and fine-tuning copy a vocabulary from a file, and the
    model_dir is not theirs to write in."""
    directory = tempfile.mkdtemp(prefix="bert_tf-recorded-")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    path = os.path.join(directory, model_dir.VOCAB_FILE)
    with open(path, "w", encoding="utf-8") as f:
      f.write(self._recorded[model_dir.VOCAB_FILE])
    return path

  def check_finished(self) -> None:
    """Raises a one-line UserError unless the model_dir holds what a finished run leaves (its
    side files or its checkpoint's record of them), and says in a line when its final weights
    are older than its latest checkpoint: a re-run with more --train_steps went on from them
    and has not finished."""
    self._file(model_dir.WEIGHTS_FILE)
    for name in (model_dir.CONFIG_FILE, model_dir.VOCAB_FILE, model_dir.TRAIN_CONFIG_FILE):
      self._text(name)
    metrics = os.path.join(self.path, model_dir.METRICS_FILE)
    if not tf.io.gfile.exists(metrics):
      return
    with tf.io.gfile.GFile(metrics) as f:
      final_step = json.load(f).get("steps", 0)
    latest = model_dir.latest_step(self.path)
    if latest > final_step:
      log.warning("%s: its final weights are of step %d, but training went on to the "
                  "checkpoint at step %d and has not finished: these are step %d's (re-run "
                  "train.py to finish)", self.path, final_step, latest, final_step)

  def check_loadable(self) -> None:
    """A finished run, or one still training whose newest whole checkpoint gives the weights
    (`load_weights`)."""
    if self.has_checkpoint and not tf.io.gfile.exists(
        os.path.join(self.path, model_dir.WEIGHTS_FILE)):
      for name in (model_dir.VOCAB_FILE, model_dir.TRAIN_CONFIG_FILE):
        self._text(name)
      model_dir.newest_whole(self.path, f"check {self.flag}")
      return
    self.check_finished()

  def load_weights(self, model: keras.Model, config: BertConfig) -> None:
    """The final weights; a run without them (not finished, or its final weights gone) gives
    its newest whole checkpoint's, said in a line (its optimizer and data position unread)."""
    self.check_config(config)
    if (self.has_checkpoint
        and not tf.io.gfile.exists(os.path.join(self.path, model_dir.WEIGHTS_FILE))):
      checkpoint = model_dir.newest_whole(self.path, f"check {self.flag}")
      log.info("%s has no %s: taking the weights of its checkpoint %s", self.path,
               model_dir.WEIGHTS_FILE, checkpoint)
      status = tf.train.Checkpoint(model=model).restore(checkpoint)
      status.expect_partial().assert_existing_objects_matched()
      return
    self.check_finished()
    model.load_weights(os.path.join(self.path, model_dir.WEIGHTS_FILE))


class HuggingFaceDirectory(Source):
  """A Hugging Face BERT directory of any BERT class: config.json, model.safetensors and, for
  fine-tuning, vocab.txt (and tokenizer_config.json for the case)."""

  kind = "a Hugging Face directory"

  def __init__(self, path: str, flag: str):
    super().__init__(path, flag)
    huggingface.weights_files(path, called=f"{flag} {path}")

  @functools.cached_property
  def config(self) -> BertConfig:
    return huggingface.read_config(self.path)

  @functools.cached_property
  def lower_case(self) -> bool:
    return huggingface.lower_case(self.path)

  @property
  def config_file(self) -> str:
    return os.path.join(self.path, "config.json")

  def vocabulary_file(self) -> str:
    return os.path.join(self.path, "vocab.txt")

  def load_weights(self, model: keras.Model, config: BertConfig) -> None:
    huggingface.load_huggingface(model, config, self.path)


class OriginalCheckpoint(Source):
  """An original BERT (TF1) checkpoint, `bert_model.ckpt`, with its bert_config.json and, for
  fine-tuning, vocab.txt beside it; the case is in Google's directory names."""

  kind = "an original BERT checkpoint"

  def __init__(self, path: str, flag: str, prefix: str):
    super().__init__(path, flag)
    self.prefix = prefix
    try:
      tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError) as e:
      lines = str(e).strip().splitlines()
      raise _refused(path, flag, "not a readable checkpoint "
                     f"({lines[0] if lines else type(e).__name__})") from None
    if not tf1_checkpoint.has_data(prefix):
      raise _refused(path, flag, f"not a readable checkpoint (no {prefix}.data-* file beside "
                     "its index)")

  @functools.cached_property
  def config(self) -> BertConfig:
    return tf1_checkpoint.read_config(self.prefix)

  @functools.cached_property
  def lower_case(self) -> bool:
    return tf1_checkpoint.lower_case(self.prefix)

  @property
  def config_file(self) -> str:
    return tf1_checkpoint.config_path(self.prefix)

  def vocabulary_file(self) -> str:
    return os.path.join(os.path.dirname(self.prefix), "vocab.txt")

  def load_weights(self, model: keras.Model, config: BertConfig) -> None:
    tf1_checkpoint.load_tf1_checkpoint(model, config, self.prefix)


def _refused(path: str, flag: str, problem: str) -> UserError:
  return UserError(f"{flag} {path} is {problem}: it takes {ACCEPTED}")


def _is_run_directory(path: str) -> bool:
  """A train.py model_dir: its final weights, or a checkpoint of a run not finished."""
  return (tf.io.gfile.exists(os.path.join(path, model_dir.WEIGHTS_FILE))
          or model_dir.has_checkpoint(path))


def open_source(path: str, flag: str = "--init_checkpoint") -> Source:
  """The pre-trained BERT at `path`, of the kind its files say; `flag` (the setting that gave
  the path) names it in messages. Raises a one-line UserError when `path` is none of the
  three kinds, or one whose weights cannot be read."""
  if keras_hub_preset.is_keras_hub_preset(path):  # its model.weights.h5 is not a run's
    raise _refused(path, flag, "a keras-hub preset, which keras-hub's from_preset reads")
  if _is_run_directory(path):
    return RunDirectory(path, flag)
  if huggingface.is_huggingface_directory(path):
    return HuggingFaceDirectory(path, flag)
  prefix = tf1_checkpoint.checkpoint_prefix(path)
  if tf1_checkpoint.is_tf1_checkpoint(prefix):
    return OriginalCheckpoint(path, flag, prefix)
  if tf.io.gfile.isdir(path):
    raise _refused(path, flag, "a directory with no checkpoint in it")
  if tf.io.gfile.exists(path):
    raise _refused(path, flag, "a file that is not a checkpoint")
  raise _refused(path, flag, "not found")

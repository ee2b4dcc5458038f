"""What a run keeps in its model_dir, named once for every layer that writes or reads one (the
trainer resumes from it; `--init_checkpoint`, fine-tuning and export read it through
`bert_tf.interop.source`), and the one rule by which all of them pick a checkpoint:
`newest_whole`."""

import functools
import logging
import os
import re

import tensorflow as tf

from bert_tf.errors import UserError

log = logging.getLogger("bert_tf")

CHECKPOINTS = "checkpoints"  # the training checkpoints: weights, optimizer, data position
# The files that make a model_dir stand alone, written at the run's start (`run_files`), and
# its final weights and figures, written when it finishes.
CONFIG_FILE, VOCAB_FILE, TRAIN_CONFIG_FILE = "bert_config.json", "vocab.txt", "train_config.json"
WEIGHTS_FILE, METRICS_FILE = "model.weights.h5", "metrics.json"
# What a run trained and what reading it needs: no command's --output may replace them.
TRAINED = (CHECKPOINTS, WEIGHTS_FILE, CONFIG_FILE, VOCAB_FILE, TRAIN_CONFIG_FILE)


def trained_parts(path: str) -> dict[str, str]:
  """{"--model_dir's NAME": its path} of each of `TRAINED` in the model_dir `path`."""
  return {f"--model_dir's {name}": os.path.join(path, name) for name in TRAINED}


def latest_step(path: str) -> int:
  """The step of the model_dir's latest checkpoint as its index names it; 0 without one."""
  state = _state(os.path.join(path, CHECKPOINTS))
  found = state and re.search(r"ckpt-(\d+)$", state.model_checkpoint_path)
  return int(found.group(1)) if found else 0


def has_checkpoint(path: str) -> bool:
  """Whether the model_dir has at least one training checkpoint (a run can go on from it),
  named by its index or on disk without one."""
  directory = os.path.join(path, CHECKPOINTS)
  return (tf.io.gfile.exists(os.path.join(directory, "checkpoint"))
          or bool(_on_disk(directory)))


def checkpoints_directory(path: str) -> str:
  """Where the checkpoints of `path` are: a model_dir's (or a fine-tune's output_dir's)
  `checkpoints/`, or `path` itself when it is such a directory."""
  inside = os.path.join(path, CHECKPOINTS)
  return inside if tf.io.gfile.isdir(inside) else path


def newest_whole(path: str, advice: str = "") -> str | None:
  """The checkpoint every reader of a model_dir reads (resume, the re-run's comparison, the
  record, export, fine-tuning, --init_checkpoint): the newest of `path`'s checkpoints (a
  model_dir or its checkpoints/; those its `checkpoint` index names, or, the index lost or
  unreadable, those on disk) whose every file is there and every tensor reads back with its
  checksum. Newer ones that are not whole (a file cut short, a byte changed, a file missing)
  are passed over, never removed, in one warning line naming them and the one read. None
  without checkpoints; none whole is a UserError, ending with `advice`."""
  directory = checkpoints_directory(path)
  candidates = checkpoints(directory)
  passed = []  # (prefix, why it is not whole)
  for prefix in candidates:
    reason = why_not_whole(prefix)
    if not reason:
      if len(passed) == 1:
        _say_once(f"the checkpoint {passed[0][0]} cannot be read ({passed[0][1]}): using the "
                  f"previous one, {prefix}")
      elif passed:
        _say_once("the checkpoints " + ", ".join(f"{p} ({why})" for p, why in passed)
                  + f" cannot be read: using {prefix}")
      return prefix
    passed.append((prefix, reason))
  if candidates:
    raise UserError(f"no checkpoint in {directory} can be read (the latest, {passed[0][0]}: "
                    f"{passed[0][1]})" + (f": {advice}" if advice else ""))
  return None


def checkpoints(directory: str) -> list[str]:
  """The checkpoints in `directory`, newest first: those its `checkpoint` index names, else
  (the index removed or unreadable) the `ckpt-N` on disk, said in a line."""
  state = _state(directory)
  if state and state.all_model_checkpoint_paths:
    return [os.path.join(directory, os.path.basename(path))
            for path in reversed(state.all_model_checkpoint_paths)]
  found = _on_disk(directory)
  if found:
    _say_once(f"{os.path.join(directory, 'checkpoint')} names no checkpoint (missing or "
              f"unreadable), but {len(found)} are there: reading the newest whole one (the "
              "older ones are kept, not rotated)")
  return found


def _state(directory: str):
  """The `checkpoint` index of `directory`, or None when it is missing or unreadable."""
  try:
    return tf.train.get_checkpoint_state(directory)
  except (ValueError, UnicodeDecodeError, tf.errors.OpError):
    return None


def _on_disk(directory: str) -> list[str]:
  """The `ckpt-N` prefixes whose index file is in `directory`, newest first."""
  steps = sorted((int(found.group(1)) for found in (
      re.fullmatch(r"ckpt-(\d+)\.index", os.path.basename(path))
      for path in tf.io.gfile.glob(os.path.join(directory, "ckpt-*.index"))) if found),
      reverse=True)
  return [os.path.join(directory, f"ckpt-{step}") for step in steps]


def why_not_whole(prefix: str) -> str:
  """"" when the checkpoint `prefix` is whole (its index and data files read, every tensor
  with its checksum), else why not, in a few words. Known for files of the same sizes and
  times, the check reads a checkpoint once per process however many readers ask."""
  files = tuple((path, stat.length, stat.mtime_nsec) for path, stat in (
      (path, tf.io.gfile.stat(path)) for path in sorted(tf.io.gfile.glob(prefix + ".*"))))
  return _read_all(prefix, files)


@functools.lru_cache(maxsize=64)
def _read_all(prefix: str, files: tuple) -> str:
  if not any(path == prefix + ".index" for path, _, _ in files):
    return "its index file is missing"
  try:
    # The reader itself: load_checkpoint asks first whether the prefix is a directory, which
    # ram:// answers yes for any prefix of a file's path.
    reader = tf.compat.v1.train.NewCheckpointReader(prefix)
    for name in reader.get_variable_to_shape_map():
      reader.get_tensor(name)
  except (IndexError, ValueError, UnicodeDecodeError, tf.errors.OpError) as e:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
  return ""


_said = set()  # the lines `_say_once` said: the readers of one run say each once


def _say_once(line: str) -> None:
  if line not in _said:
    _said.add(line)
    log.warning("%s", line)

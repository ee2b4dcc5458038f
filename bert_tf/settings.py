"""Settings, each declared once: a field of a config dataclass, made with `setting`.

A field carries its name, type, default, one line of help and, where the values are few, its
choices. Everything else about a setting is made from that declaration: the command line's
absl flag (`define_flags`), the config read back from the parsed flags (`from_flags`), the
run's `flags.txt` (`flags_text`) and the reference tables of docs/flags.md
(`markdown_tables`, written by `python -m bert_tf.flags_doc`). So a new flag is one new field.

Checking: each group of settings (a config class) checks its own fields in its `check`; a
command's whole config (`TrainConfig`, `FinetuneConfig`, `ExportConfig`) runs those and then,
in its own `check`, every check that spans settings of different groups, so that a reader finds
them in one place. A setting against the model's shape: `BertConfig.check_seq_length`.

This module imports neither TensorFlow nor Keras: reading a flagfile must stay cheap.
"""

import dataclasses
import types
from typing import Any

import absl.logging  # noqa: F401  (defines --verbosity)
from absl import flags

from bert_tf.errors import UserError

# What changing a run's setting on a directory where it has trained does, said in a line
# (`bert_tf.runtime.setting_changes`). Pre-training (`bert_tf.training.run_changes`): another
# model is an error; another stream of examples starts the stream afresh at the next epoch.
# Fine-tuning (`bert_tf.finetune.rerun`): another task is an error; another stream goes on at
# the step, in the new examples. Anything else is noted.
MODEL, STREAM, NOTED = "model", "stream", "noted"
CHANGES = (MODEL, STREAM, NOTED)


def setting(default: Any, help: str, *,  # noqa: A002 (absl's word)
            choices=(), change: str | None = None) -> Any:
  """A config field that is also a flag: `name: type = setting(default, "help")`. A setting
  of a run that resumes (pre-training, fine-tuning) also says what changing it on resume does
  (`change`, one of `CHANGES`)."""
  return dataclasses.field(default=default, metadata={"help": help, "choices": tuple(choices),
                                                      "change": change})


def derived(default: Any, help: str) -> Any:  # noqa: A002 (as `setting`)
  """A config field that is not a flag: what a run works out from its settings and records
  with them (`train_config.json`, the checkpoints' record), e.g. why it computes in its
  precision."""
  return dataclasses.field(default=default, metadata={"derived": help})


def declared(config_class) -> list[dataclasses.Field]:
  """The settings of a config class, in declaration order (base classes first)."""
  return [field for field in dataclasses.fields(config_class) if "help" in field.metadata]


def check_choices(config) -> None:
  """Rejects a value outside its setting's choices (a config made in code skips the flags'
  own check)."""
  for field in declared(type(config)):
    choices, value = field.metadata["choices"], getattr(config, field.name)
    if choices and value not in choices:
      raise UserError(f"unknown {field.name} {value!r}: use one of "
                      f"{', '.join(choice or repr(choice) for choice in choices)}")


def value_type(field: dataclasses.Field) -> type:
  """The field's type without `| None` (a setting whose default None means 'not given')."""
  if isinstance(field.type, types.UnionType):
    (kind,) = [arg for arg in field.type.__args__ if arg is not type(None)]
    return kind
  return field.type


_DEFINE = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float,
           str: flags.DEFINE_string}


def define_flags(config_class, flag_values=flags.FLAGS) -> None:
  """Defines an absl flag for each setting of `config_class`."""
  for field in declared(config_class):
    help_text, choices = field.metadata["help"], field.metadata["choices"]
    if choices:
      flags.DEFINE_enum(field.name, field.default, list(choices), help_text,
                        flag_values=flag_values)
    else:
      _DEFINE[value_type(field)](field.name, field.default, help_text, flag_values=flag_values)


def from_flags(config_class, flag_values=flags.FLAGS):
  """The config the parsed flags describe."""
  return config_class(**{field.name: flag_values[field.name].value
                         for field in declared(config_class)})


def flags_text(config_class, flag_values=flags.FLAGS) -> str:
  """Every setting as it was given or defaulted, one `--flag=value` a line: a flagfile that
  re-creates the run. A setting of no value (None, absl's empty serialization) is left out:
  its default re-creates it."""
  lines = (flag_values[field.name].serialize() for field in declared(config_class))
  return "".join(f"{line}\n" for line in lines if line)


def markdown_tables(config_class, leave_out=None) -> str:
  """docs/flags.md's reference: a table per group of settings (each class that declares
  some), headed by the group's docstring; without the groups of the class `leave_out`."""
  sections = []
  shown = [group for group in reversed(config_class.__mro__)
           if not (leave_out and group in leave_out.__mro__)]
  for group in shown:
    own = [field for field in declared(config_class) if field.name in vars(group).get(
        "__annotations__", {})]
    if not own:
      continue
    rows = [f"### {group.__doc__.strip().splitlines()[0].rstrip('.')}", "",
            "| flag | default | meaning |", "|---|---|---|"]
    for field in own:
      default = "none" if field.default in (None, "") else f"`{_shown(field.default)}`"
      meaning = field.metadata["help"]
      if field.metadata["choices"]:
        meaning += " One of " + ", ".join(f"`{c}`" for c in field.metadata["choices"]) + "."
      meaning = meaning.replace("|", "\\|")
      rows.append(f"| `--{field.name}` | {default} | {meaning} |")
    sections.append("\n".join(rows) + "\n")
  return "\n".join(sections)


# absl's --verbosity levels by name (absl's -v takes the numbers).
VERBOSITY = {"debug": 1, "info": 0, "warning": -1, "error": -2}


class _VerbosityParser(flags.IntegerParser):
  """absl's verbosity, by name (debug, info, warning, error) or number."""

  def parse(self, argument):
    if isinstance(argument, str) and argument.lower() in VERBOSITY:
      return VERBOSITY[argument.lower()]
    try:
      return super().parse(argument)
    except ValueError:
      raise ValueError(f"{argument!r}: use debug, info, warning, error or absl's numbers "
                       "(1 is debug)") from None


def name_verbosity_levels(flag_values=flags.FLAGS) -> None:
  """Lets absl's own --verbosity (-v) take a level's name as well as its number."""
  flag_values["verbosity"].parser = _VerbosityParser()
  flag_values["verbosity"].help = (
      "info (default): our lines only. debug (or -v 1): also TensorFlow's, absl's and "
      "Keras's own log lines and warnings. Also warning, error, or absl's numbers.")


def _shown(value) -> str:
  return str(value).lower() if isinstance(value, bool) else str(value)

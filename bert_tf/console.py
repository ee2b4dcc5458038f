"""What the console shows: our lines (what is being built, progress, checkpoints, the summary)
and real errors; TensorFlow's, absl's and Keras's routine chatter only with `--verbosity=debug`.

Each kind of noise is silenced where it comes from:
- TensorFlow's C++ log lines: `TF_CPP_MIN_LOG_LEVEL`, set before TensorFlow is imported.
- The lines its shared libraries print while they load (absl's `InitializeLog` warning, the
  oneDNN notice, "Could not find cuda drivers", the CPU-instructions notice) come before that
  setting is read: they are filtered out of what the import writes to stderr, by pattern;
  anything else the import writes still reaches stderr. (oneDNN stays on: only its notice goes.)
- Python: the `tensorflow` logger (the SavedModel writer's INFO lines) and absl's verbosity set
  to warnings; Keras's `shuffle=True` UserWarning (meaningless for a tf.data dataset) ignored.

`bert_tf`'s own log records are printed as plain lines on stderr (where absl printed them;
results such as the summary go to stdout), clear of the in-place progress line (`status`, on
stdout).
"""

import contextlib
import logging
import os
import re
import sys
import tempfile
import traceback
import warnings

from bert_tf import settings
from bert_tf.errors import UserError

# Lines TensorFlow's and tensorflow-text's libraries print while they load.
STARTUP_NOISE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called"
    r"|[IWE]\d{4} [\d:. ]+\d+ (port|cudart_stub|cpu_feature_guard|cuda_\w+)\.cc:\d+\]"
    r"|To enable the following instructions: .* rebuild TensorFlow")

log = logging.getLogger("bert_tf")


def asks_for_debug(argv: list[str]) -> bool:
  """Whether the command line says `--verbosity=debug` (or -v 1 and up): read before the
  flags are parsed, because the C++ log level must be set before TensorFlow is imported."""
  for i, arg in enumerate(argv):
    name, equals, value = arg.partition("=")
    if name in ("-v", "--v", "-verbosity", "--verbosity"):
      value = value if equals else (argv[i + 1] if i + 1 < len(argv) else "")
      value = str(settings.VERBOSITY.get(value.lower(), value))
      if value.lstrip("-").isdigit() and int(value) >= settings.VERBOSITY["debug"]:
        return True
  return False


@contextlib.contextmanager
def _filtered_stderr(pattern: re.Pattern):
  """Runs the block with file descriptor 2 captured, then writes back every line of it that
  `pattern` does not match (C++ code writes to the descriptor, not to `sys.stderr`)."""
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile(mode="w+b") as captured:
    os.dup2(captured.fileno(), 2)
    try:
      yield
    finally:
      sys.stderr.flush()
      os.dup2(saved, 2)
      os.close(saved)
      captured.seek(0)
      for line in captured.read().decode("utf-8", "replace").splitlines(keepends=True):
        if not pattern.search(line):
          sys.stderr.write(line)
      sys.stderr.flush()


def start(argv: list[str]) -> None:
  """Call before anything imports TensorFlow: sets the C++ log level and imports TensorFlow
  and tensorflow-text with their start-up lines filtered out (unless debug is asked for)."""
  if asks_for_debug(argv):
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
    return
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # the user's own setting wins
  with _filtered_stderr(STARTUP_NOISE):
    import tensorflow  # noqa: F401
    import tensorflow_text  # noqa: F401


class _Lines(logging.Handler):
  """Prints `bert_tf` records as plain lines, rewriting the progress line after them."""

  def emit(self, record):
    _clear_status()
    sys.stderr.write(self.format(record) + "\n")
    sys.stderr.flush()
    _draw_status()


def configure(verbosity: int) -> None:
  """Sets Python's loggers and warnings after the flags are parsed (absl's verbosity)."""
  handler = _Lines()
  handler.setFormatter(logging.Formatter("%(message)s"))
  log.handlers = [handler]
  log.propagate = False
  log.setLevel(logging.DEBUG if verbosity >= settings.VERBOSITY["debug"] else logging.INFO)
  if verbosity >= settings.VERBOSITY["debug"]:
    return
  from absl import logging as absl_logging
  absl_logging.set_verbosity(absl_logging.WARNING)
  logging.getLogger("tensorflow").setLevel(logging.WARNING)
  warnings.filterwarnings("ignore", message=r"`shuffle=True` was passed", category=UserWarning)


def parse_flags(argv: list[str]) -> list[str]:
  """absl's flag parsing for `app.run(flags_parser=...)`, with a mistake (an unknown flag, a
  value of the wrong kind, a missing flagfile, a stray argument) one line and exit status 2;
  `--help` lists the flags the command defines through `bert_tf.settings`, not only its own."""
  from absl import flags
  for flag in flags.FLAGS.get_flags_for_module("bert_tf.settings"):
    flags.FLAGS.register_key_flag_for_module(argv[0], flag)
  try:
    rest = flags.FLAGS(argv)
  except flags.Error as e:
    stop(f"error: {str(e).removeprefix('ERROR:: ')}", 2)
  if len(rest) > 1:
    stop(f"error: unexpected arguments: {' '.join(rest[1:])}", 2)
  return rest


def stop(line: str, exit_status: int):
  """Ends the command with one line on stderr and `exit_status`; with --verbosity=debug (which
  `configure` gives the `bert_tf` logger as DEBUG) the traceback first."""
  if log.isEnabledFor(logging.DEBUG):
    traceback.print_exc()
  status("")  # a progress line in place ends first
  print(line, file=sys.stderr)
  sys.exit(exit_status)


@contextlib.contextmanager
def errors_in_one_line(interrupted: str = "interrupted"):
  """Runs a command's work: a `UserError` ends it with `error: <what>` and status 2, Ctrl-C
  with the line `interrupted` and status 130."""
  try:
    yield
  except UserError as e:
    stop(f"error: {e}", 2)
  except KeyboardInterrupt:
    stop(interrupted, 130)


def run_command(config_class, command, *, argv: list[str] | None = None,
                interrupted: str = "interrupted") -> None:
  """Every command line's life: the settings of `config_class` defined as flags and parsed (a
  mistake in them one line, `parse_flags`), the console configured, then `command(config)`, a
  `UserError` or Ctrl-C ending it in one line (`errors_in_one_line`)."""
  from absl import app, flags
  settings.define_flags(config_class)
  settings.name_verbosity_levels()

  def main(argv):
    configure(flags.FLAGS.verbosity)
    with errors_in_one_line(interrupted):
      command(settings.from_flags(config_class))

  app.run(main, argv=argv, flags_parser=parse_flags)


# The in-place progress line on a terminal: the text last drawn, redrawn after other lines.
_status = ""


def counted(number: int, noun: str) -> str:
  """`number` and `noun`, plural unless the number is one: `1 epoch`, `3 epochs`."""
  return f"{number} {noun}{'' if number == 1 else 's'}"


def is_terminal() -> bool:
  return sys.stdout.isatty()


def status(text: str) -> None:
  """Rewrites the in-place line (a terminal's last line) with `text`; "" ends it."""
  global _status
  if not text:
    if _status:
      sys.stdout.write("\n")
      sys.stdout.flush()
    _status = ""
    return
  _clear_status()
  _status = text
  _draw_status()


def _clear_status() -> None:
  if _status:
    sys.stdout.write("\r\033[K")
    sys.stdout.flush()


def _draw_status() -> None:
  if _status:
    sys.stdout.write(_status)
    sys.stdout.flush()

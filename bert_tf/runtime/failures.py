"""A TensorFlow file-system error in words a user knows, in one line.

TensorFlow's errors from inside a graph carry the function and the node they came from
(`{{function_node __wrapped__SaveV2_dtypes_149_device_/job:localhost/...}}`, `[[{{node
IteratorGetNext}}]]`, "Graph execution error:" and the Python stack that defined the node) and
the class of the error (`ResourceExhaustedError` for a full disk):
`describe` keeps what the user can act on, the file and what the operating system said.
"""

import re

import tensorflow as tf

# What an input pipeline's read can meet when a file changes under a run: removed, its
# permission lost, a remote file system that fails, a file cut short.
_READ_ERRORS = (tf.errors.NotFoundError, tf.errors.PermissionDeniedError,
                tf.errors.UnavailableError, tf.errors.DataLossError)
# The corpus's reader (`tf.data.FixedLengthRecordDataset` over byte ranges planned from each
# file's size) says so when a file is no longer that size: cut short or grown during the run.
_RESIZED = re.compile(r'input file "([^"]+)" has body length')


def is_input_failure(error: Exception) -> bool:
  """Whether `error` is a read of the input that failed, not a fault of the model or the
  program."""
  return isinstance(error, _READ_ERRORS) or (
      isinstance(error, tf.errors.InvalidArgumentError) and bool(_RESIZED.search(str(error))))

_GRAPH_CONTEXT = re.compile(r"\{\{function_node [^}]*\}\}|\[\[\{\{node [^}]*\}\}\]\]|\{\{[^}]*\}\}")
# The lines of an error raised by a graph function that say where in the graph, not what.
_WHERE_IN_THE_GRAPH = re.compile(r"Graph execution error:$|Detected at node |File \"")
_OS_MESSAGES = {"No space left on device": "no space left on the device",
                "Read-only file system": "the file system is read-only",
                "Disk quota exceeded": "the disk quota is exceeded"}


def describe(error: Exception) -> str:
  """The error's first meaningful line without TensorFlow's graph context: usually `path:
  what the operating system said`; a full disk, a read-only file system, a quota or a file
  that changed size in words."""
  resized = _RESIZED.search(str(error))
  if resized:
    return f"{resized.group(1)}: the file changed size while the run read it"
  text = _GRAPH_CONTEXT.sub("", str(error))
  lines = [line.strip() for line in text.splitlines()
           if line.strip() and not _WHERE_IN_THE_GRAPH.match(line.strip())]
  line = (lines or [type(error).__name__])[0][:300]
  for words, plain in _OS_MESSAGES.items():
    if words in line:
      return plain  # the file is TensorFlow's temporary one: the caller names what it wrote
  return line.replace("; ", ": ", 1)


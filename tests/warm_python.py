"""A Python that has already imported TensorFlow, and forks a new process for each command.

Importing TensorFlow takes 5 seconds alone and 10 or more beside another test process, and the
suite starts about two hundred processes. This server imports TensorFlow, tensorflow-text,
Keras, keras-hub and bert_tf's entry points' modules once, computes the tokenizer's Unicode
classes (about 2 CPU-seconds a command) and turns TensorFlow's graph optimiser off for every
command (`processes.without_graph_optimisation`); it runs no TensorFlow op, so no runtime or
device exists yet, then serves requests from `processes.py` on a Unix socket: each request is a
command line (`-c CODE`, `-m MODULE` or `SCRIPT.py`, with arguments), a working directory, an
environment and the three standard streams; the command runs in a new process, forked twice so
that it becomes the requesting test process's child (which is a subreaper) and can be waited
for, signalled and killed as any child. The command then runs as `python` would run it: its own
`__main__`, `sys.argv`, `sys.path`, environment and streams; uncaught exceptions, exit codes
and signals end it as they end a fresh interpreter, but for the interpreter's teardown of its
modules, skipped (`end`).

What a fresh interpreter does before the command runs (reading `TF_CPP_MIN_LOG_LEVEL`, the
start-up lines TensorFlow's libraries print, the locale) happened once, here: commands whose
test depends on it run in a fresh interpreter instead (`processes.py` decides).
"""

import atexit
import json
import os
import runpy
import socket
import sys
import threading
import types

import keras  # noqa: F401
import keras_hub  # noqa: F401
import tensorflow  # noqa: F401
import tensorflow_text  # noqa: F401

import bert_tf.finetune.training  # noqa: F401
import bert_tf.serving.verification  # noqa: F401
import bert_tf.training.trainer  # noqa: F401
import processes
from bert_tf.data import normalization

normalization.code_point_classes()  # pure Python: no TensorFlow op
processes.without_graph_optimisation()  # no op either: inherited by every command

BASE_PATH = sys.path[1:]  # sys.path[0] is this file's directory, not the command's


def serve(connection: socket.socket) -> dict | None:
  """Answers requests until the client closes the connection (returns None), or, in a forked
  command's process, returns its request."""
  while True:
    message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    if not message:
      return None
    report_read, report_write = os.pipe()
    middle = os.fork()
    if middle == 0:
      command = os.fork()
      if command == 0:
        os.close(report_read)
        os.close(report_write)
        connection.close()
        for target, fd in enumerate(fds):
          os.dup2(fd, target)
          os.close(fd)
        return json.loads(message)
      os.write(report_write, str(command).encode())
      os._exit(0)
    for fd in (*fds, report_write):
      os.close(fd)
    os.waitpid(middle, 0)  # the command is now the client's child
    with os.fdopen(report_read) as report:
      connection.sendall(report.read().encode() + b"\n")


def become(request: dict) -> None:
  """Runs the request's command as `python ARGS` would, in this process."""
  os.chdir(request["cwd"])
  os.environ.clear()
  os.environ.update(request["env"])
  args = request["args"]
  main = types.ModuleType("__main__")
  sys.modules["__main__"] = main
  if args[0] == "-c":
    sys.argv, sys.path[:] = ["-c", *args[2:]], ["", *BASE_PATH]
    exec(compile(args[1], "<string>", "exec"), main.__dict__)
  elif args[0] == "-m":
    sys.argv, sys.path[:] = [args[1], *args[2:]], [os.getcwd(), *BASE_PATH]
    runpy.run_module(args[1], run_name="__main__", alter_sys=True)
  else:
    script = os.path.abspath(args[0])
    sys.argv, sys.path[:] = list(args), [os.path.dirname(script), *BASE_PATH]
    runpy.run_path(script, run_name="__main__")


def end(code) -> None:
  """Ends the command's process as the interpreter ends it, with SystemExit's `code` (None:
  0; a message: printed, then 1): its threads joined, its exit handlers run (logging's among
  them), its standard streams flushed; but without the interpreter's teardown of every module
  loaded, which after TensorFlow, Keras and keras-hub costs each command 1.1 CPU-seconds
  (measured, a forked `print(1)`: 1.15 -> 0.02 s) and does nothing a test reads: a command's
  files are written and closed before it ends (bert_tf's own cluster workers end so,
  `cluster.exiting_at_once`). An uncaught exception other than SystemExit ends the command as
  usual, traceback and teardown included."""
  if code is None:
    code = 0
  elif not isinstance(code, int):
    print(code, file=sys.stderr)
    code = 1
  threading._shutdown()  # what the interpreter does first at exit, then the exit handlers
  atexit._run_exitfuncs()
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(code)


if __name__ == "__main__":
  request = serve(socket.socket(fileno=int(sys.argv[1])))
  if request is not None:
    try:
      become(request)
    except SystemExit as stop:
      end(stop.code)
    end(0)

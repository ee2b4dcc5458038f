"""TensorFlow's file-system errors in words: the graph context dropped, the file and the
operating system's reason kept, a full disk said as such."""

import pytest
import tensorflow as tf

from bert_tf.data import corpus
from bert_tf.runtime import failures


@pytest.mark.parametrize("error, described", [
    (tf.errors.NotFoundError(None, None, (  # as the training step's iterator raises it
        "Graph execution error:\n\nDetected at node IteratorGetNext defined at (most recent "
        "call last):\n  File \"train.py\", line 61, in <module>\n\n  File \"fitting.py\", "
        "line 71, in fit\n\n/data/b.txt; No such file or directory\n\t [[{{node "
        "IteratorGetNext}}]] [Op:__inference_multi_step_on_iterator_4242]")),
     "/data/b.txt: No such file or directory"),
    (tf.errors.ResourceExhaustedError(None, None, (
        "{{function_node __wrapped__SaveV2_dtypes_149_device_/job:localhost/replica:0/task:0/"
        "device:CPU:0}} /runs/x/ckpt-2_temp/part-00000-of-00001.data-00000-of-00001"
        ".tempstate1; No space left on device [Op:SaveV2]")),
     "no space left on the device"),
    (tf.errors.FailedPreconditionError(None, None, "/mnt/ro/x; Read-only file system"),
     "the file system is read-only"),
    (tf.errors.PermissionDeniedError(None, None, "/data/b.txt; Permission denied"),
     "/data/b.txt: Permission denied"),
    (tf.errors.UnknownError(None, None, ""), "UnknownError"),
])
def test_describe_keeps_the_file_and_the_reason(error, described):
  assert failures.describe(error) == described


def test_real_read_error_in_a_graph_function_is_described_with_its_file(tmp_path):
  missing = str(tmp_path / "gone.txt")
  iterator = iter(tf.data.FixedLengthRecordDataset(missing, 1))
  with pytest.raises(tf.errors.NotFoundError) as raised:
    tf.function(lambda: iterator.get_next())()
  assert failures.is_input_failure(raised.value)
  assert failures.describe(raised.value) == f"{missing}: No such file or directory"


@pytest.mark.parametrize("size_now", [100, 5000])
def test_a_file_that_changed_size_under_its_reader(tmp_path, size_now):
  """The corpus's reader plans byte ranges from a file's size: cut short or grown, it
  fails, and that is an input failure in words."""
  path = tmp_path / "b.txt"
  path.write_bytes(b"x" * 4096)
  dataset = corpus.read_range(str(path), 0, 4096, 4096, "sentence_per_line", chunk_bytes=1000)
  path.write_bytes(b"x" * size_now)
  with pytest.raises(tf.errors.OpError) as raised:
    list(dataset)
  assert failures.is_input_failure(raised.value)
  assert failures.describe(raised.value) == (
      f"{path}: the file changed size while the run read it")


def test_other_errors_are_not_input_failures():
  assert not failures.is_input_failure(tf.errors.InvalidArgumentError(
      None, None, "Incompatible shapes: [8,32] vs. [8,64]"))

"""Record positions: where an example sits in one input pipeline's stream of records, as one
int64 key (the counterpart of `stream_position.py` for TFRecords, same interface).

The stream of an input pipeline over records is a sequence of epochs. A key packs three
numbers, whose meaning depends on the order the records are read in (`record_dataset.py`):

- shuffled (the default): (epoch, file rank, record rank). Each epoch reads its files one
  after the other, in an order drawn from the seed and the epoch; the record rank counts the
  file's records (this pipeline's share of them when the files are fewer than the pipelines)
  that pass the holdout.
- unshuffled: (epoch, 0, k). Each epoch interleaves this pipeline's n files round-robin;
  record j of file f (its rank among them; j counts this pipeline's share, before the
  holdout) is at k = j * n + f. Files whose record counts differ by at most one, the shorter
  last, as `bert_tf.prepare` writes them, make k the record's index in the interleaved stream
  (and in prepare's stream); with other files k skips the numbers of the positions past a
  file's end. A holdout leaves its records out without renumbering the others.

Either way keys grow along the stream and a stream starts at any key by skipping records
(read, not parsed), not by replaying the files before it.

Limits: 2**16 epochs, 2**16 files per input pipeline and 2**31 records per file (unshuffled:
2**31 positions per epoch of an input pipeline).
"""

from bert_tf.data import stream_position

EPOCH_BITS, FILE_BITS, RECORD_BITS = 16, 16, 31
MAX_EPOCHS, MAX_FILES, MAX_RECORDS = 2**EPOCH_BITS, 2**FILE_BITS, 2**RECORD_BITS
BEGINNING = 0  # the key of the first record of epoch 0

# The same feature as a text stream's, so that the trainer records either kind alike.
FEATURE = stream_position.FEATURE


def encode(epoch, file_rank, record_rank):
  """The key of a record (Python ints or int64 tensors)."""
  return (epoch * MAX_FILES + file_rank) * MAX_RECORDS + record_rank


def decode(key: int) -> tuple[int, int, int]:
  """(epoch, file rank, record rank) of a key."""
  key = int(key)
  if not 0 <= key < MAX_EPOCHS * MAX_FILES * MAX_RECORDS:
    raise ValueError(f"{key} is not a record position")
  files, record_rank = divmod(key, MAX_RECORDS)
  epoch, file_rank = divmod(files, MAX_FILES)
  return epoch, file_rank, record_rank

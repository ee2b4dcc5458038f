"""Record positions: where an example sits in one input pipeline's stream of records, as one
int64 key (the counterpart of `stream_position.py` for TFRecords, same interface).

The stream of an input pipeline over records is a sequence of epochs; each epoch its files in
an order drawn from the seed and the epoch; each file its records (this pipeline's share of
them when the files are fewer than the pipelines). A key packs (epoch, file rank in its
epoch, record rank in the file) so that keys grow along the stream and a stream starts at any
key by skipping records within one file (`record_dataset.py`), not by replaying the files
before it.

Limits: 2**16 epochs, 2**16 files per input pipeline and 2**31 records per file.
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

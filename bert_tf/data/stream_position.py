"""Stream positions: where an example sits in one input pipeline's stream, as one int64 key.

The stream of an input pipeline is a sequence of epochs; each epoch a sequence of pieces of
the corpus (in an order drawn from the seed and the epoch); each piece a sequence of examples
(see `pipeline.py`). An example's key packs (epoch, piece rank in its epoch, example rank in
its piece) into one int64, so that keys grow along the stream, the key after `k` is `k + 1`
(the next example, if the piece has one), and a stream can be started at any key by
recomputing at most one piece.

Limits: 2**20 epochs, 2**20 pieces per input pipeline (8 TiB at 8 MiB a piece) and 2**23
examples per piece: a piece of about 8 MiB makes about 15,000 examples of 128 tokens, and at
most one per line of two bytes or more, 5 million.
"""

EPOCH_BITS, PIECE_BITS, EXAMPLE_BITS = 20, 20, 23
MAX_EPOCHS, MAX_PIECES, MAX_EXAMPLES = 2**EPOCH_BITS, 2**PIECE_BITS, 2**EXAMPLE_BITS
BEGINNING = 0  # the key of the first example of epoch 0

FEATURE = "stream_position"  # the feature name, when the pipeline is asked for keys


def encode(epoch, piece_rank, example_rank):
  """The key of an example (Python ints or int64 tensors)."""
  return (epoch * MAX_PIECES + piece_rank) * MAX_EXAMPLES + example_rank


def decode(key: int) -> tuple[int, int, int]:
  """(epoch, piece rank, example rank) of a key."""
  key = int(key)
  if not 0 <= key < MAX_EPOCHS * MAX_PIECES * MAX_EXAMPLES:
    raise ValueError(f"{key} is not a stream position")
  pieces, example_rank = divmod(key, MAX_EXAMPLES)
  epoch, piece_rank = divmod(pieces, MAX_PIECES)
  return epoch, piece_rank, example_rank


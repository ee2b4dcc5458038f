"""What the kinds' references share (a reference is what an export is checked against, by
`verification.py`): the texts a one-text signature is run on, and the score of an export's
choice. A helper below the kinds: it imports none of them."""

import numpy as np

from bert_tf.serving.verification import EXAMPLES

# Every non-empty text of EXAMPLES, for a signature that takes one text.
TEXTS = [text for pair in EXAMPLES for text in pair if text]


def chosen_score(scores: np.ndarray, names: list[str], chosen: str) -> float:
  """The score the reference gives the export's choice `chosen` of `names` (-inf for none of
  them)."""
  return float(scores[names.index(chosen)]) if chosen in names else -np.inf

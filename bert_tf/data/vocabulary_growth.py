"""A vocabulary grown with a corpus's words (`--add_vocabulary`): the words a published
vocabulary cuts into pieces become tokens of their own, first in its `[unusedK]` slots (Google's
releases reserve them for this: 994 in the English ones), then appended after its last token.

A grown word is a whole-word entry of the vocabulary file, so WordPiece's longest match takes
it whole before it would cut it: our tokenizer, transformers' `BertTokenizer` and keras-hub's
read the same file and give the same ids (no "added tokens" matched before the split). Which
tokens are new is read back from the two vocabularies alone (`new_tokens`), so the weights of
the old one can be carried over to the grown one wherever the vocabulary came from.
"""

import re

from bert_tf.data.tokenization import Vocabulary

UNUSED = re.compile(r"^\[unused\d+\]$")


def unused_slots(tokens: list[str]) -> list[int]:
  """The ids of the `[unusedK]` tokens, in order."""
  return [i for i, token in enumerate(tokens) if UNUSED.match(token)]


def grown_tokens(tokens: list[str], words: list[str]) -> tuple[list[str], int]:
  """(the tokens with `words` added, how many went into `[unusedK]` slots): the first
  words in the slots in order, the rest appended."""
  grown = list(tokens)
  slots = unused_slots(tokens)
  for slot, word in zip(slots, words):
    grown[slot] = word
  return grown + list(words[len(slots):]), min(len(slots), len(words))


def new_tokens(base: Vocabulary, grown: Vocabulary) -> dict[int, str] | None:
  """{id: word} of the tokens `grown` adds to `base`, {} when it is `base`; None when
  `grown` is not `base` grown (another token than an `[unusedK]` differs, or it is
  shorter)."""
  if len(grown) < len(base):
    return None
  changed = {i: grown.tokens[i] for i in range(len(base)) if grown.tokens[i] != base.tokens[i]}
  if any(not UNUSED.match(base.tokens[i]) for i in changed):
    return None
  return {**changed, **{i: grown.tokens[i] for i in range(len(base), len(grown))}}

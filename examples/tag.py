"""Tags each word of each text with a `tag` fine-tune's LiteRT or ONNX export, as its
SavedModel's `tag` signature does: the words as the tokenizer splits the text (at whitespace,
punctuation and around CJK characters), each cut from the text by its character offsets and
tagged on its first WordPiece; a word whose first piece is past the sequence is `O`.

  python examples/tag.py EXPORT_DIR "a text" "another text"

prints, per text, a JSON list of [word, tag, start, end] (`text[start:end]` is the word)."""

import json
import sys

import numpy as np
from portable_model import PortableModel


def tag(model: PortableModel, texts: list[str]) -> list[list[list]]:
  tags = model.description["labels"]
  encodings = [model.tokenizer.encode(text, add_special_tokens=False) for text in texts]
  room = model.seq_length - 2  # [CLS] pieces [SEP]
  logits = model.run(model.inputs([([model.cls_id, *e.ids[:room], model.sep_id],
                                    [0] * (min(len(e.ids), room) + 2)) for e in encodings]))
  logits = logits["logits"]
  tagged = []
  for row, (text, encoding) in enumerate(zip(texts, encodings)):
    words = {}  # word index -> [first piece, start, end]
    for piece, (word, (start, end)) in enumerate(zip(encoding.word_ids, encoding.offsets)):
      if word not in words:
        words[word] = [piece, start, end]
      words[word][2] = end
    tagged.append([
        [text[start:end], tags[int(np.argmax(logits[row, piece + 1]))] if piece < room else "O",
         start, end] for piece, start, end in words.values()])
  return tagged


if __name__ == "__main__":
  for words in tag(PortableModel(sys.argv[1]), sys.argv[2:]):
    print(json.dumps(words, ensure_ascii=False))

"""Tags each word of each text with a `tag` fine-tune's LiteRT or ONNX export, as its
SavedModel's `tag` signature does: the words as the tokenizer splits the text (at whitespace,
punctuation and around CJK characters), each cut from the text by its character offsets and
tagged on its first WordPiece; a word whose first piece is past the sequence is `O`.

  python examples/tag.py EXPORT_DIR "a text" "another text"

prints a JSON object per text, the signature's outputs for it: `words`, `tags`, `starts`,
`ends` (`text[starts[i]:ends[i]]` is `words[i]`, Python string indices) and `num_words`. Each
argument is one text, as written (`|||` is no separator here). Runs with numpy, tokenizers and
the export's runtime alone (examples/portable_model.py)."""

import numpy as np
from portable_model import PortableModel, main

USAGE = 'python examples/tag.py EXPORT_DIR "TEXT" ...'


def tag(model: PortableModel, texts: list[str]) -> list[dict]:
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
    found = list(words.values())
    tagged.append({
        "words": [text[start:end] for _, start, end in found],
        "tags": [tags[int(np.argmax(logits[row, piece + 1]))] if piece < room else "O"
                 for piece, _, _ in found],
        "starts": [start for _, start, _ in found], "ends": [end for _, _, end in found],
        "num_words": len(found)})
  return tagged


if __name__ == "__main__":
  main("tag", USAGE, tag)

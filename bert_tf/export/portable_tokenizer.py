"""The portable tokenizer: `tokenizer.json` for the `tokenizers` library, a BERT WordPiece
tokenizer over the model's vocab.txt, cased or not as the model was trained, that pads and
truncates to the portable model's sequence length. No TensorFlow: a server that runs the
model in ONNX Runtime or LiteRT tokenizes with it (docs/serving.md#litert-and-onnx)."""

from tokenizers.implementations import BertWordPieceTokenizer

PAD = "[PAD]"  # as in bert_tf.data.tokenization, which imports TensorFlow


def portable_tokenizer(vocab_file: str, *, lower_case: bool,
                       seq_length: int) -> BertWordPieceTokenizer:
  """The tokenizers library's BERT tokenizer over `vocab_file`: lower-cases and strips accents
  when `lower_case`, adds [CLS] and [SEP]s, cuts to `seq_length` tokens and pads to it."""
  tokenizer = BertWordPieceTokenizer(vocab_file, lowercase=lower_case, strip_accents=lower_case,
                                     clean_text=True, handle_chinese_chars=True)
  tokenizer.enable_truncation(max_length=seq_length)
  tokenizer.enable_padding(length=seq_length, pad_id=tokenizer.token_to_id(PAD), pad_token=PAD)
  return tokenizer


def write_portable_tokenizer(vocab_file: str, path: str, *, lower_case: bool,
                             seq_length: int) -> None:
  """Writes `tokenizer.json` to `path` (a local file)."""
  portable_tokenizer(vocab_file, lower_case=lower_case, seq_length=seq_length).save(path)

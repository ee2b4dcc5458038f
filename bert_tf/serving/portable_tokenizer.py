"""The portable tokenizer: `tokenizer.json` for the `tokenizers` library, a BERT WordPiece
tokenizer over the model's vocab.txt, cased or not as the model was trained, that truncates to
the portable model's sequence length and pads a batch to its longest. No TensorFlow: a server
that runs the model in ONNX Runtime or LiteRT tokenizes with it
(docs/serving.md#litert-and-onnx)."""

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

# As in bert_tf.data.tokenization, which imports TensorFlow: its special tokens, and its
# longest word (original BERT's) before [UNK], which the tokenizers library counts in
# characters where tensorflow-text counts bytes of UTF-8 (the library's default: 100).
PAD, UNK, CLS, SEP = "[PAD]", "[UNK]", "[CLS]", "[SEP]"
MAX_CHARS_PER_WORD = 200


def portable_tokenizer(vocab_file: str, *, lower_case: bool, seq_length: int) -> Tokenizer:
  """The tokenizers library's BERT tokenizer over `vocab_file`: lower-cases and strips accents
  when `lower_case`, adds [CLS] and [SEP]s, cuts to `seq_length` tokens and pads a batch
  (`encode_batch`) to its longest: the model takes any length up to `seq_length`, and a short
  input costs its own length."""
  tokenizer = Tokenizer(models.WordPiece.from_file(
      vocab_file, unk_token=UNK, max_input_chars_per_word=MAX_CHARS_PER_WORD))
  tokenizer.normalizer = normalizers.BertNormalizer(
      clean_text=True, handle_chinese_chars=True, strip_accents=lower_case, lowercase=lower_case)
  tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
  tokenizer.post_processor = processors.BertProcessing(
      (SEP, tokenizer.token_to_id(SEP)), (CLS, tokenizer.token_to_id(CLS)))
  tokenizer.decoder = decoders.WordPiece(prefix="##")
  tokenizer.enable_truncation(max_length=seq_length)
  tokenizer.enable_padding(pad_id=tokenizer.token_to_id(PAD), pad_token=PAD)
  return tokenizer


def write_portable_tokenizer(vocab_file: str, path: str, *, lower_case: bool,
                             seq_length: int) -> None:
  """Writes `tokenizer.json` to `path` (a local file)."""
  portable_tokenizer(vocab_file, lower_case=lower_case, seq_length=seq_length).save(path)

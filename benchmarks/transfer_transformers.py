"""Fine-tunes transformers' `BertForSequenceClassification` from our Hugging Face export on
GLUE-style TSV files and returns its dev accuracy: the transformers side of the transfer
benchmark (benchmarks/transfer.py compares it with our own fine-tuning on the same data and
recipe).

    python -m bert_tf.export --model_dir=runs/quickstart --format=hf --output=runs/quickstart_hf
    python benchmarks/transfer_transformers.py --hf_dir=runs/quickstart_hf \
        --train_file=train.tsv --dev_file=dev.tsv --text_columns=sentence1,sentence2

From Python: `finetune_transformers(hf_dir, train_file, dev_file, text_columns=("text",))`.
`finetune_task` does the same for any of bert_tf's task kinds (regression,
`BertForTokenClassification`, `BertForQuestionAnswering`, `BertForMultipleChoice`) on batches
of features bert_tf makes, scored by bert_tf's own dev figures (benchmarks/transfer.py --task).

The recipe is BERT's (google-research/bert `run_classifier.py` and `optimization.py`): AdamW
with weight decay 0.01 (none on biases and layer norms), a linear warm-up over the first
`warmup_proportion` of the steps and a linear decay to 0, gradients clipped to a global norm of
1.0, dropout on while training. The data is read as our fine-tuning reads it: a header row,
tab-separated, no quoting; the classes are the sorted distinct labels of the training file.
Tokenized with the export's own tokenizer (`BertTokenizer.from_pretrained(hf_dir)`), pairs
truncated longest-first to `seq_length`. Torch on CPU; nothing is downloaded.
"""

import argparse
import csv
import random
import sys


def read_tsv(path: str, text_columns: tuple[str, ...], label_column: str):
  """(texts: one tuple of strings per example, labels: strings) of a TSV file with a header."""
  csv.field_size_limit(sys.maxsize)
  with open(path, encoding="utf-8", newline="") as f:
    rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
  if not rows:
    raise ValueError(f"{path} is empty")
  header, body = rows[0], [row for row in rows[1:] if row]
  if not body:
    raise ValueError(f"{path} has a header and no examples")
  missing = [name for name in (*text_columns, label_column) if name not in header]
  if missing:
    raise ValueError(f"{path} has no column {', '.join(missing)} (its header: "
                     f"{', '.join(header)})")
  columns = [header.index(name) for name in text_columns]
  label = header.index(label_column)
  return ([tuple(row[i] for i in columns) for row in body], [row[label] for row in body])


def _batches(tokenizer, texts, labels, seq_length, batch_size, order):
  import torch
  for start in range(0, len(order), batch_size):
    chosen = order[start:start + batch_size]
    columns = list(zip(*(texts[i] for i in chosen)))
    encoded = tokenizer(*(list(column) for column in columns), truncation="longest_first",
                        max_length=seq_length, padding=True, return_tensors="pt")
    yield encoded, torch.tensor([labels[i] for i in chosen], dtype=torch.long)


def _accuracy(model, tokenizer, texts, labels, seq_length, batch_size) -> float:
  import torch
  model.eval()
  correct = 0
  with torch.no_grad():
    for encoded, gold in _batches(tokenizer, texts, labels, seq_length, batch_size,
                                  list(range(len(texts)))):
      correct += int((model(**encoded).logits.argmax(-1) == gold).sum())
  return correct / len(texts)


def _recipe(model, learning_rate: float, total_steps: int, warmup_proportion: float):
  """BERT's optimizer and schedule for `model` (see the module's docstring)."""
  import torch
  import transformers
  no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
  decay = [p for n, p in model.named_parameters()
           if not (n.endswith("bias") or "LayerNorm" in n)]
  optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                 {"params": no_decay, "weight_decay": 0.0}],
                                lr=learning_rate, betas=(0.9, 0.999), eps=1e-6)
  return optimizer, transformers.get_linear_schedule_with_warmup(
      optimizer, int(total_steps * warmup_proportion), total_steps)


def _step(model, optimizer, schedule, loss):
  """One update on `loss`, gradients clipped to a global norm of 1.0; returns the loss."""
  import torch
  loss.backward()
  torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
  optimizer.step()
  schedule.step()
  optimizer.zero_grad()
  return loss


def finetune_transformers(hf_dir: str, train_file: str, dev_file: str, *,
                          text_columns=("text",), label_column: str = "label",
                          epochs: int = 3, learning_rate: float = 2e-5, batch_size: int = 32,
                          seq_length: int = 128, seed: int = 0,
                          warmup_proportion: float = 0.1, max_steps: int | None = None,
                          verbose: bool = True) -> float:
  """Fine-tunes `BertForSequenceClassification` from the Hugging Face export `hf_dir` on
  `train_file` and returns the dev accuracy of its best epoch (as our fine-tuning keeps the
  best epoch). `text_columns`: one name (single texts) or two (pairs). `max_steps` stops
  early (the schedule still spans `epochs`): for tests. Deterministic for a `seed`."""
  import numpy as np
  import torch
  import transformers

  transformers.logging.set_verbosity_error()  # "newly initialized: classifier.*" is expected
  text_columns = tuple(text_columns)
  if len(text_columns) not in (1, 2):
    raise ValueError(f"text_columns must name one or two columns, not {text_columns}")
  train_texts, train_labels = read_tsv(train_file, text_columns, label_column)
  dev_texts, dev_labels = read_tsv(dev_file, text_columns, label_column)
  classes = sorted(set(train_labels))
  unknown = sorted(set(dev_labels) - set(classes))
  if unknown:
    raise ValueError(f"{dev_file} has labels the training file does not: {', '.join(unknown)}")
  index = {name: i for i, name in enumerate(classes)}
  train_ids, dev_ids = [index[x] for x in train_labels], [index[x] for x in dev_labels]

  random.seed(seed)
  np.random.seed(seed)
  torch.manual_seed(seed)
  tokenizer = transformers.BertTokenizer.from_pretrained(hf_dir)
  model = transformers.BertForSequenceClassification.from_pretrained(
      hf_dir, num_labels=len(classes))
  steps_per_epoch = -(-len(train_texts) // batch_size)
  optimizer, schedule = _recipe(model, learning_rate, steps_per_epoch * epochs, warmup_proportion)
  shuffler = torch.Generator().manual_seed(seed)

  def epoch_batches(epoch):
    order = torch.randperm(len(train_texts), generator=shuffler).tolist()
    return _batches(tokenizer, train_texts, train_ids, seq_length, batch_size, order)

  return _train(model, optimizer, schedule, epochs, epoch_batches,
                lambda encoded, gold: model(**encoded, labels=gold).loss,
                lambda: _accuracy(model, tokenizer, dev_texts, dev_ids, seq_length, batch_size),
                "dev accuracy", max_steps=max_steps, verbose=verbose)


def _train(model, optimizer, schedule, epochs: int, epoch_batches, loss_of, evaluate,
           figure_name: str, *, max_steps: int | None, verbose: bool) -> float:
  """Trains `model` for `epochs` on `epoch_batches(epoch)` ((inputs, targets) batches),
  minimising `loss_of(inputs, targets)`, and returns the best of `evaluate()` after each
  epoch; `max_steps` stops early."""
  best, step = -float("inf"), 0
  for epoch in range(epochs):
    model.train()
    for inputs, targets in epoch_batches(epoch):
      loss = _step(model, optimizer, schedule, loss_of(inputs, targets))
      step += 1
      if max_steps is not None and step >= max_steps:
        break
    figure = evaluate()
    best = max(best, figure)
    if verbose:
      print(f"epoch {epoch + 1}: step {step}, loss {loss.item():.4f}, {figure_name} "
            f"{figure:.4f}")
    if max_steps is not None and step >= max_steps:
      break
  return best


# === Any task kind, on features made by the caller ===
# transformers' class for each of bert_tf's task kinds (what `bert_tf.export --format=hf`
# writes for a fine-tuned model).
HEADS = {"classify": "BertForSequenceClassification", "regress": "BertForSequenceClassification",
         "tag": "BertForTokenClassification", "answer": "BertForQuestionAnswering",
         "choose": "BertForMultipleChoice"}


def _torch_inputs(features: dict) -> dict:
  """bert_tf's feature names (numpy arrays) -> transformers' (long tensors)."""
  import torch
  return {name: torch.as_tensor(np_value(features[ours]), dtype=torch.long)
          for name, ours in (("input_ids", "token_ids"), ("token_type_ids", "segment_ids"),
                             ("attention_mask", "padding_mask"))}


def np_value(value):
  """A numpy array of a numpy array or a TensorFlow tensor."""
  return value.numpy() if hasattr(value, "numpy") else value


def _torch_targets(kind: str, labels) -> dict:
  """bert_tf's labels of a batch -> transformers' loss arguments: class, tag or ending ids
  (-100 ignored, as bert_tf's tagging loss does), numbers, or (start, end) positions."""
  import torch
  labels = np_value(labels)
  if kind == "answer":
    return {"start_positions": torch.as_tensor(labels[:, 0], dtype=torch.long),
            "end_positions": torch.as_tensor(labels[:, 1], dtype=torch.long)}
  return {"labels": torch.as_tensor(labels, dtype=torch.float if kind == "regress"
                                    else torch.long)}


def _our_layout(kind: str, output):
  """transformers' outputs -> bert_tf's logits: [batch, 2, seq] for answer (start, end)."""
  import numpy as np
  if kind == "answer":
    return np.stack([output.start_logits.numpy(), output.end_logits.numpy()], axis=1)
  return output.logits.numpy()


def finetune_task(hf_dir: str, kind: str, epoch_batches, score, *, num_labels: int = 0,
                  epochs: int = 3, steps_per_epoch: int, learning_rate: float = 2e-5,
                  seed: int = 0, warmup_proportion: float = 0.1,
                  max_steps: int | None = None, verbose: bool = True) -> float:
  """Fine-tunes transformers' class for `kind` (`HEADS`) from the export `hf_dir` with BERT's
  recipe and returns the best epoch's figure.

  `epoch_batches(epoch)`: that epoch's (features, labels) batches in bert_tf's names and
  layout (`token_ids`, `segment_ids`, `padding_mask`; labels as bert_tf's task kinds make
  them), so that both sides train on the same rows in the same order. `score(predict)`: the
  dev figure, given `predict(features) -> logits` in bert_tf's layout, dropout off.
  """
  import numpy as np
  import torch
  import transformers

  transformers.logging.set_verbosity_error()  # the new head's "newly initialized" is expected
  random.seed(seed)
  np.random.seed(seed)
  torch.manual_seed(seed)
  options = ({"num_labels": 1, "problem_type": "regression"} if kind == "regress" else
             {"num_labels": num_labels} if kind in ("classify", "tag") else {})
  model = getattr(transformers, HEADS[kind]).from_pretrained(hf_dir, **options)
  optimizer, schedule = _recipe(model, learning_rate, steps_per_epoch * epochs, warmup_proportion)

  def predict(features):
    model.eval()
    with torch.no_grad():
      return _our_layout(kind, model(**_torch_inputs(features)))

  return _train(model, optimizer, schedule, epochs, epoch_batches,
                lambda features, labels: model(**_torch_inputs(features),
                                               **_torch_targets(kind, labels)).loss,
                lambda: score(predict), "dev", max_steps=max_steps, verbose=verbose)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--hf_dir", required=True, help="python -m bert_tf.export --format=hf")
  parser.add_argument("--train_file", required=True)
  parser.add_argument("--dev_file", required=True)
  parser.add_argument("--text_columns", default="text", help="one name, or two: a,b")
  parser.add_argument("--label_column", default="label")
  parser.add_argument("--epochs", type=int, default=3)
  parser.add_argument("--learning_rate", type=float, default=2e-5)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--seq_length", type=int, default=128)
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args()
  accuracy = finetune_transformers(
      args.hf_dir, args.train_file, args.dev_file, text_columns=args.text_columns.split(","),
      label_column=args.label_column, epochs=args.epochs, learning_rate=args.learning_rate,
      batch_size=args.batch_size, seq_length=args.seq_length, seed=args.seed)
  print(f"dev accuracy (best epoch): {accuracy:.4f}")


if __name__ == "__main__":
  main()

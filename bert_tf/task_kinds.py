"""The names of fine-tuning's task kinds, without TensorFlow, so that
the flags of fine-tuning (`--task`) and of pre-training's probe (`--probe_task`) offer them
before TensorFlow loads. Each name is a package, `bert_tf/finetune/kinds/<name>/`, holding
everything the kind is, imported by `bert_tf/finetune/kinds/registry.py`; adding a kind is its
package, a line there and a line here."""

DEFAULT_SEQ_LENGTH = 128
# Each kind's name, and its tokens per example when --seq_length is not given: question
# answering's windows hold a question and a passage of its context (run_squad.py's 384).
SEQ_LENGTHS = {
    "classify": DEFAULT_SEQ_LENGTH,
    "regress": DEFAULT_SEQ_LENGTH,
    "tag": DEFAULT_SEQ_LENGTH,
    "answer": 384,
    "choose": DEFAULT_SEQ_LENGTH,
}
NAMES = tuple(SEQ_LENGTHS)
# The kinds whose files a name's ending tells (pre-training's probe reads --probe_task from
# them when not given): SQuAD's JSON, SWAG's CSV and multiple choice's JSON Lines.
FILE_ENDINGS = {".json": "answer", ".csv": "choose", ".jsonl": "choose"}

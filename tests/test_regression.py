"""A regression task's labels read as numbers, and one that is not a number is one
`UserError` naming the file and the row."""

import numpy as np
import pytest

from bert_tf.errors import UserError
from bert_tf.finetune import data
from bert_tf.finetune.kinds.regress import regression


def write(path, text):
  path.write_text(text, encoding="utf-8")
  return str(path)


def test_labels_are_numbers(tmp_path):
  path = write(tmp_path / "train.tsv", "sentence1\tsentence2\tscore\na\tb\t4.25\nc\td\t0\n"
               "e\tf\t-1e-1\n")
  examples = data.read_examples(path, ["sentence1", "sentence2"], "score")
  targets = regression.targets(examples)
  assert targets.dtype == np.float32
  assert targets.tolist() == pytest.approx([4.25, 0.0, -0.1])


@pytest.mark.parametrize("label", ["high", "", "nan", "inf"])
def test_a_label_that_is_not_a_number_is_a_user_error(tmp_path, label):
  path = write(tmp_path / "dev.tsv", f"text\tscore\na\t1.5\nb\t{label}\n")
  examples = data.read_examples(path, ["text"], "score")
  with pytest.raises(UserError, match=f"dev.tsv, row 3: label '{label}' is not a number"):
    regression.targets(examples)

"""Each setting is declared once: its flag, its config field, flags.txt and docs/flags.md all
come from the declaration, and reading a flagfile loads no TensorFlow."""

import dataclasses

import pytest
from absl import flags

from bert_tf import flags_doc, settings
from bert_tf.audit import AuditConfig
from bert_tf.data.data_settings import VocabularyConfig
from bert_tf.errors import UserError
from bert_tf.finetune.finetune_settings import FinetuneConfig
from bert_tf.training.train_settings import TrainConfig
from helpers import run


@pytest.mark.parametrize("config_class", [TrainConfig, VocabularyConfig, AuditConfig,
                                          FinetuneConfig])
def test_every_field_is_a_flag_with_its_default_type_and_help(config_class):
  flag_values = flags.FlagValues()
  settings.define_flags(config_class, flag_values)
  flag_values(["prog"])
  fields = dataclasses.fields(config_class)
  fields = [field for field in fields if "derived" not in field.metadata]  # not flags
  assert {field.name for field in fields} == {field.name for field in
                                              settings.declared(config_class)}
  for field in fields:
    flag = flag_values[field.name]
    assert flag.default == field.default, field.name
    assert flag.help.endswith(field.metadata["help"]), field.name
    assert field.metadata["help"].strip(), field.name
    if field.default is not None:
      assert isinstance(flag.value, settings.value_type(field)), field.name
    if field.metadata["choices"]:
      assert list(flag.parser.enum_values) == list(field.metadata["choices"])
  assert settings.from_flags(config_class, flag_values) == config_class()


def test_flags_text_re_creates_the_config(tmp_path):
  flag_values = flags.FlagValues()
  settings.define_flags(TrainConfig, flag_values)
  flag_values(["prog", "--seq_length=64", "--max_predictions_per_seq=30", "--dropout=0",
               "--nonsp", "--on_nan=rollback", "--input_files=a.txt,b.txt"])
  given = settings.from_flags(TrainConfig, flag_values)
  path = tmp_path / "flags.txt"
  path.write_text(settings.flags_text(TrainConfig, flag_values))
  again = flags.FlagValues()
  settings.define_flags(TrainConfig, again)
  again(["prog", f"--flagfile={path}"])
  assert settings.from_flags(TrainConfig, again) == given
  assert given.dropout == 0 and not given.nsp and given.seq_length == 64


def test_flags_text_has_no_empty_line(tmp_path):
  """A setting of no value (`--dropout` unset: the preset's) is left out of flags.txt, not an
  empty line, and the flagfile still re-creates the run."""
  flag_values = flags.FlagValues()
  settings.define_flags(TrainConfig, flag_values)
  flag_values(["prog"])
  text = settings.flags_text(TrainConfig, flag_values)
  assert "" not in text.splitlines() and text.endswith("\n")
  path = tmp_path / "flags.txt"
  path.write_text(text)
  again = flags.FlagValues()
  settings.define_flags(TrainConfig, again)
  again(["prog", f"--flagfile={path}"])
  assert settings.from_flags(TrainConfig, again) == TrainConfig()


def test_a_value_outside_the_choices_is_one_line():
  with pytest.raises(UserError, match=r"unknown optimizer 'sgd': use one of adamw, lamb"):
    settings.check_choices(TrainConfig(optimizer="sgd"))
  settings.check_choices(TrainConfig())


def test_docs_flags_md_is_generated_from_the_declarations():
  for path, generated in flags_doc.generated_pages().items():
    with open(path, encoding="utf-8") as f:
      page = f.read()
    assert flags_doc.BEGIN in page and flags_doc.END in page, path
    assert page == flags_doc.page_with(page, generated), (
        f"{path} is out of date: run python -m bert_tf.flags_doc")
  with open(flags_doc.PAGE, encoding="utf-8") as f:
    page = f.read()
  for field in settings.declared(AuditConfig):
    assert f"`--{field.name}`" in page


def test_reading_a_flagfile_loads_neither_tensorflow_nor_keras():
  script = (
      "import sys\n"
      "from absl import flags\n"
      "from bert_tf import settings\n"
      "from bert_tf.training.train_settings import TrainConfig\n"
      "settings.define_flags(TrainConfig)\n"
      "flags.FLAGS(['train.py', '--flagfile=configs/quickstart.flags'])\n"
      "config = settings.from_flags(TrainConfig)\n"
      "assert config.masked_lm_prob == 0.4, config\n"
      "heavy = [m for m in sys.modules if m.split('.')[0] in "
      "('tensorflow', 'keras', 'keras_hub', 'tensorflow_text')]\n"
      "print(heavy)\n")
  result = run(["-c", script], timeout=120, fresh=True)  # what an interpreter has loaded
  assert result.returncode == 0, result.stderr[-2000:]
  assert result.stdout.strip() == "[]"

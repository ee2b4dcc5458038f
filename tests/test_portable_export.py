"""LiteRT and ONNX exports (`python -m bert_tf.export --format=litert|onnx`): a run's encoder
and a fine-tuned model of every kind, on ids, beside a `tokenizers` tokenizer.json, each format
at each quantization; each checks itself in a fresh process that imports only numpy,
tokenizers and its runtime (its ids against ours, its outputs against the Keras model's); a
changed weight fails the check; each kind's dev figure (its own `evaluate`) of the converted
model is printed beside the Keras model's; bad input is one line.

The exports are made once (`exported`): the encoder's LiteRT int8 by the command, the rest by
the functions it calls, in this process, each model converted once per format and quantized
from there, its exports checked in one fresh process."""

import json
import os
import re
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import task_kinds
from bert_tf.data.tokenization import Vocabulary
from bert_tf.errors import UserError
from bert_tf.export.formats import export_portable, runtime_runner
from bert_tf.export.formats import onnx as onnx_format
from bert_tf.export.formats.export_config import QUANTIZATIONS, ExportConfig
from bert_tf.export.formats.portable_verification import verify_portable
from bert_tf.finetune.finetuned import load_finetuned, portable_finetuned
from bert_tf.finetune.kinds.answer.head import span_model
from bert_tf.finetune.kinds.choose.head import choice_model
from bert_tf.finetune.kinds.registry import kind_named as task_kind
from bert_tf.finetune.kinds.regress.head import regression_model
from bert_tf.finetune.kinds.tag.head import tagging_model
from bert_tf.finetune.model import classifier_model
from bert_tf.finetune.portable_dev import PortableDev
from bert_tf.model.bert_config import BertConfig
from bert_tf.model.pretraining import pretraining_model
from bert_tf.serving import portable as portable_module
from bert_tf.serving.portable import ENCODER_SHAPES
from bert_tf.serving.portable_comparison import TOLERANCES
from bert_tf.serving.portable_tokenizer import portable_tokenizer
from bert_tf.serving.trained import load_trained, portable_encoder
from bert_tf.serving.verification import text_ids
from helpers import run, write_choices, write_output_dir

FORMATS = ("litert", "onnx")
MODELS = ("encoder", *task_kinds.NAMES)
COMMAND = ("encoder", "litert", "int8")  # the export the command makes
TAGS = ["B-ORG", "I-ORG", "O"]
CLASSES = ["neg", "pos", "mixed"]
ANSWER_SETTINGS = {"max_query_length": 8, "doc_stride": 6, "max_answer_length": 5,
                   "n_best_size": 4, "null_score_diff_threshold": 0.0,
                   "version_2_with_negative": False}
VERIFIED = re.compile(r"^verified: (\w+) (litert|onnx) (none|fp16|int8) ids equal, "
                      r"(?:(\d+) of (\d+) \w+ the Keras model's, )?largest output difference "
                      r"(\S+) of its scale \((\w+); tolerance (\S+)\)$", re.M)


def verified(line, kind, export_format, quantize):
  """Checks a verification line; returns its difference."""
  match = VERIFIED.search(line)
  assert match and match.groups()[:3] == (kind, export_format, quantize), line
  assert float(match[6]) <= float(match[8])
  return float(match[6])


@pytest.fixture(scope="module")
def finetunes(vocab_file, tmp_path_factory):
  """An output_dir of each kind on a one-layer encoder: {kind: output_dir}."""
  vocabulary = Vocabulary(vocab_file)
  config = BertConfig(vocab_size=len(vocabulary), hidden_size=32, num_hidden_layers=1,
                      num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
  root = tmp_path_factory.mktemp("finetunes")
  made = {}
  for seed, kind in enumerate(task_kinds.NAMES):
    keras.utils.set_random_seed(seed)
    body = pretraining_model(config).get_layer("bert_encoder")
    model = {"classify": lambda body: classifier_model(body, len(CLASSES)),
             "regress": regression_model,
             "tag": lambda body: tagging_model(body, len(TAGS)),
             "answer": span_model, "choose": choice_model}[kind](body)
    task = {"task": kind, "labels": {"classify": CLASSES, "tag": TAGS}.get(kind, []),
            "pair": kind in ("regress", "answer", "choose"), "seq_length": 24, "lower_case": True,
            **(ANSWER_SETTINGS if kind == "answer" else {})}
    made[kind] = write_output_dir(str(root / kind), model, config, vocabulary, task)
  return made


@pytest.fixture(scope="module")
def exported(model_dir, finetunes, tmp_path_factory):
  """Every export, made once: {(model, format, quantize): (directory, what its check said)},
  the model "encoder" (of `model_dir`) or a kind."""
  root = tmp_path_factory.mktemp("portable")
  output = str(root / "_".join(COMMAND))
  result = run(["-m", "bert_tf.export", f"--model_dir={model_dir}", f"--format={COMMAND[1]}",
                f"--quantize={COMMAND[2]}", f"--output={output}"])
  assert result.returncode == 0, result.stderr[-3000:]
  made = {COMMAND: (output, result.stdout)}
  portables = {"encoder": portable_encoder(load_trained(model_dir)),
               **{kind: portable_finetuned(load_finetuned(output_dir))
                  for kind, output_dir in finetunes.items()}}
  for model, portable in portables.items():
    directories = {}
    for export_format in FORMATS:
      directories.update({(export_format, quantize): directory for quantize, directory in (
          export_portable(portable, export_format, {
              quantize: str(root / f"{model}_{export_format}_{quantize}")
              for quantize in QUANTIZATIONS if (model, export_format, quantize) not in made})
      ).items()})
    lines = verify_portable(portable, directories)
    made.update({(model, *cell): (directory, line)
                 for (cell, directory), line in zip(directories.items(), lines, strict=True)})
  return made


@pytest.mark.e2e
@pytest.mark.parametrize("model", MODELS)
def test_each_format_and_quantization_exports_and_checks_itself(exported, model):
  """The encoder and every kind, each format at each quantization: checked in a fresh process
  (the line), described, quantized (smaller, and not the same outputs)."""
  for export_format in FORMATS:
    sizes = []
    for quantize in QUANTIZATIONS:
      directory, said = exported[model, export_format, quantize]
      difference = verified(said, model, export_format, quantize)
      if quantize != "none":
        assert difference > 0  # the weights were rounded
      with open(os.path.join(directory, "portable.json")) as f:
        description = json.load(f)
      seq_length = 32 if model == "encoder" else 24  # the run's, the fine-tune's
      endings = ["endings"] if model == "choose" else []  # a context paired with each ending
      assert description["inputs"] == {
          name: {"dtype": "int32", "shape": ["batch", *endings, "tokens"]}
          for name in ("input_ids", "token_type_ids", "attention_mask")}
      shapes = ENCODER_SHAPES if model == "encoder" else task_kind(model).portable_shapes
      assert sorted(description["outputs"]) == sorted(shapes)
      assert (description["quantize"], description["kind"], description["format"],
              description["seq_length"]) == (quantize, model, export_format, seq_length)
      assert description.get("labels", []) == {"classify": CLASSES, "tag": TAGS}.get(model, [])
      assert sorted(os.listdir(directory)) == sorted([
          description["model_file"], "portable.json", "tokenizer.json", "vocab.txt"])
      sizes.append(os.path.getsize(os.path.join(directory, description["model_file"])))
    assert sizes[0] > sizes[1] > sizes[2], (export_format, sizes)  # float32, float16, int8
  if model == COMMAND[0]:
    assert exported[COMMAND][1].rstrip().endswith(f"wrote {exported[COMMAND][0]}")


@pytest.mark.e2e
def test_a_changed_weight_fails_the_check_in_one_line_at_every_quantization(exported, finetunes):
  """A head's bias moved after the export, as if the export held other weights: the issue's
  classifier (one class's bias by 0.19, where every logit is below 0.02) at each quantization;
  tag's logits and answer's (beside the -10000 that marks what cannot be an answer) at int8,
  the loosest."""
  for kind, layer, change, output, quantizations in (
      ("classify", "classifier", [0.19, 0.0, 0.0], "logits", QUANTIZATIONS),
      ("tag", "classifier", [0.0, 0.5, 0.0], "logits", ["int8"]),
      ("answer", "qa_outputs", [0.05, 0.0], "start_logits", ["int8"])):
    portable = portable_finetuned(load_finetuned(finetunes[kind]))
    bias = portable.model.get_layer(layer).bias
    bias.assign(bias.numpy() + np.array(change, np.float32))
    for quantize in quantizations:
      directory, _ = exported[kind, "onnx", quantize]
      tolerance = re.escape(f"{TOLERANCES[quantize]:.2g}")
      with pytest.raises(UserError, match=rf"^{kind} onnx {quantize} export failed "
                         rf"verification: its {output} differs from the Keras model's by \S+ of "
                         rf"its scale \(tolerance {tolerance}\)$"):
        verify_portable(portable, {("onnx", quantize): directory})


@pytest.mark.e2e
def test_an_export_that_does_not_run_fails_the_check_in_one_line(exported, finetunes,
                                                                 tmp_path):
  """Of several checked in one process, the one that does not load is named."""
  portable = portable_finetuned(load_finetuned(finetunes["regress"]))
  broken = shutil.copytree(exported["regress", "onnx", "fp16"][0], str(tmp_path / "broken"))
  with open(os.path.join(broken, "model.onnx"), "r+b") as f:
    f.truncate(100)
  with pytest.raises(UserError, match=r"^regress onnx fp16 export failed verification: running "
                     r"it failed: \S.*$"):
    verify_portable(portable, {("litert", "none"): exported["regress", "litert", "none"][0],
                               ("onnx", "fp16"): broken})


def dev_line(finetunes, exported, kind, export_format, quantize, dev_file):
  """The `--dev_file` line of the `kind` fine-tune's export, and its two figures."""
  finetuned = load_finetuned(finetunes[kind])
  portable = portable_finetuned(finetuned)
  dev = PortableDev(finetuned.task, portable, str(dev_file), data_dir=str(dev_file.parent),
                    text_columns="text", label_column="label", header=True)
  directory, _ = exported[kind, export_format, quantize]
  line = dev.line(portable, runtime_runner(export_format, directory),
                  f"{export_format} {quantize}")
  match = re.fullmatch(rf"dev: {export_format} {quantize} (\w+) (\S+), the Keras model's (\S+) "
                       r"\((\d+) examples\)", line)
  assert match, line
  return match[1], float(match[2]), float(match[3]), int(match[4])


@pytest.mark.e2e
def test_a_converted_models_dev_figure_beside_the_keras_models(exported, finetunes, tmp_path):
  """Each kind's own dev figure (its `evaluate`), of the converted model and the Keras one."""
  texts = ["The for statement iterates over a sequence.", "Café naïve résumé.",
           "A class defines a new type.", "北京大学", "Exceptions are raised."] * 4
  tsv = tmp_path / "dev.tsv"
  tsv.write_text("text\tlabel\n" + "".join(
      f"{text}\t{CLASSES[i % 3]}\n" for i, text in enumerate(texts)))
  conll = tmp_path / "dev.conll"
  conll.write_text("".join("".join(f"{word} {tag}\n" for word, tag in zip(
      text.split(), ["B-ORG", "I-ORG", "O", "O", "O", "O"])) + "\n" for text in texts))
  squad_file = tmp_path / "dev.json"
  context = "The Debugger stops at a Breakpoint. Then the stack frame shows it."
  squad_file.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{
      "context": context, "qas": [
          {"id": str(i), "question": question,
           "answers": [{"text": answer, "answer_start": context.index(answer)}]}
          for i, (question, answer) in enumerate([
              ("Where does the debugger stop?", "at a Breakpoint"),
              ("What shows it?", "the stack frame"), ("Who stops?", "The Debugger")])]}]}]}))
  choices = tmp_path / "dev.jsonl"
  write_choices(choices, 6, seed=0)
  for kind, export_format, quantize, dev_file, name, examples in (
      ("classify", "onnx", "int8", tsv, "dev_accuracy", 20),
      ("tag", "litert", "fp16", conll, "dev_entity_f1", 20),
      ("answer", "onnx", "none", squad_file, "dev_f1", 3),
      ("choose", "litert", "none", choices, "dev_accuracy", 6)):
    figure_name, figure, keras_figure, count = dev_line(finetunes, exported, kind,
                                                        export_format, quantize, dev_file)
    assert (figure_name, count) == (name, examples)
    assert abs(figure - keras_figure) <= 0.1, (kind, figure, keras_figure)
  with pytest.raises(UserError, match=r"dev.tsv:1: tag 'label' is not in BIO form"):
    dev_line(finetunes, exported, "tag", "onnx", "none", tsv)


def test_portable_tokenizer_gives_our_ids_but_where_the_docs_say(vocab_file, corpus_pattern):
  """On the corpus's text the same ids; the documented differences: a final capital sigma
  (uncased) and characters that its Unicode tables class otherwise (cased)."""
  import glob
  vocabulary = Vocabulary(vocab_file)
  with open(sorted(glob.glob(corpus_pattern))[0], encoding="utf-8") as f:
    lines = [line.strip() for line in f if line.strip()][:200]
  for lower_case in (True, False):
    ours = vocabulary.tokenizer(lower_case)
    theirs = portable_tokenizer(vocab_file, lower_case=lower_case, seq_length=512)
    theirs.no_padding()
    theirs.no_truncation()
    # and words of 150 and 250 letters: pieces, [UNK] (original BERT's limit, 200)
    texts = [*lines, f"x {'a' * 150} y", f"x {'a' * 250} y"]
    ids = ours.tokenize(tf.constant(texts)).to_list()
    assert [encoded.ids[1:-1] for encoded in theirs.encode_batch(texts)] == ids
    assert len(ids[-2]) > 3 and ids[-1][1] == vocabulary.unk_id
  tokens = ["ς", "σ", "##ς", "##σ", "οδυσσευ", "⹅", "x", "##x", "##⹅"]
  path = os.path.join(os.path.dirname(vocab_file), "..", "sigma_vocab.txt")
  with open(path, "w", encoding="utf-8") as f:
    f.write("".join(f"{token}\n" for token in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                                *tokens]))
  small = Vocabulary(path)
  uncased = portable_tokenizer(path, lower_case=True, seq_length=16)
  assert [small.tokens[i] for i in text_ids(small.tokenizer(True), "ΟΔΥΣΣΕΥΣ")] == [
      "οδυσσευ", "##ς"]
  assert uncased.encode("ΟΔΥΣΣΕΥΣ").tokens[1:3] == ["οδυσσευ", "##σ"]
  cased = portable_tokenizer(path, lower_case=False, seq_length=16)
  assert [small.tokens[i] for i in text_ids(small.tokenizer(False), "⹅x")] == ["⹅", "x"]
  assert cased.encode("⹅x").tokens[1:3] == ["⹅", "##x"]  # U+2E45 not punctuation in its tables


@pytest.mark.parametrize("settings, message", [
    ({"format": "onnx", "quantize": "int4"}, "unknown quantize 'int4': use one of none, fp16, "
     "int8"),
    ({"quantize": "int8"}, "--quantize, --seq_length and --dev_file are for --format=litert or "
     "onnx"),
    ({"format": "litert", "seq_length": 2}, "seq_length 2 is too short (at least 4, or 0)"),
    ({"format": "onnx", "dev_file": "dev.tsv", "skip_verify": True}, "--dev_file's figures are "
     "part of the check: drop --skip_verify"),
])
def test_bad_settings_are_one_line(settings, message):
  with pytest.raises(UserError, match=f"^{re.escape(message)}$"):
    ExportConfig(model_dir="m", output="o", **settings).check()


def test_a_format_whose_runtime_is_missing_names_what_to_install(monkeypatch):
  from bert_tf.export.formats import format as export_settings
  real = export_settings.importlib.util.find_spec
  monkeypatch.setattr(export_settings.importlib.util, "find_spec",
                      lambda name: None if name == "tf2onnx" else real(name))
  with pytest.raises(UserError, match=r"^--format=onnx needs tf2onnx: pip install "
                     r"'bert_tf\[portable\]'$"):
    ExportConfig(model_dir="m", output="o", format="onnx").check()


def test_a_converter_that_fails_is_one_line(finetunes, tmp_path, monkeypatch):
  portable = portable_finetuned(load_finetuned(finetunes["regress"]))

  def failing(*args):
    raise RuntimeError("tf2onnx: unsupported op Foo\n  a long traceback")
  monkeypatch.setattr(onnx_format, "_onnx", failing)
  with pytest.raises(UserError, match=r"^the onnx converter failed \(RuntimeError\): tf2onnx: "
                     r"unsupported op Foo$"):
    export_portable(portable, "onnx", {"none": str(tmp_path / "out")})
  assert not os.path.exists(tmp_path / "out")


def test_onnx_is_converted_with_only_tf2onnxs_merging_optimizer(finetunes, tmp_path,
                                                                 monkeypatch):
  """tf2onnx's other graph optimizers copy the graph, weights and all, on each pass: BERT-base's
  shape went past 17 GB while converting. ONNX Runtime optimizes the graph as it loads it."""
  import tf2onnx
  portable = portable_finetuned(load_finetuned(finetunes["regress"]))
  asked = {}

  def converter(model, **settings):
    asked.update(settings)
    raise RuntimeError("stopped here")
  monkeypatch.setattr(tf2onnx.convert, "from_keras", converter)
  with pytest.raises(UserError, match="stopped here"):
    export_portable(portable, "onnx", {"none": str(tmp_path / "out")})
  assert list(asked["optimizers"]) == ["merge_duplication"]


@pytest.mark.e2e
def test_the_command_refuses_in_one_line(tmp_path, model_dir):
  for flags, message in [
      ([f"--model_dir={tmp_path}", "--format=litert"], None),
      ([f"--model_dir={model_dir}", "--format=onnx", "--dev_file=dev.tsv"],
       "error: --dev_file is for a fine-tune's output_dir, not a pre-training run"),
      ([f"--model_dir={model_dir}", "--format=onnx", "--quantize=int3"],
       "error: flag --quantize=int3: value should be one of <none|fp16|int8>")]:
    result = run(["-m", "bert_tf.export", *flags, f"--output={tmp_path / 'out'}"])
    assert result.returncode == 2, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and (message is None or last == message), last
    assert "Traceback" not in result.stderr


# === The examples: post-processing with the runtime alone ===

LONG = "The Python Language Reference describes the syntax. " * 8
# Each kind's inputs as the SavedModel's signature takes them, and as its example does.
SIGNATURE_INPUTS = {
    "classify": {"text": ["The for statement iterates over a sequence.", "Café naïve résumé.",
                          "北京大学 and 서울", LONG]},
    "regress": {"text_a": ["The for statement iterates.", "Café naïve résumé.", LONG],
                "text_b": ["A loop runs over each item.", "", LONG]},
    "tag": {"text": ["Café naïve, résumé.", "The  Stack-Frame of an object", "北京大学 and 서울",
                     "x " * 30]},
    # The second question is shorter than max_query_length: its windows are longer.
    "answer": {"question": ["Where does the debugger stop?", "What does the method return?",
                            "Anything?"],
               "context": ["The Debugger  stops at a Breakpoint. " * 6 + "Then the stack frame "
                           "shows it.", "Naïve Café: the résumé of a class method returns its "
                           "object. " * 3, ""]},
    "choose": {"context": ["The debugger stops.", "Café naïve résumé.", LONG],
               "endings": [["at a breakpoint.", "in the kitchen.", ""],
                           ["北京大学", "a class method returns.", "Zürich, 1984."],
                           ["Each statement is executed.", LONG, ""]]},
}
# The example's arguments for those inputs: the texts of one input joined by |||.
ARGUMENTS = {
    "classify": SIGNATURE_INPUTS["classify"]["text"],
    "regress": [f"{a} ||| {b}" for a, b in zip(*SIGNATURE_INPUTS["regress"].values())],
    "tag": SIGNATURE_INPUTS["tag"]["text"],
    "answer": [f"{q} ||| {c}" for q, c in zip(*SIGNATURE_INPUTS["answer"].values())],
    # the first context's third ending absent: given empty, as the signature's padding is
    "choose": [" ||| ".join([context, *endings[:2 + (i == 1)], *[""] * (i == 0)])
               for i, (context, endings) in enumerate(zip(*SIGNATURE_INPUTS["choose"].values()))],
}
# What is decided (equal, or at int8 a near-tie of the SavedModel's own scores), and the
# scores held within the export's check's tolerance of their scale.
DECIDED = {"classify": ["label"], "regress": [], "tag": ["words", "tags", "starts", "ends"],
           "answer": ["answer", "start", "end", "has_answer"], "choose": ["choice", "ending"]}
SCORES = {"classify": "probabilities", "regress": "score", "answer": "score",
          "choose": "probabilities"}
# Runs an example script as `python examples/NAME.py ARGS`, then checks that nothing imported
# TensorFlow: argv = the script, its arguments.
WITHOUT_TENSORFLOW = r"""
import runpy, sys
script, sys.argv = sys.argv[1], sys.argv[1:]
sys.path.insert(0, script.rsplit("/", 1)[0])
runpy.run_path(script, run_name="__main__")
assert "tensorflow" not in sys.modules, "tensorflow was imported"
"""
EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples")


def example(name, *args):
  """What `examples/NAME.py *args` printed, each line as JSON, run in a fresh interpreter."""
  script = os.path.join(EXAMPLES_DIR, f"{name}.py")
  result = run(["-c", WITHOUT_TENSORFLOW, script, *args], fresh=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  return [json.loads(line) for line in result.stdout.strip().splitlines()]


def signature_rows(kind, outputs):
  """The signature's outputs as one dict per input, as the example prints them."""
  def plain(value):
    value = value.tolist() if isinstance(value, np.ndarray) else value
    if isinstance(value, list):
      return [plain(v) for v in value]
    return value.decode() if isinstance(value, bytes) else value
  rows = [{name: plain(value[i]) for name, value in outputs.items()}
          for i in range(len(next(iter(outputs.values()))))]
  if kind == "tag":  # padded to the batch's most words
    rows = [{name: value[:row["num_words"]] if isinstance(value, list) else value
             for name, value in row.items()} for row in rows]
  return rows


def assert_same_answers(kind, quantize, got, expected, word_logits=None):
  """The example's answers against the SavedModel's: decisions equal (at int8, a choice that
  differs only where the float model's own scores of the two are within the band of each
  other: the SavedModel's probabilities, the Keras model's logits of a word's tags,
  `word_logits`), scores within the export check's tolerance of their scale (root mean
  square)."""
  def band(values):
    return TOLERANCES[quantize] * np.sqrt(np.mean(np.square(np.concatenate(
        [np.ravel(value) for value in values]))))
  scores = SCORES.get(kind)
  if scores:
    score_band = band([row[scores] for row in expected])
  if kind == "tag":
    tag_band = band([logits for row in word_logits for logits in row if logits is not None])
  for row, (one, theirs) in enumerate(zip(got, expected, strict=True)):
    if scores:
      ours = np.ravel(one[scores])
      assert np.max(np.abs(ours - np.ravel(theirs[scores])[:len(ours)])) <= score_band, (
          one, theirs)
    decided = [name for name in DECIDED[kind] if one[name] != theirs[name]]
    if not decided:
      continue
    assert quantize == "int8", (one, theirs)
    if kind == "tag":
      assert decided == ["tags"], (one, theirs)
      for word, (ours, their) in enumerate(zip(one["tags"], theirs["tags"])):
        logits = word_logits[row][word]
        assert ours == their or logits.max() - logits[TAGS.index(ours)] <= tag_band
    else:
      assert kind in ("classify", "choose"), (one, theirs)
      probabilities = theirs["probabilities"]
      assert max(probabilities) - probabilities[one.get("choice", np.argmax(
          one["probabilities"]))] <= score_band, (one, theirs)


@pytest.mark.e2e
def test_each_example_answers_as_its_saved_model_without_tensorflow(exported, finetunes,
                                                                     tmp_path, monkeypatch):
  """Each kind's example on its float export in one format and its int8 export in the other,
  against the SavedModel of the same fine-tune on the same inputs."""
  import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer's ops)

  from bert_tf.finetune.export import export_task
  from bert_tf.finetune.kinds import tag as tag_kind
  for number, kind in enumerate(task_kinds.NAMES):
    finetuned = load_finetuned(finetunes[kind])
    directory = export_task(finetuned.model, finetuned.task, finetuned.vocabulary,
                            str(tmp_path / kind))
    signature = tf.saved_model.load(directory).signatures[task_kind(kind).signature]
    expected = signature_rows(kind, {name: value.numpy() for name, value in signature(
        **{name: tf.constant(texts) for name, texts in SIGNATURE_INPUTS[kind].items()}).items()})
    if kind == "tag":
      assert expected[3]["tags"][-1] == "O"  # past the sequence
    if kind == "answer":
      assert expected[2] == {"answer": "", "start": 0, "end": 0, "has_answer": False,
                             "score": expected[2]["score"]}  # an empty context
    word_logits = None
    if kind == "tag":  # the Keras model's logits of each word, as the SavedModel's check has them
      monkeypatch.setattr(tag_kind, "TEXTS", SIGNATURE_INPUTS["tag"]["text"])
      word_logits = tag_kind.TagReference(finetuned.model, finetuned.task,
                                          finetuned.vocabulary).word_logits
    for export_format, quantize in ((FORMATS[number % 2], "none"),
                                    (FORMATS[1 - number % 2], "int8")):
      got = example(kind, exported[kind, export_format, quantize][0], *ARGUMENTS[kind])
      assert_same_answers(kind, quantize, got, expected, word_logits)


def example_error(name, *args):
  """The one line `examples/NAME.py *args` said on standard error, exiting with status 2."""
  result = run([os.path.join(EXAMPLES_DIR, f"{name}.py"), *args], fresh=True, timeout=120)
  assert (result.returncode, result.stdout) == (2, ""), result.stderr[-2000:]
  assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, (
      result.stderr)
  return result.stderr.strip()


@pytest.mark.e2e  # nine fresh interpreters
def test_an_examples_missing_or_wrong_argument_is_one_line(tmp_path):
  """No export, a directory that is none, another kind's export: a usage line or one error
  line, exit status 2, without loading a model."""
  tagger = tmp_path / "tagger"
  tagger.mkdir()
  (tagger / "portable.json").write_text(json.dumps({
      "format": "onnx", "model_file": "model.onnx", "kind": "tag", "seq_length": 24,
      "tokenizer": "tokenizer.json"}))
  for kind in task_kinds.NAMES:  # each script's usage; the rest is their shared loader's
    assert example_error(kind).startswith(f'usage: python examples/{kind}.py EXPORT_DIR "')
  assert example_error("tag", str(tagger)).startswith("usage: python examples/tag.py ")
  assert example_error("answer", str(tmp_path / "nowhere"), "a text") == (
      f"error: {tmp_path / 'nowhere'} is not a directory: give the directory that python -m "
      f"bert_tf.export --format=onnx|litert --output=DIR wrote")
  assert example_error("choose", str(tmp_path), "a text") == (
      f"error: {tmp_path} is not a LiteRT or ONNX export (it has no portable.json): make one "
      f"with python -m bert_tf.export --format=onnx|litert")
  assert example_error("classify", str(tagger), "a text") == (
      f"error: {tagger} is a tag fine-tune's export; examples/classify.py takes a classify "
      f"fine-tune's (use examples/tag.py)")


@pytest.mark.e2e
def test_an_examples_malformed_input_is_one_line(exported):
  """An input without the parts its kind takes: one line naming it and the form to write."""
  for kind, arguments, message in (
      ("answer", ["Where?", "The debugger stops."], "error: input 1 has 1 part ('Where?'): "
       "write it as 'QUESTION ||| CONTEXT'"),
      ("choose", ["A context ||| ||| "], "error: input 1 has no ending: write it as "
       "'CONTEXT ||| ENDING ||| ENDING ...'"),
      ("classify", ["ok", "a ||| b"], "error: input 2 has 2 parts ('a ||| b'): write it as one "
       "text (this fine-tune's examples are single texts)"),
      ("regress", ["a text"], "error: input 1 has 1 part ('a text'): write it as 'TEXT_A ||| "
       "TEXT_B' (this fine-tune's examples are pairs)")):
    assert example_error(kind, exported[kind, "onnx", "none"][0], *arguments) == message


@pytest.mark.e2e
@pytest.mark.parametrize("model", ["encoder", "classify", "choose"])
def test_an_export_answers_at_the_inputs_own_length(exported, finetunes, model_dir, model):
  """Exported at its longest (32, 24), each format at each quantization answers a batch of 8
  and of 16 tokens and of its longest as the Keras model does at that length (the int8 ones
  within their check's tolerance): no length is fixed in the graph."""
  portable = (portable_encoder(load_trained(model_dir)) if model == "encoder"
              else portable_finetuned(load_finetuned(finetunes[model])))
  rng = np.random.default_rng(0)
  for length in (8, 16, portable.seq_length):
    shape = [2, *([3] if model == "choose" else []), length]
    ids = rng.integers(5, 100, size=shape).astype(np.int32)
    mask = np.ones_like(ids)
    mask[0, ..., length - 3:] = 0  # the first example shorter than the batch's longest
    inputs = {"input_ids": ids * mask, "token_type_ids": np.zeros_like(ids),
              "attention_mask": mask}
    expected = {name: np.asarray(value) for name, value in portable.outputs(
        *(inputs[name] for name in portable_module.INPUTS)).items()}
    for export_format in FORMATS:
      for quantize in QUANTIZATIONS:
        got = runtime_runner(export_format, exported[model, export_format, quantize][0])(inputs)
        for name, value in expected.items():
          assert got[name].shape == value.shape, (export_format, quantize, length, name)
          scale = float(np.sqrt(np.mean(np.square(value))))  # the check's: its own scale
          assert np.abs(got[name] - value).max() / scale <= TOLERANCES[quantize], (
              export_format, quantize, length, name)


@pytest.mark.e2e
def test_the_savedmodel_pads_to_the_batchs_longest(finetunes, tmp_path):
  """The classify signature pads a batch to its longest text, not to the sequence length: the
  same probabilities as the Keras model on the same texts padded to the sequence length."""
  import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer's ops)

  from bert_tf.finetune import data
  from bert_tf.finetune.export import export_task
  finetuned = load_finetuned(finetunes["classify"])
  texts = ["A class.", "The for statement iterates over a sequence.", "Café naïve résumé."]
  directory = export_task(finetuned.model, finetuned.task, finetuned.vocabulary,
                          str(tmp_path / "classify"))
  served = tf.saved_model.load(directory).signatures["classify"](text=tf.constant(texts))
  full = data.text_encoder(finetuned.vocabulary, lower_case=True,
                           seq_length=finetuned.task.seq_length)
  longest = data.text_encoder(finetuned.vocabulary, lower_case=True,
                              seq_length=finetuned.task.seq_length, pad_to_longest=True)
  features = longest.features(tf.constant(texts))
  assert features["token_ids"].shape[1] < finetuned.task.seq_length  # texts shorter than it
  expected = tf.nn.softmax(finetuned.model(full.features(tf.constant(texts)), training=False))
  np.testing.assert_allclose(served["probabilities"].numpy(), expected.numpy(), atol=1e-6)

"""The input plan (docs/design.md#the-input-plan): a run's plans made once from its settings,
one `Start` for a fresh stream, a resume and a resize, and the keyword front a notebook calls
giving the batches the plan gives."""

import glob

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.data import input_plan, piece_deal, stream_position
from bert_tf.data.data_position import DataPosition
from bert_tf.data.holdout import Holdout
from bert_tf.data.input_plan import InputPipeline, Start, StreamStart
from bert_tf.data.pipeline import text_batches
from bert_tf.data.tokenization import Vocabulary
from bert_tf.training.datasets import RunInputs
from bert_tf.training.train_settings import TrainConfig

SMALL = dict(seq_length=32, max_predictions_per_seq=5, batch_size=4, seed=3,
             document_shuffle_buffer=50, example_shuffle_buffer=50)


def test_the_keyword_front_gives_the_plans_batches(corpus_pattern, vocab_file, data_dir):
  """The notebook's call of docs/pipeline.md#from-a-notebook and the plan it makes give the
  same batches; the plan holds the files listed once, sorted."""
  vocabulary = Vocabulary(vocab_file)
  options = dict(SMALL, whole_word_masking=True, data_dir=data_dir)
  front = next(iter(bert_tf.pretraining_dataset(corpus_pattern, vocabulary, **options)))
  plan, pipeline = input_plan.from_keywords(corpus_pattern, vocabulary, options, records=False)
  assert plan.files == tuple(sorted(glob.glob(corpus_pattern)))
  assert plan.examples.whole_word_masking and plan.batching.batch_size == 4
  assert pipeline == InputPipeline()
  planned = next(iter(text_batches(plan, pipeline)))
  tf.nest.map_structure(np.testing.assert_array_equal, front, planned)


def test_a_keyword_of_no_part_of_the_plan_is_a_type_error(corpus_pattern, vocab_file):
  with pytest.raises(TypeError, match="seq_lenght"):
    bert_tf.pretraining_dataset(corpus_pattern, vocab_file, seq_lenght=32)
  with pytest.raises(TypeError, match="remask"):  # a setting of records, given to text
    bert_tf.pretraining_dataset(corpus_pattern, vocab_file, remask=True)


def test_a_start_from_a_key_or_a_mixtures_vector():
  assert Start.at(7) == Start((StreamStart(7),))
  assert Start.at(stream_position.BEGINNING) == Start.at(0, groups=2) == Start()
  assert Start.at([5, 9, 40], groups=2) == Start((StreamStart(5), StreamStart(9)), 40)
  assert Start().stream(1) == StreamStart()
  with pytest.raises(ValueError, match="not a position of a mixture of 2"):
    Start.at([5, 40], groups=2)


def test_the_data_position_gives_one_start_for_resume_and_resize():
  """A position laid out by a resize: each group's start holds its carried pieces and their
  epoch, the draws' number after them; one corpus's, one `StreamStart`."""
  carried = piece_deal.Unread(epoch=0, piece=3, plan_pipelines=2, first_example=4)
  groups = (piece_deal.Layout(1, 0, ((carried,),)), piece_deal.Layout(1, 1, ((),)))
  mixed = DataPosition(1, 1, width=3)
  mixed.place(piece_deal.Layout(1, groups=groups), [[10, 20, 42]])
  assert mixed.reading(1, 0) == Start(
      (StreamStart(10, (carried,), 0), StreamStart(20, (), 1)), draws=42)
  single = DataPosition(2, 2)
  single.last_consumed.assign([6, 8])
  assert single.reading(2, 1) == Start((StreamStart(9),))
  assert StreamStart(stream_position.encode(0, 0, 4), (carried,), 0).carries()
  assert not StreamStart(stream_position.encode(1, 0, 0), (carried,), 0).carries()


def test_a_runs_plans_are_made_once_from_its_settings(corpus_pattern, vocab_file, data_dir,
                                                      tmp_path):
  """The training, held-out and measured plans share the training files; --eval_files are
  listed once, one corpus; the measured batches are of the next seed."""
  vocabulary = Vocabulary(vocab_file)
  files = sorted(glob.glob(corpus_pattern))
  config = TrainConfig(input_files=corpus_pattern, data_dir=data_dir, vocab_file=vocab_file,
                       eval_fraction=0.1, global_batch_size=8, seed=4)
  inputs = RunInputs(config, vocabulary)
  assert inputs.training.files == inputs.measured.files == inputs.held_out.files == tuple(files)
  assert inputs.training.holdout == Holdout(0.1, held_out=False)
  assert inputs.held_out.holdout == Holdout(0.1, held_out=True)
  assert (inputs.measured.seed, inputs.training.batching.batch_size) == (5, 8)
  assert inputs.position_width() is None
  held = RunInputs(TrainConfig(input_files=corpus_pattern, data_dir=data_dir,
                               vocab_file=vocab_file, eval_files=files[0]), vocabulary)
  assert held.held_out.files == (files[0],) and held.held_out.holdout is None
  assert RunInputs(TrainConfig(input_files=corpus_pattern, data_dir=data_dir),
                   vocabulary).held_out is None

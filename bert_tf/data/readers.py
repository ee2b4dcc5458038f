"""The reader of a plan's input format: text (`pipeline.text_batches`, one corpus or groups
mixed by weight) or original BERT's records (`record_dataset.record_batches`)."""

import tensorflow as tf

from bert_tf.data.input_plan import ONE_PIPELINE, InputPipeline, InputPlan
from bert_tf.data.pipeline import text_batches
from bert_tf.data.record_dataset import record_batches


def batches(plan: InputPlan, pipeline: InputPipeline = ONE_PIPELINE) -> tf.data.Dataset:
  """The batches of `plan` as input pipeline `pipeline` reads them."""
  return (text_batches if plan.records is None else record_batches)(plan, pipeline)

"""What a fine-tune keeps in its output_dir, named once for every module that writes or reads
one (training, its export, the GLUE predictions, `python -m bert_tf.export`). The
encoder's files have pre-training's names (`bert_tf.model_dir`), so that an output_dir reads
as a model_dir does."""

from bert_tf.model_dir import CHECKPOINTS, CONFIG_FILE, METRICS_FILE, VOCAB_FILE, WEIGHTS_FILE

__all__ = ["CHECKPOINTS", "CONFIG_FILE", "METRICS_FILE", "VOCAB_FILE", "WEIGHTS_FILE"]

TASK_FILE = "task.json"  # the task's kind and settings (`task_record.TaskRecord`)
LOGS = "logs"  # TensorBoard's runs: `train` and `dev`
EXPORT = "export"  # the SavedModel serving the kind's signature
CLASSES_FILE = "classes.json"  # classify: the class names in the order of the logits
# answer: the best epoch's dev answers, as SQuAD's evaluation script reads them
PREDICTIONS_FILE, NBEST_FILE, NULL_ODDS_FILE = (
    "predictions.json", "nbest_predictions.json", "null_odds.json")

"""Exports a trained model: `python -m bert_tf.export --model_dir=... --format=... --output=...`.

Formats: `savedmodel` (serving, raw text in), `hf` (Hugging Face `BertForPreTraining`
directory), `keras_hub` (a `BertBackbone` + `BertTokenizer` preset).
"""

import logging
import sys

from absl import app, flags

from bert_tf import console

console.start(sys.argv)  # TensorFlow's start-up lines, unless -v 1

flags.DEFINE_string("model_dir", None, "A train.py model_dir.", required=True)
flags.DEFINE_enum("format", "savedmodel", ["savedmodel", "hf", "keras_hub"], "Export format.")
flags.DEFINE_string("output", None, "Directory to write (replaced if it exists).",
                    required=True)
flags.DEFINE_integer("top_k", 5, "fill_mask: predictions per [MASK] (savedmodel).")
FLAGS = flags.FLAGS
log = logging.getLogger("bert_tf")


def main(argv):
  console.configure(FLAGS.verbosity)
  from bert_tf.export.trained import export, load_trained
  with console.errors_in_one_line():
    trained = load_trained(FLAGS.model_dir)
    log.info("Exporting %s as %s to %s", FLAGS.model_dir, FLAGS.format, FLAGS.output)
    export(trained, FLAGS.format, FLAGS.output, top_k=FLAGS.top_k)
  print(f"wrote {FLAGS.output}")


if __name__ == "__main__":
  app.run(main, flags_parser=console.parse_flags)

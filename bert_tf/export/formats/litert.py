"""`litert`: LiteRT (TFLite) of the model on ids, `model.tflite`, float32 or quantized, through
TensorFlow's converter on its SavedModel on ids (Keras's `ExportArchive`, which holds the
weights as the converter freezes them); run by `ai_edge_litert`'s interpreter."""

import os

from bert_tf.export.formats.format import PortableFormat


class LiteRTFormat(PortableFormat):
  def convert(self, portable, quantizations: list[str], scratch: str) -> dict[str, bytes]:
    """{quantize: model.tflite's bytes}, each converted from one SavedModel on ids."""
    import tensorflow as tf

    from bert_tf.serving.portable import write_ids_saved_model

    saved_model = write_ids_saved_model(portable, os.path.join(scratch, "saved_model"))
    models = {}
    for quantize in quantizations:
      converter = tf.lite.TFLiteConverter.from_saved_model(saved_model)
      if quantize != "none":  # int8: dynamic-range weights; fp16: float16 weights
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
      if quantize == "fp16":
        converter.target_spec.supported_types = [tf.float16]
      models[quantize] = converter.convert()
    tf.io.gfile.rmtree(saved_model)
    return models

  def runner(self, model_file: str, threads: int = 0):
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_path=model_file, num_threads=threads or None).get_signature_runner()
    return lambda inputs: runner(**inputs)


FORMAT = LiteRTFormat("litert", "LiteRT (TFLite) on ids", needs=("ai_edge_litert", "tokenizers"),
                      model_file="model.tflite")

"""`onnx`: ONNX of the model on ids, `model.onnx`, float32 or quantized, through tf2onnx
(`onnx_conversion.py`, its graph rewritten for ONNX Runtime by `onnx_graph.py`,
`onnx_norms.py` and `onnx_attention.py`); run by ONNX Runtime on the CPU."""

from bert_tf.export.formats.format import PortableFormat


class OnnxFormat(PortableFormat):
  def convert(self, portable, quantizations: list[str], scratch: str) -> dict[str, bytes]:
    return _onnx(portable, quantizations, scratch)

  def runner(self, model_file: str, threads: int = 0):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(model_file, options,
                                           providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return lambda inputs: dict(zip(names, session.run(names, inputs)))


def _onnx(portable, quantizations: list[str], scratch: str) -> dict[str, bytes]:
  """{quantize: model.onnx's bytes} (`onnx_conversion.py`, which imports TensorFlow)."""
  from bert_tf.export.formats.onnx_conversion import onnx_models

  return onnx_models(portable, quantizations, scratch)


FORMAT = OnnxFormat("onnx", "ONNX on ids", needs=("tf2onnx", "onnxruntime", "tokenizers"),
                    model_file="model.onnx")

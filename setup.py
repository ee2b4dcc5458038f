from setuptools import find_packages, setup

PORTABLE = ["tf2onnx>=1.17", "onnx", "onnxruntime", "ai-edge-litert", "tokenizers"]

setup(
  name="bert_tf",
  version="0.1.0",
  description="BERT pre-training (masked LM + next sentence prediction) in TensorFlow 2 / "
              "Keras 3",
  packages=find_packages(include=["bert_tf", "bert_tf.*"]),
  python_requires=">=3.10",
  install_requires=[
    # tensorflow-text is built against one tensorflow minor release: keep them together.
    "tensorflow~=2.21.0",
    "tensorflow-text~=2.21.0",
    # The training step uses Keras internals (bert_tf/model/keras_internals.py): only the
    # minor release the suite ran on.
    "keras~=3.15.0",
    "keras-hub~=0.32.0",
    "absl-py",
    "tensorboard~=2.21.0",
    "matplotlib",
    "safetensors",
  ],
  # pytest-xdist runs the suite in two processes (its test groups are lost with pytest 9.2:
  # pytest-xdist issue 1386); torch 2.13.0 is the CPU build this machine
  # class has on disk; transformers for parity; ruff is the linter CI runs.
  # portable: `python -m bert_tf.export --format=litert|onnx` (docs/serving.md#litert-and-onnx):
  # tf2onnx converts (1.17, the release run here on TensorFlow 2.21), onnx and onnxruntime
  # quantize and run ONNX, ai-edge-litert runs LiteRT, tokenizers writes and reads
  # tokenizer.json. A server needs only its runtime, tokenizers and numpy.
  extras_require={
    "portable": PORTABLE,
    "test": ["pytest<9.2", "pytest-xdist", "torch==2.13.0", "transformers>=5", "ruff",
             *PORTABLE],
  },
)

"""What a served model is, below both workloads' exports: the SavedModel's signatures, the
model on ids that LiteRT and ONNX convert (with its tokenizer.json), a run's trained model, and
how an export is checked against its Keras model. The formats that write them, and the
`python -m bert_tf.export` command, are in `bert_tf/export/`, above fine-tuning."""

"""The FLOPs of training a BERT on one sequence: what model-FLOPs utilisation is measured
against, by train.py (`--peak_tflops`) and benchmarks/train_step.py alike."""


def model_flops_per_sequence(config, seq_length: int, predictions: int) -> float:
  """Training FLOPs of one sequence (forward + backward = 3 x forward): 6 x parameters x tokens
  for the encoder's matrices, attention's two S x S products, and the vocabulary projection
  (tied embedding) at the masked positions only, as the model computes it. Every position is
  counted, padding too: the model computes them all."""
  hidden, layers = config.hidden_size, config.num_hidden_layers
  encoder_params = layers * (4 * hidden * hidden + 2 * hidden * config.intermediate_size)
  attention = layers * 2 * 2 * seq_length * seq_length * hidden  # forward: QK^T and PV
  head = predictions * (2 * hidden * hidden + 2 * hidden * config.vocab_size)
  pooler_nsp = 2 * hidden * hidden
  return 6 * encoder_params * seq_length + 3 * (attention + head + pooler_nsp)

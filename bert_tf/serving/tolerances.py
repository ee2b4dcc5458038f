"""How far an export's outputs may be from the Keras model's, for the formats that take raw
text (each format's `tolerance`; the formats on ids have one per quantization,
`portable_comparison.TOLERANCES`). No TensorFlow import: the format modules read these."""

# Largest difference allowed between an export's outputs and the Keras model's. Each output's
# difference is its largest absolute one, divided by the output's largest magnitude when that
# is above 1 (MLM logits), so that it measures float32 rounding at any scale.
# A SavedModel: the same TensorFlow kernels, in another order of summation once the graph is
# optimised.
SAVEDMODEL_TOLERANCE = 1e-4
# A Hugging Face directory: torch's kernels (and transformers' erf GELU) sum in another order
# than TensorFlow's; without transformers, numpy's in float64.
HUGGINGFACE_TOLERANCE = 1e-4
# A keras-hub preset: its BertBackbone computes GELU with the tanh approximation, ours with erf
# (about 1e-3 apart on a small model): an export with wrong weights is far outside.
KERAS_HUB_TOLERANCE = 2e-2

"""Moving weights in and out: Hugging Face, original BERT (TF1) checkpoints, keras-hub presets.

Every format is converted through one canonical form: Hugging Face `BertForPreTraining`'s
parameter names and layouts, as numpy arrays (`state`). NSP classes follow that format's
convention (0 = IsNext) in `state`; this project's model uses 1 = IsNext, so the two rows are
swapped on the way in and out (docs/design.md#exports-and-interop).
"""

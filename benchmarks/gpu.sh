#!/usr/bin/env bash
# BERT-base and BERT-large training throughput on one GPU, bf16 with XLA, and model-FLOPs
# utilisation, with bert_tf's own training step (benchmarks/train_step.py):
#
#   bash benchmarks/gpu.sh                 # on a GPU machine, from the repository root
#
# Installs the project with tensorflow[and-cuda] into a virtual environment first (skipped if
# VENV already has it). PEAK_TFLOPS is the GPU's dense bf16 peak: 989 for an H100/H200 SXM,
# 312 for an A100. RUNS overrides the measured "config:sequence:batch" list (for a quick look
# on a CPU: RUNS="bert_tiny:128:8" PEAK_TFLOPS=0.16 STEPS=3 WARMUP=2 PRECISION=none XLA=
# bash benchmarks/gpu.sh).
set -euo pipefail
VENV=${VENV:-.venv-gpu}
PEAK_TFLOPS=${PEAK_TFLOPS:-989}
RUNS=${RUNS:-"bert_base:128:256 bert_base:512:64 bert_large:128:128 bert_large:512:32"}
STEPS=${STEPS:-50}
WARMUP=${WARMUP:-10}
PRECISION=${PRECISION-bf16}
XLA=${XLA---jit_compile}

if [ ! -x "$VENV/bin/python" ]; then
  python3.11 -m venv "$VENV"
  "$VENV/bin/pip" install -q "tensorflow[and-cuda]~=2.21.0" -e .
fi
"$VENV/bin/python" -c "import tensorflow as tf; print('devices:', tf.config.list_physical_devices())"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || true
for run in $RUNS; do
  IFS=: read -r config seq batch <<< "$run"
  "$VENV/bin/python" benchmarks/train_step.py --contenders=bert_tf --config="$config" \
    --seq_length="$seq" --batch_size="$batch" --mixed_precision="$PRECISION" $XLA \
    --steps="$STEPS" --warmup="$WARMUP" --peak_tflops="$PEAK_TFLOPS"
done

#!/usr/bin/env bash
# Single-GPU compute: the simulator's predictions from a profile that
# `ddpsim calibrate --backend nccl` measured on a GPU, against real PyTorch
# training steps (bench/pytorch/gpu_step.py) of the same models on that GPU:
# ResNet-50 (batch 64, 128, 256) and BERT-large (16 and 32 sequences of 512
# tokens) in fp32, tf32 and bf16 autocast (scenarios/h200-1gpu.cfg). Prints
# each point's error, the MAPE and the worst point, over all points and over
# those the compute model's constants were not fitted on (bench/gpu_compare.py,
# docs/compute-model.md).
#
#   bash bench/validate-gpu.sh [BUILD_DIR] [OUT_DIR]
#       no GPU needed: the shipped H200 profile (scenarios/profiles/
#       h200-1gpu.cfg) against the steps measured on that H200
#       (bench/data/h200-gpu-steps.csv)
#   MEASURE=1 bash bench/validate-gpu.sh [BUILD_DIR] [OUT_DIR]
#       on a GPU machine with PyTorch, torchvision and transformers:
#       calibrates this GPU, measures the steps, compares those
#       (BUILD_DIR may be a bundle of scripts/gpu-check.sh --bundle; CUDA's
#       libraries and NCCL must then be on LD_LIBRARY_PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-$(mktemp -d)}
DD=$BUILD/ddpsim
if [ ! -x "$DD" ] && [ -x "$BUILD/bin/ddpsim" ]; then
  # A bundle of scripts/gpu-check.sh --bundle: its libraries beside it.
  DD=$BUILD/bin/ddpsim
  export LD_LIBRARY_PATH=$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
[ -x "$DD" ] || { echo "validate-gpu: no ddpsim in $BUILD (build it first: see README)" >&2; exit 2; }
mkdir -p "$OUT"
PROFILE=scenarios/profiles/h200-1gpu.cfg
MEASURED=bench/data/h200-gpu-steps.csv
if [ "${MEASURE:-0}" = 1 ]; then
  echo "== calibrating this GPU (ddpsim calibrate --backend nccl --quick)"
  "$DD" launch --nproc 1 -- "$DD" calibrate --backend nccl --quick --progress off --out "$OUT/profile.cfg"
  echo "== measuring PyTorch training steps (bench/pytorch/gpu_step.py)"
  python3 bench/pytorch/gpu_step.py --out "$OUT/steps.csv" --ops "$OUT/ops.csv"
  PROFILE=$OUT/profile.cfg MEASURED=$OUT/steps.csv
fi
echo "== predicting with $PROFILE"
"$DD" simulate scenarios/h200-1gpu.cfg --profile "$PROFILE" -o "$OUT" > "$OUT/simulate.log"
echo "== predicted against measured ($MEASURED)"
python3 bench/gpu_compare.py "$OUT/h200-1gpu.csv" "$MEASURED"

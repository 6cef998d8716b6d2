#!/usr/bin/env bash
# Install PyTorch from PyPI into bench/.venv, for the PyTorch DDP comparison
# benchmark only: PyTorch is not a dependency of ddpsim. PyPI's Linux wheels
# carry CUDA libraries as dependencies (several GB); the benchmark uses only
# the CPU and the Gloo backend.
#
#   bash bench/pytorch/setup.sh        # prints the python to use
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  "$VENV/bin/pip" install -q --upgrade pip >/dev/null
  "$VENV/bin/pip" install -q torch numpy
fi
"$VENV/bin/python" -c "import torch, torch.distributed as d; assert d.is_gloo_available(); print(torch.__version__)" >&2
echo "$(pwd)/$VENV/bin/python"

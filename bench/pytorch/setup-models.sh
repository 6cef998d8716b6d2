#!/usr/bin/env bash
# bench/pytorch/setup.sh plus torchvision and HuggingFace transformers, for
# benchmarks that build real models (bench/pytorch/buckets.py). Models are
# built from their configurations with random weights: nothing is downloaded
# but these PyPI packages.
#
#   bash bench/pytorch/setup-models.sh   # prints the python to use
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash pytorch/setup.sh)
if ! "$PY" -c "import torchvision, transformers" 2>/dev/null; then
  # torchvision pins the torch it was built for: name torch beside it so
  # pip keeps the two matched.
  "$PY" -m pip install -q torch torchvision transformers
fi
"$PY" -c "import torch, torchvision, transformers as t; print('torch', torch.__version__, 'torchvision', torchvision.__version__, 'transformers', t.__version__)" >&2
echo "$PY"

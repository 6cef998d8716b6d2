#!/usr/bin/env bash
# Set up, build with AddressSanitizer + UndefinedBehaviorSanitizer and
# warnings as errors, and run every test through ctest.
#
#   bash scripts/run-tests.sh [ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build-asan -DDDPSIM_SANITIZE=ON -DDDPSIM_WERROR=ON
cd build-asan
ctest --output-on-failure --timeout 900 "$@"

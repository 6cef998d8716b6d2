#!/usr/bin/env bash
# The main job: set up, build, and run the shipped what-if study on the
# shipped profile, writing results/ (CSV, trace, plots).
#
#   bash scripts/run-main.sh [RESULTS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results}
bash scripts/setup.sh build
mkdir -p "$OUT"
./build/ddpsim simulate scenarios/gigabit-vs-ib.cfg -o "$OUT" --trace "$OUT/gigabit-vs-ib-trace.json" --plot

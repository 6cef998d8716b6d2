#!/usr/bin/env bash
# The main job: set up and build; calibrate this machine (two ranks over
# loopback, Gloo); run the what-if study of a cluster of such machines on
# that profile; run the shipped GPU studies on their datasheet-derived
# profiles; advise on what to rent for scenarios/plan.cfg; draw every plot. Everything lands in RESULTS_DIR (default results/).
#
#   bash scripts/run-main.sh [RESULTS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results}
bash scripts/setup.sh build
mkdir -p "$OUT"
DD=./build/ddpsim

echo "== 1. calibrating this machine (2 ranks on loopback, --quick)"
"$DD" launch --nproc 2 -- "$DD" calibrate --quick --out "$OUT/this-machine.cfg" --scratch "$OUT" \
  --model scenarios/models/mlp.cfg
"$DD" plot fit "$OUT/this-machine.cfg" -o "$OUT"

echo "== 2. a cluster of machines like this one, on that profile"
"$DD" simulate scenarios/this-machine.cfg --profile "$OUT/this-machine.cfg" -o "$OUT" --plot

echo "== 3. the shipped studies on datasheet-derived GPU profiles"
"$DD" simulate scenarios/gigabit-vs-ib.cfg -o "$OUT" --trace "$OUT/gigabit-vs-ib-trace.json" --plot
"$DD" simulate scenarios/compression.cfg -o "$OUT" -q --plot
"$DD" simulate scenarios/node-failure.cfg -o "$OUT" --plot

"$DD" simulate scenarios/fabric.cfg -o "$OUT" -q --plot

echo "== 4. what to rent: GPT-2 XL on a trillion tokens, cheapest within a day, at cloud list prices"
"$DD" advise scenarios/plan.cfg -o "$OUT"

echo "== 5. which GPU: the same jobs on every shipped GPU profile, fp32 / tf32 / bf16 autocast"
bash scripts/which-gpu.sh build "$OUT"

echo "results, plots and traces are in $OUT/"

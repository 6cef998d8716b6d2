#!/usr/bin/env bash
# startup — how long ddpsim takes to start and how much memory it holds
# doing little: the median of RUNS runs (default 20) of wall time and peak
# resident memory of `ddpsim --version` and of a small simulation
# (`ddpsim simulate scenarios/gigabit-vs-ib.cfg -o DIR -q`, 112 points), with
# the shared libraries the binary names (DT_NEEDED). Use a release build:
#
#   bash scripts/setup.sh build && bash bench/startup.sh [BUILD_DIR] [RUNS]
#
# Figures: bench/bench_startup (wait4's rusage of each run, so the peak
# memory is the command's own).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RUNS=${2:-20}
BIN=$BUILD/ddpsim
HARNESS=$BUILD/bench/bench_startup
for f in "$BIN" "$HARNESS"; do
  [ -x "$f" ] || { echo "startup: $f is missing: build first (bash scripts/setup.sh $BUILD)" >&2; exit 2; }
done
OUTDIR=$(mktemp -d)
trap 'rm -rf "$OUTDIR"' EXIT

echo "ddpsim start-up: $BIN ($(uname -m), $(nproc) CPUs), median of $RUNS runs"
echo "  DT_NEEDED: $(readelf -d "$BIN" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | paste -sd' ')"
"$HARNESS" "$RUNS" "--version" "$BIN" --version
"$HARNESS" "$RUNS" "simulate gigabit-vs-ib -q" "$BIN" simulate scenarios/gigabit-vs-ib.cfg \
  -o "$OUTDIR" -q

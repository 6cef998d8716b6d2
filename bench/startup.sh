#!/usr/bin/env bash
# startup — how long ddpsim takes to start and how much memory it holds
# doing little: the median of RUNS runs (default 20) of wall time and peak
# resident memory of `ddpsim --version`, of a small simulation (`ddpsim
# simulate scenarios/gigabit-vs-ib.cfg -o DIR -q`, 112 points) and of one
# point of it, with the shared libraries the binary names (DT_NEEDED). Use a
# release build:
#
#   bash scripts/setup.sh build && bash bench/startup.sh [BUILD_DIR] [RUNS]
#
# Figures: bench/bench_startup (wait4's rusage of each run, so CPU time and
# peak memory are the command's own; on a shared machine the CPU time is the
# steadier figure).
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
# One point of that study: what a simulation costs beyond start-up.
cat > "$OUTDIR/one-point.cfg" <<EOF
name = "one-point";
profile = "$PWD/scenarios/profiles/dgx-a100.cfg";
model = "$PWD/scenarios/models/resnet50.cfg";
training = { batch = 32; precision = "amp_bf16"; optimizer = "sgd_momentum"; };
cluster = { nodes = 8; devices_per_node = 8; };
networks = ( { name = "IB-HDR"; gbps = 200.0; latency_us = 14.0; nics_per_node = 8;
               efficiency = 0.96; } );
ddp = { backend = "nccl"; };
simulation = { steps = 10; seed = 1; };
EOF
"$HARNESS" "$RUNS" "simulate one point -q" "$BIN" simulate "$OUTDIR/one-point.cfg" -o "$OUTDIR" -q

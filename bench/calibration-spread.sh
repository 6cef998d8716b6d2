#!/usr/bin/env bash
# How reproducible is a calibration? Calibrates N times in a row on two
# testbed hosts (one rank each, the compression benchmark's setting) at each
# rate given, predicts the MLP's step with every communication hook from each
# profile, and prints how far the predictions move and which part of the
# profile moves them (bench/profile_spread.py). A prediction cannot be
# better than its calibration is repeatable: on this project's 2-vCPU VM the
# same point's predictions from calibrations minutes apart once differed by
# 24% (median over the compression benchmark's points). Needs root.
#
#   [N=4] [RATES="none 1gbit"] bash bench/calibration-spread.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-$(mktemp -d)}
N=${N:-4}
RATES=${RATES:-"none 1gbit"}
NAME=valsp
MODEL=mlp
DD=$(realpath "$BUILD/ddpsim")
source bench/steal.sh
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
trap 'bash scripts/testbed.sh down --name $NAME >/dev/null 2>&1 || true' EXIT
for rate in $RATES; do
  bash scripts/testbed.sh up 2 --rate "$rate" --name $NAME >/dev/null 2>&1
  args=""
  [ "$rate" = 1gbit ] && args="--link-gbps 1"
  profiles=()
  for i in $(seq "$N"); do
    steal_wait
    s0=$(steal_snap)
    t0=$(date +%s.%N)
    "$DD" launch -q --nproc 2 --hosts $NAME-h1,$NAME-h2 -- "$DD" calibrate $args --model scenarios/models/$MODEL.cfg \
      --out "$OUT/profile-$rate-$i.cfg" --scratch "$OUT" --progress off
    echo "  $rate calibration $i: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s," \
      "CPU time stolen $(steal_frac "$s0")"
    profiles+=("$OUT/profile-$rate-$i.cfg")
  done
  echo "== $rate: $N calibrations, step time predicted from each (2 x 1 ranks, $MODEL, batch 32)"
  python3 bench/profile_spread.py "$DD" "$OUT" $MODEL none,fp16,bf16,powersgd:1,powersgd:4 "${profiles[@]}"
done

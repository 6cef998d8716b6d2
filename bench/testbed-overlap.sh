#!/usr/bin/env bash
# The MLP on 2 testbed hosts at 1gbit, one rank each: step time with overlap
# vs without, and the share of communication hidden behind backward
# (hidden = 1 - exposed / comm). Needs root.
#
#   bash bench/testbed-overlap.sh [BUILD_DIR] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
STEPS=${2:-25}
NAME=benchov
OUT=$(mktemp -d)
trap 'bash scripts/testbed.sh down --name $NAME >/dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
bash scripts/testbed.sh up 2 --rate 1gbit --name $NAME >/dev/null
for ov in on off; do
  "$BUILD/ddpsim" launch -q --nproc 2 --hosts $NAME-h1,$NAME-h2 -- \
    "$BUILD/ddpsim" train --model scenarios/models/mlp.cfg --steps "$STEPS" --overlap $ov -o "$OUT/$ov" >/dev/null
done
python3 bench/steps_summary.py --skip 3 "overlap-on=$OUT/on/steps.csv" "overlap-off=$OUT/off/steps.csv"

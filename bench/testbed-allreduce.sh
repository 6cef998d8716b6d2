#!/usr/bin/env bash
# Allreduce bus bandwidth of the Gloo backend on the network testbed, links
# shaped to a rate, 2 and 4 hosts, one rank each, divided by the line rate
# (goal: >= 0.9 at 1gbit with 64 MiB). Needs root.
#
#   bash bench/testbed-allreduce.sh [BUILD_DIR] [RATE_GBIT] [MIB]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
GBIT=${2:-1}
MIB=${3:-64}
NAME=benchar
trap 'bash scripts/testbed.sh down --name $NAME >/dev/null 2>&1 || true' EXIT
for K in 2 4; do
  bash scripts/testbed.sh up "$K" --rate "${GBIT}gbit" --name $NAME >/dev/null
  hosts=$(seq -s, -f "$NAME-h%g" 1 "$K")
  echo "== $K hosts, links at ${GBIT}gbit"
  "$BUILD/ddpsim" launch --nproc "$K" --hosts "$hosts" -- \
    "$BUILD/bench/bench_allreduce" --line-gbps "$GBIT" --mib "$MIB" --all-algorithms
done

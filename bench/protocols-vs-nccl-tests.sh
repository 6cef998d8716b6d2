#!/usr/bin/env bash
# `ddpsim collective` on the shipped datasheet profiles against published
# nccl-tests all_reduce_perf rows (out-of-place time) at small, medium and
# large sizes, where NCCL runs its LL, LL128 and Simple protocols in turn.
# Each row: the source, the shape, the size, the published time, ddpsim's
# (and BASE's, when BASE names another ddpsim, for a before/after), and
# predicted / published. The sources, each a GitHub thread with its table:
#   DeepEP#303   https://github.com/deepseek-ai/DeepEP/issues/303
#                8x H20 in one node (NVLink 4 through NVSwitch, as a DGX H100)
#   Mooncake#3484 https://github.com/kvcache-ai/Mooncake/pull/3484
#                8x H20 in one node: the thread's first table, read here as
#                its plain-NCCL baseline (nccl-tests 2.19.7, NCCL 2.30.4)
#   nccl#583     https://github.com/NVIDIA/nccl/issues/583
#                2x A100-SXM4-40GB in one node (nGpus 2)
#   tests#119    https://github.com/NVIDIA/nccl-tests/issues/119
#                3 nodes of 8x A100-SXM4-40GB, 4x HDR 200 Gb/s each
#
#   bash bench/protocols-vs-nccl-tests.sh            # DDPSIM=build/ddpsim
#   BASE=/tmp/ddpsim-base bash bench/protocols-vs-nccl-tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DD=${DDPSIM:-./build/ddpsim}
BASE=${BASE:-}
H100=scenarios/profiles/dgx-h100.cfg
A100=scenarios/profiles/dgx-a100-40gb.cfg
HDR4='gbps = 200.0; latency_us = 14.0; nics_per_node = 4; efficiency = 0.96;'

# BIN PROFILE GPUS NODES NETWORK SIZE: the predicted time in us.
predict() {
  local net=()
  [ -n "$5" ] && net=(--network "$5")
  "$1" collective --profile "$2" -g "$3" --nodes "$4" "${net[@]}" -b "$6" -e "$6" | awk '!/^#/ && NF { print $6 }'
}

printf '%-13s %-12s %10s %10s %10s' source shape bytes published ddpsim
[ -n "$BASE" ] && printf ' %10s' base
printf ' %7s\n' ratio
# source profile gpus nodes network bytes published_us
while IFS='|' read -r src prof g n net size meas; do
  t=$(predict "$DD" "$prof" "$g" "$n" "$net" "$size")
  printf '%-13s %-12s %10s %10s %10s' "$src" "${n}x${g} $(basename "$prof" .cfg | sed 's/dgx-//')" "$size" "$meas" "$t"
  [ -n "$BASE" ] && printf ' %10s' "$(predict "$BASE" "$prof" "$g" "$n" "$net" "$size")"
  printf ' %7.2f\n' "$(echo "$t / $meas" | bc -l)"
done <<ROWS
DeepEP#303|$H100|8|1||8|12.49
DeepEP#303|$H100|8|1||1024|16.38
DeepEP#303|$H100|8|1||4096|16.69
Mooncake#3484|$H100|8|1||1048576|27.76
Mooncake#3484|$H100|8|1||33554432|195.40
nccl#583|$A100|2|1||32|10.14
tests#119|$A100|8|3|$HDR4|133169160|2666.0
ROWS

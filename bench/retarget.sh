#!/usr/bin/env bash
# Retargeting real GPU traces: each trace imported with
# `ddpsim import torch-trace --scenario`, its traced job simulated on its own
# GPU (the self-replay of bench/trace-replay.sh) and on the other GPU of the
# traces at hand (`ddpsim simulate --profile`): the V100 jobs on an A100
# (scenarios/profiles/dgx-a100-40gb.cfg, the traces' A100 being a 40 GB
# board) in fp32 as traced and in tf32, the A100 jobs on a V100
# (scenarios/profiles/dgx1-v100.cfg) in fp32, the V100 having no TF32. Prints
# each trace's median step, its self-replay, the retargeted step, and how its
# device time split by what bounds its kernels (compute, memory, launch).
#
#   bash bench/retarget.sh [BUILD_DIR] [TRACE.json.gz...]
#
# Without traces, those of ../shared/traces (development data, not in the
# repository) when present. BUILD_DIR defaults to build.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift || true
DD=$BUILD/ddpsim
[ -x "$DD" ] || { echo "no $DD: build first (bash scripts/setup.sh $BUILD)" >&2; exit 2; }
traces=("$@")
if [ ${#traces[@]} -eq 0 ]; then
  for t in ../shared/traces/*.json.gz; do [ -e "$t" ] && traces+=("$t"); done
fi
[ ${#traces[@]} -gt 0 ] || { echo "no traces given and none in ../shared/traces" >&2; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

step_ms() { # CSV -> step of its first row in ms
  python3 -c "import csv,sys; r=next(csv.DictReader(open(sys.argv[1]))); print('%.3f' % (float(r['step_s'])*1e3))" "$1"
}
# SCENARIO PROFILE PRECISION OUT -> step ms, the scenario's precision replaced
simulate_on() {
  sed "s/precision = \"[a-z0-9_]*\"/precision = \"$3\"/" "$1" >"$4.cfg"
  "$DD" simulate "$4.cfg" ${2:+--profile "$2"} -o "$4" -q >/dev/null
  step_ms "$(ls "$4"/*.csv | head -1)"
}

printf '%-21s %-6s %-6s %9s %9s  %-14s %-6s %9s %8s\n' trace GPU prec "traced ms" "self ms" "on" prec "step ms" "x self"
for t in "${traces[@]}"; do
  name=$(basename "$t" .json.gz)
  name=${name%.json}
  # --batch 32 only for a trace that records no shapes to read it from
  if ! "$DD" import torch-trace -o "$W/$name.cfg" --scenario "$W/$name-job.cfg" "$t" >"$W/$name.notes" 2>&1 &&
    ! { grep -q "records no shapes" "$W/$name.notes" &&
      "$DD" import torch-trace --batch 32 -o "$W/$name.cfg" --scenario "$W/$name-job.cfg" "$t" >"$W/$name.notes" 2>&1; }; then
    printf '%-21s import failed: %s\n' "$name" "$(tail -1 "$W/$name.notes")"
    continue
  fi
  prec=$(sed -n 's/^ *precision = "\(.*\)";/\1/p' "$W/$name.cfg" | head -1)
  traced=$(sed -n 's/^ *step_ms = \(.*\);/\1/p' "$W/$name.cfg" | head -1)
  self=$(simulate_on "$W/$name-job.cfg" "" "$prec" "$W/self-$name")
  case "$name" in
    v100*) src=V100; targets="dgx-a100-40gb.cfg:fp32 dgx-a100-40gb.cfg:tf32" ;;
    a100*) src=A100; targets="dgx1-v100.cfg:fp32" ;;
    *) continue ;;
  esac
  for tp in $targets; do
    prof=${tp%%:*} p=${tp##*:}
    out=$(simulate_on "$W/$name-job.cfg" "scenarios/profiles/$prof" "$p" "$W/on-$name-$p")
    printf '%-21s %-6s %-6s %9.3f %9.3f  %-14s %-6s %9.3f %7.2fx\n' "$name" "$src" "$prec" "$traced" "$self" \
      "${prof%.cfg}" "$p" "$out" "$(python3 -c "print($out/$self)")"
  done
done
echo
echo "each trace's step as imported (host dispatch against compute stream; the stream's time by class):"
for t in "${traces[@]}"; do
  name=$(basename "$t" .json.gz)
  name=${name%.json}
  [ -f "$W/$name.notes" ] || continue
  echo "  $name:"
  grep -E '^(a step|kernels):' "$W/$name.notes" | sed 's/; roofs.*//; s/^/    /'
done

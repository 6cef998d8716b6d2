#!/usr/bin/env bash
# Self-replay of real GPU traces: each trace imported with
# `ddpsim import torch-trace --scenario`, the traced job simulated as it
# stands, and its predicted step against the trace's median ProfilerStep span
# (every step, warm-up included, as the trace recorded them). Also prints the
# importer's pieces summed against the measured spans of forward, backward and
# what follows, and a what-if of each job on twice the GPUs (the DDP traces).
#
#   bash bench/trace-replay.sh [BUILD_DIR] [TRACE.json.gz | DIR...]
#
# A DIR stands for its *.json.gz. Without traces, those of ../shared/traces
# (development data, not in the repository) when present. BUILD_DIR defaults
# to build (or a bundle of scripts/gpu-check.sh --bundle).
#   TRACE_BATCH=B  the batch per GPU the traces were taken at; default: the
#                  importer's, from the first layer's recorded shape, and 32
#                  for a trace that records none (the importer refuses a
#                  --batch its shapes contradict)
#   TRACE_CSV=F    also write each trace's figures to F: trace, device, ranks,
#                  median and replayed step (ms), their error and the pieces'
#                  medians against the measured spans (%), and a status
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift || true
DD=$BUILD/ddpsim
if [ ! -x "$DD" ] && [ -x "$BUILD/bin/ddpsim" ]; then
  DD=$BUILD/bin/ddpsim
  export LD_LIBRARY_PATH=$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
[ -x "$DD" ] || { echo "no $DD: build first (bash scripts/setup.sh $BUILD)" >&2; exit 2; }
traces=()
for a in "$@"; do
  if [ -d "$a" ]; then
    for t in "$a"/*.json.gz; do [ -e "$t" ] && traces+=("$t"); done
  else
    traces+=("$a")
  fi
done
if [ $# -eq 0 ]; then
  for t in ../shared/traces/*.json.gz; do [ -e "$t" ] && traces+=("$t"); done
fi
[ ${#traces[@]} -gt 0 ] || { echo "no traces given (or none in the folders given) and none in ../shared/traces" >&2; exit 2; }
BATCH=()
[ -n "${TRACE_BATCH-}" ] && BATCH=(--batch "$TRACE_BATCH")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
CSV=$W/figures.csv
echo "trace,device,ranks,median_ms,replay_ms,error_pct,forward_pct,backward_pct,after_pct,status" >"$CSV"
span_pct() { # NOTES PART -> the pieces' median against the measured span, in %
  sed -n "s/^  $2 *pieces .*measured span .*(\([-+0-9.]*\)%;.*/\1/p" "$1" | head -1
}

median_step() { # TRACE -> median ProfilerStep span in ms
  python3 - "$1" <<'EOF'
import gzip, json, statistics, sys
p = sys.argv[1]
d = json.load(gzip.open(p) if p.endswith(".gz") else open(p))
ev = d["traceEvents"] if isinstance(d, dict) else d
print(statistics.median(e["dur"] for e in ev if e.get("cat") == "user_annotation"
                        and str(e.get("name", "")).startswith("ProfilerStep#")) / 1e3)
EOF
}

printf '%-24s %-26s %5s %11s %11s %8s\n' trace device ranks "median ms" "replay ms" error
for t in "${traces[@]}"; do
  name=$(basename "$t" .json.gz)
  name=${name%.json}
  if ! "$DD" import torch-trace "${BATCH[@]}" -o "$W/$name.cfg" --scenario "$W/$name-job.cfg" "$t" \
      >"$W/$name.notes" 2>&1 && ! { [ ${#BATCH[@]} -eq 0 ] && grep -q "records no shapes" "$W/$name.notes" &&
    "$DD" import torch-trace --batch 32 -o "$W/$name.cfg" --scenario "$W/$name-job.cfg" "$t" >"$W/$name.notes" 2>&1; }; then
    printf '%-24s import failed: %s\n' "$name" "$(tail -1 "$W/$name.notes")"
    echo "$name,,,,,,,,,import failed" >>"$CSV"
    continue
  fi
  "$DD" simulate "$W/$name-job.cfg" -o "$W/out-$name" -q >/dev/null
  pred=$(python3 -c "import csv,sys; r=next(csv.DictReader(open(sys.argv[1]))); print(float(r['step_s'])*1e3)" \
         "$W/out-$name/$name-job.csv")
  meas=$(median_step "$t")
  dev=$(sed -n 's/^ *device = "\(.*\)";/\1/p' "$W/$name.cfg" | head -1)
  ranks=$(sed -n 's/^ *world_size = \([0-9]*\);/\1/p' "$W/$name.cfg" | head -1)
  err=$(python3 -c "print('%+.3f' % (100*($pred-$meas)/$meas))")
  printf '%-24s %-26s %5s %11.3f %11.3f %+7.2f%%\n' "$name" "${dev:0:26}" "$ranks" "$meas" "$pred" "$err"
  printf '%s,"%s",%s,%.3f,%.3f,%s,%s,%s,%s,ok\n' "$name" "$dev" "$ranks" "$meas" "$pred" "$err" \
    "$(span_pct "$W/$name.notes" 'forward (to backward)')" "$(span_pct "$W/$name.notes" backward)" \
    "$(span_pct "$W/$name.notes" 'after backward')" >>"$CSV"
done
if [ -n "${TRACE_CSV:-}" ]; then
  cp "$CSV" "$TRACE_CSV.tmp" && mv "$TRACE_CSV.tmp" "$TRACE_CSV"
fi

echo
echo "pieces summed against the measured spans (medians over the steps used):"
for t in "${traces[@]}"; do
  name=$(basename "$t" .json.gz)
  name=${name%.json}
  [ -f "$W/$name.notes" ] || continue
  echo "  $name: $(grep -m1 '^steps:' "$W/$name.notes")"
  grep -E '^  (forward|backward|after)' "$W/$name.notes" | sed 's/^/  /'
done

echo
echo "what-if: the same job on twice the GPUs of its host (DDP traces with a world of 2 or more):"
for t in "${traces[@]}"; do
  name=$(basename "$t" .json.gz)
  name=${name%.json}
  [ -f "$W/$name-job.cfg" ] || continue
  grep -q 'ddp = true' "$W/$name.cfg" || continue
  per=$(sed -n 's/^cluster = { nodes = 1; devices_per_node = \([0-9]*\); };/\1/p' "$W/$name-job.cfg")
  host=$(sed -n 's/^ *host_devices = \([0-9]*\);/\1/p' "$W/$name.cfg" | head -1)
  [ -n "$per" ] && [ "$per" -ge 2 ] && [ $((per * 2)) -le "${host:-0}" ] || continue
  sed "s/devices_per_node = $per;/devices_per_node = [$per, $((per * 2))];/" "$W/$name-job.cfg" >"$W/$name-x2.cfg"
  "$DD" simulate "$W/$name-x2.cfg" -o "$W/x2-$name" 2>&1 | sed -n '2,4p' | sed 's/^/  /'
done

#!/usr/bin/env bash
# Real models' GPU traces and the importer's checks on them: ResNet-50,
# BERT-large and GPT-2 small, each without DDP and under DDP (world size 1,
# NCCL), profiled by bench/pytorch/gpu_traces.py, then each trace
# (a) imported with `ddpsim import torch-trace --scenario`, its traced job
#     simulated, against the trace's median ProfilerStep span (the goal:
#     within 3%, then 2%), and
# (b) the importer's pieces summed against the trace's measured spans of
#     forward, backward and what follows (within 2%),
# both through bench/trace-replay.sh. Prints one line per trace and writes
# the figures to OUT_DIR/figures.csv (OUT_DIR defaults to a new temporary
# folder).
#
#   bash bench/gpu-traces.sh [BUILD_DIR] [OUT_DIR]
#       the checks on the traces bench/data/traces holds (none: it says so
#       and exits 0), or GPU_TRACES_DIR's; TRACE_BATCH=B imports them at
#       batch B (default: the batch their recorded shapes give)
#   MEASURE=1 bash bench/gpu-traces.sh [BUILD_DIR] [OUT_DIR]
#       on a GPU machine with PyTorch, torchvision and transformers (python3's,
#       else bench/.venv's, installed by bench/pytorch/setup-models.sh):
#       profiles the six runs into OUT_DIR/traces, copies them to
#       bench/data/traces, and checks them; MEASURE_TIMEOUT=S stops the
#       profiling after S seconds and checks the traces written by then;
#       GPU_TRACES_ARGS adds options of gpu_traces.py (e.g. "--precision
#       amp_bf16" or "--models resnet50")
#   SMOKE=1 bash bench/gpu-traces.sh [BUILD_DIR] [OUT_DIR]
#       no GPU needed: the same script on the CPU (gloo) at tiny sizes, two
#       steps each, into OUT_DIR/traces, with its checks of the files
#       (gzip, ProfilerStep spans, shapes, distributedInfo); a CPU trace has
#       no kernels to replay, so (a) and (b) are left out
#
# BUILD_DIR may be a bundle of scripts/gpu-check.sh --bundle; without a
# ddpsim there the traces are profiled and their files checked, and the
# rest is left for a run without MEASURE=1 where one is built. Exits 1 when
# a trace fails its checks or its import, 0 otherwise (figures beyond the
# goals are marked, not failed).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-$(mktemp -d)}
STORE=bench/data/traces
mkdir -p "$OUT"

python_with_torch() { # the python that has torch, torchvision and transformers
  if python3 -c "import torch, torchvision, transformers" 2>/dev/null; then echo python3
  else bash bench/pytorch/setup-models.sh; fi
}

measure() { # DEVICE ARGS...: profiles into $OUT/traces
  local py rc=0
  py=$(python_with_torch)
  rm -rf "$OUT/traces" && mkdir -p "$OUT/traces"
  # shellcheck disable=SC2086  # GPU_TRACES_ARGS is a list of options
  timeout "${MEASURE_TIMEOUT:-0}" "$py" bench/pytorch/gpu_traces.py --no-check --out "$OUT/traces" --device "$@" \
    ${GPU_TRACES_ARGS:-} || rc=$?
  [ $rc = 124 ] && echo "gpu-traces: profiling stopped after ${MEASURE_TIMEOUT}s; checking the traces written by then"
  [ $rc = 0 ] || [ $rc = 124 ] || echo "gpu-traces: gpu_traces.py exited $rc; checking the traces it wrote"
}

if [ "${SMOKE:-0}" = 1 ]; then
  echo "== smoke run on the CPU (bench/pytorch/gpu_traces.py --device cpu, tiny sizes)"
  measure cpu --resnet-batch 2 --image 64 --bert-batch 1 --gpt2-batch 1 --seq 16 --warmup 1 --steps 2
  TRACES=$OUT/traces
elif [ "${MEASURE:-0}" = 1 ]; then
  echo "== profiling on this GPU (bench/pytorch/gpu_traces.py)"
  measure cuda
  TRACES=$OUT/traces
else
  TRACES=${GPU_TRACES_DIR:-$STORE}
fi

traces=()
for t in "$TRACES"/*.json.gz; do [ -e "$t" ] && traces+=("$t"); done
if [ ${#traces[@]} -eq 0 ]; then
  if [ "$TRACES" = "$OUT/traces" ]; then
    echo "gpu-traces: FAIL: the profiling wrote no trace (see its messages above)"
    exit 1
  fi
  echo "gpu-traces: no traces in $TRACES, nothing checked (MEASURE=1 on a GPU machine profiles them;"
  echo "SMOKE=1 tries the profiling on the CPU)"
  exit 0
fi

echo "== the files (gpu_traces.py --check)"
CRC=0
python3 bench/pytorch/gpu_traces.py --check "${traces[@]}" | tee "$OUT/files.txt" || CRC=1
if [ "${SMOKE:-0}" = 1 ]; then
  echo "gpu-traces: CPU traces hold no GPU work to replay: the self-replay and span checks need MEASURE=1 on a GPU"
  exit $CRC
fi
if [ "${MEASURE:-0}" = 1 ]; then
  mkdir -p "$STORE"
  cp "${traces[@]}" "$STORE/"
  echo "gpu-traces: copied ${#traces[@]} trace(s) to $STORE"
fi

if [ ! -x "$BUILD/ddpsim" ] && [ ! -x "$BUILD/bin/ddpsim" ]; then
  echo "gpu-traces: no ddpsim in $BUILD: the self-replay and span checks are left for a run where one is built"
  exit $CRC
fi
echo "== self-replay and the pieces against the spans (bench/trace-replay.sh)"
TRACE_BATCH=${TRACE_BATCH-} TRACE_CSV=$OUT/figures.csv bash bench/trace-replay.sh "$BUILD" "${traces[@]}" \
  >"$OUT/trace-replay.txt" 2>&1 || { cat "$OUT/trace-replay.txt"; exit 1; }
echo "goals: (a) self-replay within 3% (then 2%), (b) pieces against the measured spans within 2%"
python3 - "$OUT/figures.csv" <<'EOF' || CRC=1
import csv, sys
bad = 0
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] != "ok":
        print("%-28s %s" % (r["trace"], r["status"]))
        bad += 1
        continue
    err = float(r["error_pct"])
    spans = [(k, float(r[k + "_pct"])) for k in ("forward", "backward", "after") if r[k + "_pct"]]
    worst = max((abs(v) for _, v in spans), default=0.0)
    goal_a = "within 2%" if abs(err) <= 2 else "within 3%" if abs(err) <= 3 else "OVER 3%"
    print("%-28s median %9.3f ms, replay %9.3f ms: (a) %+6.2f%% %-9s (b) %s: %s" % (
        r["trace"], float(r["median_ms"]), float(r["replay_ms"]), err, goal_a,
        " ".join("%s %+.2f%%" % kv for kv in spans), "within 2%" if worst <= 2 else "OVER 2%"))
sys.exit(1 if bad else 0)
EOF
echo "figures: $OUT/figures.csv; the importer's notes: $OUT/trace-replay.txt"
exit $CRC

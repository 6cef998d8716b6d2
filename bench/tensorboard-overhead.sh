#!/usr/bin/env bash
# What `train --tensorboard` costs a step (goal: <= 1%): the MLP
# (scenarios/models/mlp.cfg) trained by 2 ranks on 2 testbed hosts (1gbit by
# default; needs root), REPS times with --tensorboard and REPS times without,
# interleaved so that drift of the machine hits both alike. Each run's figure
# is the median step time over both ranks' steps after the first WARMUP;
# printed: each configuration's median and spread (min-max) of those run
# figures, and the overhead as the ratio of the medians, with the spread of
# the per-pair ratios. Wall time is noisy on a shared machine; CPU time is
# less so: the ranks' user + system CPU seconds per step (GNU time over the
# launch, start-up included alike), with against without, bound what the
# logger thread takes from the step. With --loopback the ranks talk over
# loopback in this machine's own network namespace instead (no testbed, no
# root).
#
#   bash bench/tensorboard-overhead.sh [--loopback] [BUILD_DIR] [OUT_DIR]
#   env: REPS (7), STEPS (60), WARMUP (5), RATE (1gbit)
set -euo pipefail
cd "$(dirname "$0")/.."
LOOPBACK=0
if [ "${1:-}" = "--loopback" ]; then
  LOOPBACK=1
  shift
fi
BUILD=${1:-build}
OUT=${2:-$(mktemp -d)}
REPS=${REPS:-7}
STEPS=${STEPS:-60}
WARMUP=${WARMUP:-5}
RATE=${RATE:-1gbit}
NAME=tbover
DD=$(realpath "$BUILD/ddpsim")
mkdir -p "$OUT"
OUT=$(realpath "$OUT")

HOSTS=()
if [ "$LOOPBACK" -eq 0 ]; then
  trap 'bash scripts/testbed.sh down --name $NAME >/dev/null 2>&1 || true' EXIT
  bash scripts/testbed.sh up 2 --rate "$RATE" --name $NAME >/dev/null 2>&1
  HOSTS=(--hosts "$NAME-h1,$NAME-h2")
  echo "== the MLP on 2 testbed hosts at $RATE: $REPS runs of $STEPS steps with and without --tensorboard"
else
  echo "== the MLP on 2 ranks over loopback: $REPS runs of $STEPS steps with and without --tensorboard"
fi

one() { # label rep [train args...]
  local label=$1 rep=$2
  shift 2
  local dir="$OUT/$label-$rep"
  rm -rf "$dir" "$dir.tb"
  /usr/bin/time -f "%U %S" -o "$dir.cpu" "$DD" launch -q --nproc 2 "${HOSTS[@]}" -- "$DD" train \
    --model scenarios/models/mlp.cfg --steps "$STEPS" -o "$dir" "$@" >/dev/null
}

for rep in $(seq 1 "$REPS"); do
  if [ $((rep % 2)) -eq 1 ]; then
    one off "$rep"
    one on "$rep" --tensorboard "$OUT/on-$rep.tb"
  else
    one on "$rep" --tensorboard "$OUT/on-$rep.tb"
    one off "$rep"
  fi
done

python3 - "$OUT" "$REPS" "$WARMUP" "$STEPS" <<'EOF'
import csv, statistics, sys
out, reps, warmup, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def run_median(label, rep):
    rows = csv.DictReader(open("%s/%s-%d/steps.csv" % (out, label, rep)))
    return statistics.median(float(r["step_s"]) for r in rows if int(r["step"]) >= warmup)
off = [run_median("off", r) for r in range(1, reps + 1)]
on = [run_median("on", r) for r in range(1, reps + 1)]
pairs = [a / b for a, b in zip(on, off)]
for name, v in (("without --tensorboard", off), ("with --tensorboard   ", on)):
    print("%s: median step %.3f ms (runs %.3f-%.3f ms)" % (name, statistics.median(v) * 1e3, min(v) * 1e3, max(v) * 1e3))
ratio = statistics.median(on) / statistics.median(off)
print("overhead: step time ratio %.4f (%+.2f%%); per-pair ratios %.4f-%.4f (median %.4f)"
      % (ratio, (ratio - 1) * 100, min(pairs), max(pairs), statistics.median(pairs)))
def cpu_per_step(label, rep):
    u, s = open("%s/%s-%d.cpu" % (out, label, rep)).read().split()[-2:]
    return (float(u) + float(s)) / steps
coff = [cpu_per_step("off", r) for r in range(1, reps + 1)]
con = [cpu_per_step("on", r) for r in range(1, reps + 1)]
# Both ranks' CPU; a rank's share of the difference, against its step time,
# bounds what logging could add to a step were it all on the step's path.
extra = (statistics.median(con) - statistics.median(coff)) / 2
print("CPU of both ranks per step: without %.3f ms (runs %.3f-%.3f), with %.3f ms (runs %.3f-%.3f); "
      "a rank's difference %+.3f ms a step, %+.2f%% of the median step"
      % (statistics.median(coff) * 1e3, min(coff) * 1e3, max(coff) * 1e3, statistics.median(con) * 1e3,
         min(con) * 1e3, max(con) * 1e3, extra * 1e3, extra / statistics.median(off) * 100))
EOF

#!/usr/bin/env bash
# Validation on the network testbed: calibrate ONCE on 2 hosts x 2
# ranks at 1gbit, then, without recalibrating, predict and measure a grid of
# real runs of `ddpsim train`: 2 and 3 hosts with one rank each and 2 hosts x
# 2 ranks (intra + inter), links at 500mbit, 1gbit and 2gbit, bucket caps 1
# and 25 MiB, overlap on and off, two MLP sizes. Every rank runs with the same
# CPU quota, in calibration too, so ranks sharing this machine's cores see the
# same compute rate whatever the shape. Prints each run's step-time error,
# the mean absolute percentage error (MAPE) and the worst case
# (goal: MAPE <= 5%, worst <= 10%). Needs root.
#
#   [REPEATS=N] bash bench/validate-testbed.sh [BUILD_DIR] [OUT_DIR] [--quick]
#
# Every point is run REPEATS times (default 3), in separate rounds over the
# whole grid so that a slow spell of the machine does not hit all runs of
# one point; each point's measured step time is the median of its runs
# (bench/mape.py prints the single-run figures too).
#
# Before the calibration and each run it waits for a quiet spell of the
# machine (bench/steal.sh: under 3% of the CPU taken by the hypervisor).
#
# --quick: 1gbit only, 2 hosts x 1, the small MLP, 25 MiB, overlap on/off,
# one repetition, no waiting (what the integration test runs).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-$(mktemp -d)}
QUICK=${3:-}
NAME=valtb
QUOTA=0.5
STEPS=12
REPEATS=${REPEATS:-3}
if [ "$QUICK" = --quick ]; then
  REPEATS=1
  STEAL_WAIT_S=0 # the integration test asserts a bound noise cannot break; no waiting for quiet
fi
DD=$(realpath "$BUILD/ddpsim")
source bench/steal.sh
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
trap 'bash scripts/testbed.sh down --name $NAME >/dev/null 2>&1 || true' EXIT

bash scripts/testbed.sh up 3 --rate 1gbit --name $NAME >/dev/null 2>&1
echo "== calibrating on 2 hosts x 2 ranks at 1gbit (cpu quota $QUOTA per rank)"
CAL=(--link-gbps 1 --model scenarios/models/mlp.cfg --model scenarios/models/mlp-small.cfg
     --out "$OUT/profile.cfg" --scratch "$OUT" --progress off)
[ "$QUICK" = --quick ] && CAL+=(--quick)
t0=$(date +%s.%N)
steal_wait
s0=$(steal_snap)
"$DD" launch -q --nproc 4 --hosts $NAME-h1,$NAME-h2 --cpu-quota $QUOTA -- "$DD" calibrate "${CAL[@]}"
echo "   calibration wall time: $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s;" \
  "CPU time stolen by the hypervisor meanwhile: $(steal_frac "$s0")"

if [ "$QUICK" = --quick ]; then
  RATES=(1gbit); SHAPES=("2 1"); MODELS=(mlp-small); CAPS=(25); OVERLAPS=(on off)
else
  RATES=(500mbit 1gbit 2gbit); SHAPES=("2 1" "3 1" "2 2"); MODELS=(mlp mlp-small); CAPS=(1 25); OVERLAPS=(on off)
fi
RESULTS="$OUT/validation.csv"
STEAL="$OUT/steal.csv"
rm -f "$RESULTS"
echo "label,steal" > "$STEAL"
for rep in $(seq "$REPEATS"); do
  suffix=""; [ "$REPEATS" -gt 1 ] && suffix="-r$rep"
  for rate in "${RATES[@]}"; do
    gbps=$(python3 -c "r='$rate'; print(float(r[:-4])/1000 if r.endswith('mbit') else float(r[:-4]))")
    bash scripts/testbed.sh up 3 --rate "$rate" --name $NAME >/dev/null 2>&1
    for shape in "${SHAPES[@]}"; do
      set -- $shape
      nodes=$1 per=$2
      hosts=$(seq -s, -f "$NAME-h%g" 1 "$nodes")
      for model in "${MODELS[@]}"; do
        for cap in "${CAPS[@]}"; do
          for ov in "${OVERLAPS[@]}"; do
            tag="$rate-${nodes}x$per-$model-cap$cap-$ov$suffix"
            run="$OUT/runs/$tag"
            steal_wait
            s0=$(steal_snap)
            "$DD" launch -q --nproc $((nodes * per)) --hosts "$hosts" --cpu-quota $QUOTA -- \
              "$DD" train --model "scenarios/models/$model.cfg" --steps $STEPS --bucket-cap-mb "$cap" \
              --overlap "$ov" --momentum 0.9 -o "$run" >/dev/null
            echo "$tag,$(steal_frac "$s0")" >> "$STEAL"
            cat > "$run/predict.cfg" <<CFG
name = "$tag";
profile = "$OUT/profile.cfg";
model = "$OUT/profile.$model.cfg";
training = { batch = 32; precision = "fp32"; optimizer = "sgd_momentum"; };
cluster = { nodes = $nodes; devices_per_node = $per; };
networks = ( { name = "testbed-$rate"; from_profile = true; gbps = $gbps; } );
ddp = { backend = "gloo"; bucket_cap_mb = $cap.0; overlap = $([ $ov = on ] && echo true || echo false); };
simulation = { steps = 20; ranks = "every"; };
CFG
            "$DD" validate "$run/predict.cfg" --measured "$run/steps.csv" --skip 3 \
              --append "$RESULTS" --label "$tag" | grep "^step_s" | sed "s/^step_s/$tag/"
          done
        done
      done
    done
  done
done
python3 bench/mape.py --steal "$STEAL" "$RESULTS" "runs" network nodes gpus_per_node model bucket_cap_mb overlap
echo "results: $RESULTS"

#!/usr/bin/env bash
# Recovery, predicted vs measured: on 2 testbed hosts at 1gbit,
# calibrate (quick), then train the MLP for real twice under the launcher —
# without failures, and with three injected failures (rank 1 SIGKILLed in
# the middle of steps 15, 24 and 37, --max-restarts 3, checkpoints every 10
# steps) — and predict both with the job-level simulator, the failures
# scheduled at the same steps. Prints the wall times, the cost per failure
# (with minus without, over 3) and their errors (goal <= 10%), and the
# measured recovery breakdown of recovery.csv. Needs root.
#
#   bash bench/recovery-testbed.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-$(mktemp -d)}
NAME=rectb
STEPS=40
EVERY=10
FAILS=15,24,37
DD=$(realpath "$BUILD/ddpsim")
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
trap 'bash scripts/testbed.sh down --name $NAME >/dev/null 2>&1 || true' EXIT
bash scripts/testbed.sh up 2 --rate 1gbit --name $NAME >/dev/null 2>&1
HOSTS=$NAME-h1,$NAME-h2

echo "== calibrating (quick) on 2 hosts at 1gbit"
"$DD" launch -q --nproc 2 --hosts $HOSTS -- "$DD" calibrate --quick --link-gbps 1 \
  --model scenarios/models/mlp.cfg --scratch "$OUT" --out "$OUT/profile.cfg" --progress off

run() { # label, extra train args...
  local label=$1
  shift
  rm -rf "$OUT/$label"
  local t0 t1
  t0=$(date +%s.%N)
  "$DD" launch -q --nproc 2 --hosts $HOSTS --max-restarts 3 -- "$DD" train --model scenarios/models/mlp.cfg \
    --steps $STEPS --ckpt-dir "$OUT/$label/ckpt" --ckpt-every $EVERY -o "$OUT/$label" "$@" >/dev/null
  t1=$(date +%s.%N)
  python3 -c "print($t1 - $t0)"
}
echo "== training $STEPS steps without failures, then with failures at steps $FAILS"
WALL_A=$(run clean)
WALL_B=$(run failures --fail-at-step $FAILS --fail-rank 1)

scenario() { # file, failures group
  cat > "$1" <<CFG
name = "recovery";
profile = "$OUT/profile.cfg";
model = "$OUT/profile.mlp.cfg";
training = { batch = 32; precision = "fp32"; optimizer = "sgd_momentum"; };
cluster = { nodes = 2; devices_per_node = 1; };
networks = ( { name = "testbed-1gbit"; from_profile = true; } );
ddp = { backend = "gloo"; };
job = { steps = $STEPS.0; };
checkpoint = { every_steps = $EVERY.0; mode = "sync"; };
$2
simulation = { steps = 20; ranks = "every"; replications = 2; };
CFG
}
# The launcher sees a dead rank at once (SIGCHLD) and peers see its closed
# connections within milliseconds, so detection is ~0; a restart in place
# needs no spare node, so spares are plentiful.
scenario "$OUT/clean.cfg" ""
scenario "$OUT/failures.cfg" "failures = { distribution = \"scheduled\"; at_steps = [${FAILS//,/.0, }.0]; detect_s = 0.0; spares = 100; };"
"$DD" simulate "$OUT/clean.cfg" -o "$OUT/pred-clean" -q
"$DD" simulate "$OUT/failures.cfg" -o "$OUT/pred-failures" -q
python3 - "$OUT" "$WALL_A" "$WALL_B" <<'PY'
import csv, sys
out, wa, wb = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
def row(f):
    return next(csv.DictReader(open(f)))
a, b = row(f"{out}/pred-clean/recovery.csv"), row(f"{out}/pred-failures/recovery.csv")
# The job level starts counting once the ranks run; the first start costs a restart too.
pa = float(a["time_to_train_h"]) * 3600 + float(a["restart_s"])
pb = float(b["time_to_train_h"]) * 3600 + float(b["restart_s"])
print(f"\n{'':28}{'predicted':>12}{'measured':>12}{'error':>9}")
for name, p, m in (("wall, no failures (s)", pa, wa), ("wall, 3 failures (s)", pb, wb),
                   ("cost per failure (s)", (pb - pa) / 3, (wb - wa) / 3)):
    print(f"{name:28}{p:12.2f}{m:12.2f}{100 * (p - m) / m:+8.1f}%")
print(f"\npredicted per failure: restart {float(b['restart_s']):.2f} s, load {float(b['load_s']):.2f} s, "
      f"lost work {float(b['waste_lost_h']) * 3600 / 3:.2f} s; checkpoint {float(b['ckpt_s']):.2f} s each")
print("\nmeasured recovery (recovery.csv):")
for r in csv.DictReader(open(f"{out}/failures/recovery.csv")):
    print("  " + ", ".join(f"{k} {float(v):.3f}" if "." in v else f"{k} {v}" for k, v in r.items()))
PY

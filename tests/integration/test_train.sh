#!/usr/bin/env bash
# Integration test of real data-parallel training: `ddpsim launch` starting
# `ddpsim train` ranks (Gloo over loopback TCP, FileStore rendezvous).
#
#  1. launch --nproc 2 -- train: exit 0; steps.csv has the per-step columns
#     and 2 x N rows (each rank, each step once, consistent times); --trace
#     writes one valid JSON trace per rank with forward, backward and
#     allreduce spans (every layer, every bucket, every step).
#  2. One rank without the launcher: rank 0 of 1, and it removes its
#     private rendezvous directory.
#  3. Resume equality: N steps straight vs N/2 steps with a checkpoint, then
#     --resume up to N: the final parameters are bitwise equal (cmp), alone
#     and with 2 ranks under the launcher; the run crosses an epoch of the
#     sampler so the sampler position matters. The launches reuse one
#     --rdzv-dir, which must work (each attempt gets a fresh directory).
#
#   test_train.sh DDPSIM_BINARY SOURCE_DIR
set -u

bin=${1:?usage: test_train.sh DDPSIM_BINARY SOURCE_DIR}
src=${2:?source dir}
model="$src/tests/data/runtime/mlp-tiny.cfg"   # 28,960 parameters
n_params=28960
. "$src/tests/integration/lib.sh"
need_tools test_train python3 pgrep
it_begin test_train

common=(--model "$model" --batch 8 --timeout 20 --bucket-cap-mb 0.03 --first-bucket-mb 0.01)

# ---- 1. two ranks under the launcher, metrics and traces -------------------
N=6
run launch2 launch --nproc 2 --rdzv-dir "$work/rdzv1" -- ddpsim train "${common[@]}" \
  --steps $N -o "$work/run1" --trace
check "launch 2 ranks: exit $status" [ "$status" -eq 0 ]

python3 - "$work/run1/steps.csv" 2 $N <<'EOF' || fail "steps.csv of the 2-rank run"
import csv, math, sys
path, world, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = list(csv.DictReader(open(path)))
need = ["rank", "step", "step_s", "compute_s", "comm_s", "exposed_comm_s"]
hdr = open(path).readline().strip().split(",")
missing = [c for c in need if c not in hdr]
assert not missing, "columns missing: %s (have %s)" % (missing, hdr)
assert len(rows) == world * steps, "%d rows, expected %d" % (len(rows), world * steps)
seen = sorted((int(r["rank"]), int(r["step"])) for r in rows)
assert seen == [(r, s) for r in range(world) for s in range(steps)], "rank/step pairs: %s" % seen
for r in rows:
    v = {k: float(r[k]) for k in need[2:]}
    assert all(math.isfinite(x) and x >= 0 for x in v.values()), r
    assert v["compute_s"] <= v["step_s"] + 1e-9, r
    assert v["comm_s"] > 0, r
    # exposed communication is the part of the step not spent computing
    assert abs(v["exposed_comm_s"] - (v["step_s"] - v["compute_s"])) <= 2e-9, r
print("steps.csv: %d rows, columns ok" % len(rows))
EOF
checks=$((checks + 1))

for r in 0 1; do
  tr="$work/run1/trace-rank-$r.json"
  check "trace of rank $r is valid JSON" python3 -m json.tool "$tr" /dev/null
  python3 - "$tr" $r $N 3 $n_params <<'EOF' || fail "trace of rank $r"
import json, sys
path, rank, steps, layers, n_params = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ev = json.load(open(path))["traceEvents"]
x = [e for e in ev if e.get("ph") == "X"]
assert all(e["pid"] == rank and e["dur"] >= 0 for e in x), "pid or dur wrong"
fwd = [e for e in x if e.get("cat") == "forward"]
bwd = [e for e in x if e.get("cat") == "backward"]
ar = [e for e in x if "allreduce" in e["name"]]
assert len(fwd) == steps * layers, "forward spans: %d" % len(fwd)
assert len(bwd) == steps * layers, "backward spans: %d" % len(bwd)
assert len(ar) >= 2 * steps and len(ar) % steps == 0, "allreduce spans: %d" % len(ar)
assert all(e["tid"] == 1 and e["cat"] == "comm" for e in ar), "allreduce not on the comm thread"
assert all(e["tid"] == 0 for e in fwd + bwd), "compute not on the compute thread"
# every step's buckets carry all the gradients, once
per_step = len(ar) // steps
total = sum(e["args"]["bytes"] for e in ar)
assert total == steps * n_params * 4, "allreduced bytes %d, expected %d" % (total, steps * n_params * 4)
print("rank %d trace: %d forward, %d backward, %d allreduce spans (%d buckets)" % (rank, len(fwd), len(bwd), len(ar), per_step))
EOF
  checks=$((checks + 1))
done

# ---- 2. one rank, no launcher ----------------------------------------------
# It rendezvouses with itself through a private $TMPDIR/ddpsim-rdzv-*
# directory, which it must remove (files and all) once connected. A TMPDIR of
# the test's own keeps other tests' lone ranks out of the count.
own_tmp="$work/tmp"
mkdir -p "$own_tmp"
left_dirs() { find "$own_tmp" -mindepth 1 -maxdepth 1 2>/dev/null | sort; }
TMPDIR=$own_tmp run single train "${common[@]}" --steps 3 -o "$work/run0"
check "single rank: exit $status" [ "$status" -eq 0 ]
check "single rank: its rendezvous directory was removed (left: $(left_dirs | tr '\n' ' '))" \
  [ -z "$(left_dirs)" ]
check "single rank: 1 rank(s) in the summary" grep -q "1 rank(s)" "$work/single.out"
check "single rank: 3 rows" [ "$(tail -n +2 "$work/run0/steps.csv" | wc -l)" -eq 3 ]
# Calibration alone meets itself the same way and must clean up the same way.
mkdir -p "$work/cal0"
TMPDIR=$own_tmp run single_cal calibrate --quick --out "$work/cal0/p.cfg"
check "calibrate alone: exit $status" [ "$status" -eq 0 ]
check "calibrate alone: its rendezvous directory was removed (left: $(left_dirs | tr '\n' ' '))" \
  [ -z "$(left_dirs)" ]
# The directory is made in TMPDIR: one that does not exist is named in the error.
TMPDIR=$work/no-such-tmp run single_badtmp train "${common[@]}" --steps 1 -o "$work/run0b"
check "single rank, TMPDIR missing: exit $status, not 0" [ "$status" -ne 0 ]
check "single rank, TMPDIR missing: the error names it" grep -q "no-such-tmp" "$work/single_badtmp.err"

# ---- 3. resume equality -------------------------------------------------------
# 100 samples: 100 per epoch alone (12 batches of 8), 50 per rank with 2
# ranks (6 batches): N = 16 crosses an epoch either way, and the checkpoint
# at N/2 = 8 sits in the middle of one.
N=16
H=$((N / 2))
data=(--dataset 100 --lr 0.05 --momentum 0.9)

resume_case() { # NAME [launch ... -- ddpsim]
  local name=$1
  shift
  local pre=("$@")
  run "$name-straight" "${pre[@]}" train "${common[@]}" "${data[@]}" --steps $N \
    -o "$work/$name-a" --params-out "$work/$name-A.bin"
  check "$name: straight run exit $status" [ "$status" -eq 0 ]
  run "$name-half" "${pre[@]}" train "${common[@]}" "${data[@]}" --steps $H \
    -o "$work/$name-b1" --ckpt-dir "$work/$name-ck" --ckpt-every $H --params-out "$work/$name-H.bin"
  check "$name: first half exit $status" [ "$status" -eq 0 ]
  check "$name: checkpoint of step $H written" test -f "$work/$name-ck/ckpt-$(printf %08d $H).ddpc"
  run "$name-resume" "${pre[@]}" train "${common[@]}" "${data[@]}" --steps $N \
    -o "$work/$name-b2" --ckpt-dir "$work/$name-ck" --resume --params-out "$work/$name-B.bin"
  check "$name: resumed run exit $status" [ "$status" -eq 0 ]
  check "$name: resumed from step $H" grep -q "resumed from .*ckpt-$(printf %08d $H).ddpc at step $H" "$work/$name-resume.err"
  check "$name: parameters have 4 x $n_params bytes" [ "$(stat -c %s "$work/$name-A.bin" 2>/dev/null)" = $((4 * n_params)) ]
  check "$name: straight and resumed parameters are bitwise equal" cmp "$work/$name-A.bin" "$work/$name-B.bin"
  # the resumed run ran only the second half
  check "$name: resumed run measured steps $H..$((N - 1)) only" \
    [ "$(tail -n +2 "$work/$name-b2/steps.csv" | cut -d, -f3 | sort -n | uniq | tr '\n' ' ')" = "$(seq -s ' ' $H $((N - 1))) " ]
  # and a run that did not resume ends elsewhere (the check has teeth)
  check "$name: the half run's parameters differ from the full run's" \
    [ -n "$(cmp "$work/$name-A.bin" "$work/$name-H.bin" 2>&1)" ]
}
resume_case single1
# The three launches share one --rdzv-dir: each attempt must still get a
# fresh rendezvous directory (a FileStore key can be set only once).
resume_case launch2 launch --nproc 2 --rdzv-dir "$work/rdzv3" -- ddpsim

it_end

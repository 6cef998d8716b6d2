#!/usr/bin/env bash
# Recovery measured by the runtime: injected failures at given
# steps and at random times under `ddpsim launch --max-restarts`, the run
# completes with the parameters of an uninterrupted run, and rank 0's
# recovery.csv holds one sane row per failure.
#
#   test_recovery.sh DDPSIM SOURCE_DIR
set -euo pipefail
DD=$1
SRC=$2
. "$SRC/tests/integration/need.sh"
need_tools test_recovery python3
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
MODEL="$SRC/tests/data/runtime/mlp-tiny.cfg"
COMMON=(--model "$MODEL" --steps 12 --batch 8 --dataset 512 --ckpt-every 3 --timeout 5)

# Reference: no failures.
"$DD" launch -q --nproc 2 -- "$DD" train "${COMMON[@]}" --ckpt-dir "$W/ref/ck" -o "$W/ref" \
  --params-out "$W/ref.bin" >/dev/null

# Two failures at given steps (rank 1 dies mid-allreduce at step 4, then at 8).
"$DD" launch -q --nproc 2 --max-restarts 2 -- "$DD" train "${COMMON[@]}" --ckpt-dir "$W/a/ck" -o "$W/a" \
  --fail-at-step 4,8 --fail-rank 1 --params-out "$W/a.bin" >/dev/null 2>"$W/a.err" ||
  fail "the run with two injected failures did not complete: $(tail -3 "$W/a.err")"
cmp -s "$W/ref.bin" "$W/a.bin" || fail "parameters after two restarts differ from the uninterrupted run"
[ -f "$W/a/recovery.csv" ] || fail "no recovery.csv"
python3 - "$W/a/recovery.csv" <<'PY' || fail "recovery.csv is not sane"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2, f"{len(rows)} rows, expected 2"
for r, step, resume in zip(rows, (4, 8), (3, 6)):
    assert int(r["fail_step"]) == step, r
    assert int(r["resume_step"]) == resume, r
    assert int(r["replay_steps"]) == step - resume, r
    for k in ("detect_s", "stop_s", "restart_s", "rendezvous_s", "ckpt_load_s", "replay_s"):
        assert 0 <= float(r[k]) < 30, (k, r[k])
    parts = sum(float(r[k]) for k in ("detect_s", "stop_s", "restart_s", "ckpt_load_s", "replay_s"))
    assert float(r["recovery_s"]) >= 0.9 * parts, ("recovery shorter than its parts", r)
print("recovery.csv:", [(r["fail_step"], round(float(r["recovery_s"]), 3)) for r in rows])
PY

# Random failures from the launcher: one restart allowed, so at most one
# injected failure; the run completes either way.
"$DD" launch -q --nproc 2 --max-restarts 1 --fail-mtbf 0.3 --fail-seed 3 -- "$DD" train "${COMMON[@]}" \
  --ckpt-dir "$W/b/ck" -o "$W/b" --params-out "$W/b.bin" >/dev/null 2>"$W/b.err" ||
  fail "the run with random failures did not complete: $(tail -3 "$W/b.err")"
cmp -s "$W/ref.bin" "$W/b.bin" || fail "parameters after a random failure differ from the uninterrupted run"

# Bad options.
"$DD" launch --nproc 2 --fail-mtbf 0 -- true >/dev/null 2>&1 && fail "--fail-mtbf 0 accepted"
"$DD" launch --nproc 2 --fail-mtbf x -- true >/dev/null 2>&1 && fail "--fail-mtbf x accepted"
echo "recovery: ok"

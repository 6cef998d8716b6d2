#!/usr/bin/env bash
# The 16,384-GPU failure study of bench/data/failure-16k.cfg: one
# interruption every ~3 h over a ~54-day job, sharded checkpoints on 2 TB/s
# of storage and a 3 PB training state, so that a restart's load rivals the
# time between interruptions; then the same with a 20 PB state, where no
# run can finish. Prints, for every point, the job level's columns, and
# checks that every column is a number, or (for runs that did not finish)
# that the CSV counts them and says why; that the load is the read of a
# node's share at its share of the storage plus the exchange of the shares,
# and that the exchange is what `ddpsim collective` predicts for an
# allgather of the state on the same cluster.
#
#   bash bench/failure-16k.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DD=${DDPSIM:-./build/ddpsim}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
sed 's/state_GB = 3.0e6;/state_GB = 2.0e7;/; s/name = "failure-16k";/name = "failure-16k-20pb";/' \
  bench/data/failure-16k.cfg >bench/data/.failure-16k-20pb.cfg
trap 'rm -rf "$WORK" bench/data/.failure-16k-20pb.cfg' EXIT
status=0
for cfg in bench/data/failure-16k.cfg bench/data/.failure-16k-20pb.cfg; do
  start=$(date +%s.%N)
  "$DD" simulate "$cfg" -o "$WORK" -q
  end=$(date +%s.%N)
  name=$(sed -n 's/^name = "\(.*\)";/\1/p' "$cfg")
  state=$(sed -n 's/.*state_GB = \([0-9.e+]*\);.*/\1/p' "$cfg")
  "$DD" collective --scenario "$cfg" --op allgather -b "$(python3 -c "print(int($state * 1e9))")" \
    -e "$(python3 -c "print(int($state * 1e9))")" >"$WORK/allgather.txt" 2>/dev/null
  python3 - "$WORK/$name.csv" "$WORK/allgather.txt" "$state" "$(python3 -c "print($end - $start)")" <<'PY' || status=1
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ag_us = [float(l.split()[5]) for l in open(sys.argv[2]) if l.strip() and not l.startswith("#")][0]
state_B, wall = float(sys.argv[3]) * 1e9, float(sys.argv[4])
text = {"model", "network", "backend", "algorithm", "precision", "compression", "status", "ckpt_mode",
        "ties_every_s", "unfinished_why"}
ok = True
print("%s: %d points in %.1f s; state %.3g PB, interrupts every %.3g h" % (sys.argv[1].rsplit("/", 1)[-1], len(rows),
      wall, state_B / 1e15, float(rows[0]["mtti_h"])))
print("  load %.0f s = read of a share %.0f s + exchange %.0f s (ddpsim collective allgather: %.0f s)"
      % (tuple(float(rows[0][k]) for k in ("load_s", "load_read_s", "load_exchange_s")) + (ag_us / 1e6,)))
nodes, storage = int(rows[0]["nodes"]), 2000e9
read = state_B / nodes / (storage / nodes)
if abs(float(rows[0]["load_read_s"]) - read) > 1e-6 * read:
    print("  FAIL: the read is not a share at the storage's share: %.6g s, expected %.6g" % (float(rows[0]["load_read_s"]), read)); ok = False
# The table prints times as nccl-tests does, in 7 characters: 2 digits here.
if abs(float(rows[0]["load_exchange_s"]) - ag_us / 1e6) > 0.01 * ag_us / 1e6:
    print("  FAIL: the exchange differs from ddpsim collective's allgather"); ok = False
print("  %6s %7s %12s %8s %8s %10s %9s %s" % ("spares", "every_s", "ttt_h", "goodput", "ettr", "failures", "down_h", "unfinished"))
for r in rows:
    for k, v in r.items():
        if k in text:
            continue
        try:
            x = float(v)
            good = math.isfinite(x)
        except ValueError:
            good = False
        if not good:
            print("  FAIL: column %s is '%s', not a number" % (k, v)); ok = False
    n = int(r["unfinished"])
    if n > 0 and not r["unfinished_why"]:
        print("  FAIL: %d unfinished runs and no reason" % n); ok = False
    print("  %6s %7s %12.1f %8.4f %8.4f %10.1f %9.1f %s" % (r["spares"], r["ckpt_every_s"], float(r["time_to_train_h"]),
          float(r["goodput"]), float(r["ettr"]), float(r["failures"]), float(r["waste_restart_h"]),
          "%d of %s: %s" % (n, r["replications"], r["unfinished_why"]) if n else "0"))
sys.exit(0 if ok else 1)
PY
done
exit $status

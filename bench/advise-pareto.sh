#!/usr/bin/env bash
# `ddpsim advise` against an exhaustive run of the same space: the advice on
# SCENARIO (default scenarios/plan.cfg), timed, with the points it simulated
# against the full product; then `ddpsim simulate` of every point of the
# same scenario, with its replications fixed at simulation.replications (so
# that each point's numbers are advise's: the same seeds), timed; then the
# front of time to train against cost of the exhaustive run, and whether
# advise's top recommendation is on it and is the exhaustive run's best
# under the scenario's objective. Exits 1 when the recommendation is not on
# the front.
#
#   bash bench/advise-pareto.sh [SCENARIO]
set -euo pipefail
cd "$(dirname "$0")/.."
DD=${DDPSIM:-./build/ddpsim}
SCENARIO=${1:-scenarios/plan.cfg}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
now() { date +%s.%N; }

t0=$(now)
"$DD" advise "$SCENARIO" -o "$WORK/advise" --no-plot >"$WORK/advise.txt"
t1=$(now)
sed -n 1,2p "$WORK/advise.txt"

# The same study with its replications fixed, next to the original (its
# relative paths resolve the same way).
copy="$(dirname "$SCENARIO")/.advise-pareto-$$.cfg"
trap 'rm -rf "$WORK" "$copy"' EXIT
python3 - "$SCENARIO" "$copy" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"simulation\s*=\s*\{([^}]*)\}", text)
reps = re.search(r"replications\s*=\s*(\d+)", m.group(1)) if m else None
r = reps.group(1) if reps else "100"
extra = " max_replications = %s;" % r
text = text[:m.end() - 1] + extra + text[m.end() - 1:] if m else text + "\nsimulation = {%s };\n" % extra
open(sys.argv[2], "w").write(text)
PY
t2=$(now)
"$DD" simulate "$copy" -o "$WORK/all" -q
t3=$(now)
name=$(sed -n 's/^name = "\(.*\)";/\1/p' "$SCENARIO")
python3 - "$WORK/advise/$name-advice.csv" "$WORK/all/$name.csv" "$SCENARIO" \
  "$(python3 -c "print($t1 - $t0)")" "$(python3 -c "print($t3 - $t2)")" <<'PY'
import csv, re, sys
adv = list(csv.DictReader(open(sys.argv[1])))
full = [r for r in csv.DictReader(open(sys.argv[2])) if r["status"] == "ok"]
text = open(sys.argv[3]).read()
t_adv, t_all = float(sys.argv[4]), float(sys.argv[5])
keys = ["nodes", "gpus_per_node", "network", "backend", "algorithm", "precision", "batch", "bucket_cap_mb",
        "overlap", "find_unused_parameters", "compression", "ckpt_mode", "ckpt_every_s", "spares"]
key = lambda r: tuple(r[k] for k in keys)
cost = lambda r: float(r.get("cost_usd") or 0)
time = lambda r: float(r["time_to_train_h"])
front = set()
pts = sorted(full, key=lambda r: (time(r), cost(r)))
cheapest = float("inf")
for r in pts:
    if cost(r) < cheapest:
        front.add(key(r))
        cheapest = cost(r)
top = next(r for r in adv if r["rank"] == "1")
m = re.search(r"(minimize|maximize)\s*=\s*\"(\w+)\"", text)
col, sign = (m.group(2), 1 if m.group(1) == "minimize" else -1) if m else ("time_to_train_h", 1)
dl = re.search(r"deadline_h\s*=\s*([0-9.e+]+)", text)
bu = re.search(r"budget_usd\s*=\s*([0-9.e+]+)", text)
ok = lambda r: (not dl or time(r) <= float(dl.group(1))) and (not bu or cost(r) <= float(bu.group(1)))
value = lambda r: time(r) if col == "time_to_train_h" else cost(r) if col == "cost_usd" else float(r[col])
best = min((r for r in full if ok(r)), key=lambda r: (sign * value(r), time(r)))
same = [r for r in full if key(r) == key(top)]
print("advise: %d of %d points simulated (%.2f%%) in %.2f s; exhaustive simulate: %d points in %.2f s"
      % (len(adv), len(full), 100.0 * len(adv) / len(full), t_adv, len(full), t_all))
print("top recommendation: %s" % ", ".join("%s %s" % (k, top[k]) for k in keys))
print("  advise:     %s h, %s USD" % (top["time_to_train_h"], top.get("cost_usd", "-")))
if same:
    print("  exhaustive: %s h, %s USD (the same point simulated there)" % (same[0]["time_to_train_h"], same[0].get("cost_usd", "-")))
print("on the exhaustive front of time vs cost (%d points): %s" % (len(front), "yes" if key(top) in front else "NO"))
print("the exhaustive run's best for '%s %s': %s" % ("minimize" if sign > 0 else "maximize", col,
      "the same point" if key(best) == key(top) else ", ".join("%s %s" % (k, best[k]) for k in keys)))
sys.exit(0 if key(top) in front else 1)
PY

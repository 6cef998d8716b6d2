#!/usr/bin/env bash
# `ddpsim collective` against the nccl-tests runs a profile was imported
# from: every table of tests/data/nccl-tests (or the FILEs given) is
# imported into one profile (`ddpsim import nccl-tests`, base DGX H100),
# then `ddpsim collective` predicts the same collective on the same shape at
# the same sizes, and the busbw of every row is compared with the run's
# (busbw from the time at full precision: the tables print 2 decimals).
# Prints, per file, the largest |predicted/measured - 1| of busbw and the
# size where it is, and exits 1 when one is above LIMIT (default 0.05).
#
#   bash bench/collective-vs-nccl-tests.sh [FILE...]
set -euo pipefail
cd "$(dirname "$0")/.."
DD=${DDPSIM:-./build/ddpsim}
LIMIT=${LIMIT:-0.05}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ $# -eq 0 ]; then
  set -- tests/data/nccl-tests/*.txt
fi
"$DD" import nccl-tests --base scenarios/profiles/dgx-h100.cfg --out "$WORK/imported.cfg" "$@" >"$WORK/import.log" 2>&1 || { cat "$WORK/import.log" >&2; exit 1; }
status=0
for f in "$@"; do
  read -r op ranks nodes lo hi <<<"$(python3 - "$f" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
ops = {"all_reduce_perf": "allreduce", "all_gather_perf": "allgather",
       "reduce_scatter_perf": "reducescatter", "broadcast_perf": "broadcast"}
op = ops[re.search(r"Collective test starting: (\w+)", text).group(1)]
hosts = re.findall(r"#\s+Rank\s+\d+ .* on\s+(\S+) ", text)
sizes = [int(l.split()[0]) for l in text.splitlines() if l.strip() and not l.startswith("#")]
print(op, len(hosts), len(set(hosts)), min(sizes), max(sizes))
PY
)"
  per=$((ranks / nodes))
  "$DD" collective --profile "$WORK/imported.cfg" --op "$op" -g "$per" --nodes "$nodes" -b 8 -e "$hi" -f 2 \
    >"$WORK/pred.txt"
  python3 - "$f" "$WORK/pred.txt" "$LIMIT" <<'PY' || status=1
import sys
def rows(path):
    out = {}
    for l in open(path):
        if l.startswith("#") or not l.strip():
            continue
        t = l.split()
        size, time_us = int(t[0]), float(t[5])
        if size > 0:
            out[size] = size / time_us  # proportional to busbw at a fixed shape
    return out
meas, pred = rows(sys.argv[1]), rows(sys.argv[2])
limit = float(sys.argv[3])
errs = [(abs(pred[s] / meas[s] - 1), s) for s in sorted(meas) if s in pred]
worst, at = max(errs)
mean = sum(e for e, _ in errs) / len(errs)
name = sys.argv[1].rsplit("/", 1)[-1]
print("%-28s %3d sizes  busbw error: mean %5.2f%%, worst %5.2f%% at %d B  %s"
      % (name, len(errs), 100 * mean, 100 * worst, at, "ok" if worst <= limit else "OVER %.0f%%" % (100 * limit)))
sys.exit(0 if worst <= limit and len(errs) == len(meas) else 1)
PY
done
exit $status

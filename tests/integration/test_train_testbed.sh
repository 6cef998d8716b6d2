#!/usr/bin/env bash
# Integration test of training across the network testbed: two test hosts
# (network namespaces on a bridge, links shaped to 1 Gb/s by tbf), one rank
# in each, started by `ddpsim launch --hosts`. Checks:
#
#  - the job succeeds, 2 x N rows of metrics, one trace per rank whose
#    allreduce spans carry every gradient byte once per step;
#  - the ranks really talk across the testbed: while the job runs, host 1
#    has established TCP connections to host 2's address;
#  - the communication time is what a 1 Gb/s link allows. The mlp model
#    has S = 12,590,080 fp32 parameters = 50.36 MB of gradients; a ring
#    allreduce over p = 2 ranks sends 2 (p - 1) / p x S = S per rank each
#    way, so a step's allreduces take at least S x 8 / 1e9 s = 0.403 s at
#    1 Gb/s (tbf's 625 KB burst is 1.2 % of S, hence the 0.95 factor).
#    Upward, the achieved bus bandwidth must be at least 0.3 Gb/s: loose,
#    as the 2 CPUs also compute, but a wrong rate (100 Mb/s would take 4 s)
#    or traffic that bypassed the shaping (loopback: tens of Gb/s) fails.
#
# Needs root and iproute2 (exit 77 = skipped otherwise). The testbed has its
# own name, so a developer's testbed is left alone; it is torn down on exit.
#
#   test_train_testbed.sh DDPSIM_BINARY SOURCE_DIR
set -u

bin=${1:?usage: test_train_testbed.sh DDPSIM_BINARY SOURCE_DIR}
src=${2:?source dir}
TB="$src/scripts/testbed.sh"
NAME=rttrn
RATE_BITS=1000000000
model="$src/scenarios/models/mlp.cfg"
N=4
sampler=""

. "$src/tests/integration/need.sh"
need_root test_train_testbed "network namespaces, veth, tc"
need_tools test_train_testbed ip tc python3 ss
need_netns test_train_testbed

. "$src/tests/integration/lib.sh"
it_begin test_train_testbed
it_on_exit '[ -n "$sampler" ] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null
bash "$TB" down --name "$NAME" >/dev/null 2>&1'

bash "$TB" down --name "$NAME" >/dev/null 2>&1   # a leftover of a killed run
if ! bash "$TB" up 2 --rate 1gbit --name "$NAME" >"$work/up.log" 2>&1; then
  cat "$work/up.log" >&2
  fail "testbed up 2 --rate 1gbit --name $NAME"
  exit 1
fi
h2addr=$(bash "$TB" addr 2 --name "$NAME")

# Sample host 1's TCP connections while the job runs.
(
  while :; do
    ip netns exec "$NAME-h1" ss -tnH state established 2>/dev/null
    sleep 0.2
  done
) >"$work/ss.log" &
sampler=$!

t0=$(date +%s.%N)
timeout -s KILL 120 "$bin" launch --nproc 2 --hosts "$NAME-h1,$NAME-h2" --rdzv-dir "$work/rdzv" -- \
  ddpsim train --model "$model" --steps $N --batch 8 --timeout 60 -o "$work/run" --trace \
  >"$work/train.out" 2>"$work/train.err"
status=$?
kill "$sampler" 2>/dev/null
wait "$sampler" 2>/dev/null
sampler=""
echo "--- launch across the testbed: exit $status after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
check "launch --hosts: exit 0, got $status" [ "$status" -eq 0 ] || sed 's/^/    | /' "$work/train.err" | head -40
check "host 1 had TCP connections to host 2 ($h2addr)" grep -qF "$h2addr:" "$work/ss.log"

python3 - "$model" "$work/run" $N $RATE_BITS <<'EOF' || fail "metrics and traces across the testbed"
import csv, json, re, sys
model, run, steps, rate = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
text = open(model).read()
n_params = sum(int(i) * int(o) + int(o) for i, o in
               re.findall(r"in\s*=\s*(\d+);\s*out\s*=\s*(\d+);", text))
S = 4 * n_params
p = 2
ideal = 2 * (p - 1) / p * S * 8 / rate
print("model: %d parameters, %.2f MB of gradients; ideal allreduce at 1 Gb/s: %.3f s" % (n_params, S / 1e6, ideal))
rows = list(csv.DictReader(open(run + "/steps.csv")))
assert len(rows) == p * steps, "%d rows, expected %d" % (len(rows), p * steps)
bad = []
busbws = {}
for r in rows:
    comm = float(r["comm_s"])
    busbw = 2 * (p - 1) / p * S * 8 / comm / 1e9
    print("  rank %s step %s: step %.3f s, compute %.3f s, comm %.3f s, exposed %.3f s, bus bandwidth %.3f Gb/s"
          % (r["rank"], r["step"], float(r["step_s"]), float(r["compute_s"]), comm,
             float(r["exposed_comm_s"]), busbw))
    if comm < 0.95 * ideal:
        bad.append("rank %s step %s: comm %.3f s is faster than 1 Gb/s allows (%.3f s)" % (r["rank"], r["step"], comm, ideal))
    busbws.setdefault(r["rank"], []).append(busbw)
# The lower bound holds for a rank's median step: a step's comm_s includes
# waiting for a peer that a loaded machine held back.
for rank, bws in busbws.items():
    med = sorted(bws)[len(bws) // 2]
    if med < 0.3:
        bad.append("rank %s: median bus bandwidth %.3f Gb/s, implausibly slow for 1 Gb/s" % (rank, med))
for rank in range(p):
    ev = json.load(open("%s/trace-rank-%d.json" % (run, rank)))["traceEvents"]
    ar = [e for e in ev if e.get("ph") == "X" and "allreduce" in e["name"]]
    total = sum(e["args"]["bytes"] for e in ar)
    if total != steps * S:
        bad.append("rank %d trace: %d bytes allreduced, expected %d" % (rank, total, steps * S))
    span_s = sum(e["dur"] for e in ar) / 1e6 / steps
    print("  rank %d trace: %d allreduce spans, %.3f s per step" % (rank, len(ar), span_s))
    if span_s < 0.95 * ideal:
        bad.append("rank %d trace: %.3f s of allreduce per step, under the 1 Gb/s minimum" % (rank, span_s))
assert not bad, "\n".join(bad)
EOF
checks=$((checks + 1))

bash "$TB" down --name "$NAME" >/dev/null 2>&1
check "testbed down" [ -z "$(ip netns list 2>/dev/null | grep -E "^$NAME-h[0-9]+( |\$)")" ]

it_end

#!/usr/bin/env bash
# Integration test of the shipped fabric study (scenarios/fabric.cfg): it
# runs, writes 96 rows with the fabric columns and a plot per model (PNG and
# SVG) where fabrics of the same cost stay apart; the same seed gives the same bytes, and so do three shards merged;
# only the 3:1 fabric without rail optimization and with a communicating
# neighbour slows the bucket allreduce (docs/fabrics.md tells why).
#
#   test_fabric.sh DDPSIM_BINARY SOURCE_DIR
set -u

bin=${1:?usage: test_fabric.sh DDPSIM_BINARY SOURCE_DIR}
src=${2:?source dir}
. "$src/tests/integration/lib.sh"
it_begin test_fabric
need_tools test_fabric python3 gnuplot cmp
it_watchdog=300
scen="$src/scenarios/fabric.cfg"

run study simulate "$scen" -o "$work/a" --plot -q
check "the study runs" [ "$status" -eq 0 ]
for m in resnet50 gpt2-xl; do
  check "plot of $m (png)" [ -s "$work/a/fabric-$m-fabric.png" ]
  check "plot of $m (svg)" [ -s "$work/a/fabric-$m-fabric.svg" ]
  # Seven of the eight fabrics cost the same; a panel that draws them on one
  # curve hides them. Some panel must draw every point at a place of its own.
  check "plot of $m: one panel draws each of its points apart" python3 - "$work/a/fabric-$m-fabric.svg" \
    "$work/a/fabric.csv" "$m" <<'PY'
import csv, re, sys
svg, table, model = sys.argv[1:]
points = sum(1 for r in csv.DictReader(open(table)) if r["model"] == model and r["status"] == "ok")
panels = {}
for part in open(svg).read().split('<g id="gnuplot_plot_')[1:]:  # one curve (id: number, panel letter)
    panel = re.match(r"\d+([a-z])", part).group(1)
    panels.setdefault(panel, set()).update(re.findall(r"href='#gpPt\d+' transform='translate\(([\d.]+,[\d.]+)\)", part))
apart = max(len(p) for p in panels.values())
assert apart >= points, "at most %d places for %d points in one panel" % (apart, points)
PY
done
check "96 rows and the fabric columns" python3 - "$work/a/fabric.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
need = ["fabric", "racks", "pods", "other_gpus", "bucket_algorithm", "fabric_slowdown", "busbw_GBps", "comm_duty"]
assert len(rows) == 96, len(rows)
assert all(k in rows[0] for k in need), rows[0].keys()
assert {r["fabric"] for r in rows} == {"1to1-rail", "1to1-rail+nb", "1to1", "1to1+nb", "3to1-rail",
                                        "3to1-rail+nb", "3to1", "3to1+nb"}
assert all(r["other_gpus"] == "4096" for r in rows)
slow = {r["fabric"] for r in rows if float(r["fabric_slowdown"]) > 1.0}
assert slow == {"3to1+nb"}, slow
for r in rows:
    if r["fabric"] == "3to1+nb":
        assert 1.0 < float(r["fabric_slowdown"]) < 3.0, r
        assert 0.0 < float(r["comm_duty"]) < 1.0, r
# The README's figures: against 1to1-rail, every other fabric has the same
# bus bandwidth, and 3to1+nb 3.6 to 5.5% less.
base = {(r["model"], r["gpus"]): float(r["busbw_GBps"]) for r in rows if r["fabric"] == "1to1-rail"}
for r in rows:
    drop = 100 * (1 - float(r["busbw_GBps"]) / base[(r["model"], r["gpus"])])
    if r["fabric"] == "3to1+nb":
        assert 3.55 <= drop <= 5.5, (r["model"], r["gpus"], drop)
    else:
        assert drop == 0, (r["model"], r["gpus"], r["fabric"], drop)
PY
run again simulate "$scen" -o "$work/b" -q -j 1
check "same seed, same bytes (1 worker against the default)" cmp "$work/a/fabric.csv" "$work/b/fabric.csv"
for i in 0 1 2; do
  run "shard$i" simulate "$scen" --shard "$i/3" -o "$work/s" -q -j 1
  check "shard $i runs" [ "$status" -eq 0 ]
done
run merge merge "$scen" --shards 3 -o "$work/s"
check "three shards merged are the study's bytes" cmp "$work/s/fabric.csv" "$work/a/fabric.csv"
it_end

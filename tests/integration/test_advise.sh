#!/usr/bin/env bash
# Integration test of `ddpsim advise` on the shipped study scenarios/plan.cfg
# and edited copies of it: help and usage errors (exit 2); the table and
# DIR/NAME-advice.csv (columns, one rank 1, fewer points simulated than the
# study has); the same CSV bytes with 1 and 2 workers; the Pareto plot
# (with gnuplot); a study without prices (no cost columns, no plot); and the
# bad inputs — a deadline no point meets, an empty search
# space, a swept failure rate, no job — each exit 3 with its message and
# nothing written.
#
#   test_advise.sh DDPSIM_BINARY SOURCE_DIR
set -u
bin=${1:?usage: test_advise.sh DDPSIM_BINARY SOURCE_DIR}
src=${2:?source dir}
. "$src/tests/integration/lib.sh"
need_tools test_advise python3
it_begin test_advise
it_watchdog=240
it_quiet=" 0 2 3 "

expect_status() { check "$1: exit status $status, expected $2" [ "$status" -eq "$2" ]; }
expect_in() { check "$1: std$2 has '$3'" grep -qF -- "$3" "$work/$1.$2"; }
empty_dir() { check "$1: nothing written in $2" [ -z "$(ls -A "$2" 2>/dev/null)" ]; }

# plan.cfg with absolute paths, edited by a sed expression, as $work/NAME.cfg.
variant() { # NAME SED
  sed -e "s|\"profiles/|\"$src/scenarios/profiles/|; s|\"models/|\"$src/scenarios/models/|" -e "$2" \
    "$src/scenarios/plan.cfg" >"$work/$1.cfg"
}

# --- help and usage -------------------------------------------------------------
run help --help
expect_in help out "advise"
expect_in help out "collective"
run help_advise help advise
expect_status help_advise 0
expect_in help_advise out "Usage: ddpsim advise SCENARIO"
expect_in help_advise out "--exhaustive"
run no_scenario advise
expect_status no_scenario 2
expect_in no_scenario err "missing SCENARIO file"
run bad_option advise "$src/scenarios/plan.cfg" --fast
expect_status bad_option 2

# --- the shipped study ------------------------------------------------------------
run plan advise "$src/scenarios/plan.cfg" -o "$work/plan" -j 2
expect_status plan 0
expect_in plan out "plan: advise, minimize cost_usd within 24 h"
expect_in plan out "of the 5760 points of the study"
expect_in plan out "the scenario as given"
csv="$work/plan/plan-advice.csv"
check "the advice CSV" python3 - "$csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
need = ["rank", "nodes", "network", "backend", "bucket_cap_mb", "overlap", "compression", "ckpt_mode",
        "ckpt_every_s", "spares", "time_to_train_h", "cost_usd", "goodput", "pareto", "why"]
missing = [c for c in need if c not in rows[0]]
assert not missing, missing
assert [int(r["rank"]) for r in rows] == list(range(1, len(rows) + 1)), "ranks are not 1..n in order"
assert 10 < len(rows) < 5760 / 10, "%d points simulated" % len(rows)
top = rows[0]
assert top["feasible"] == "1" and float(top["time_to_train_h"]) <= 24, top
feasible = [r for r in rows if r["feasible"] == "1"]
assert float(top["cost_usd"]) == min(float(r["cost_usd"]) for r in feasible)
assert any(r["pareto"] == "1" for r in rows) and top["pareto"] == "1"
PY
run plan1 advise "$src/scenarios/plan.cfg" -o "$work/plan1" -j 1 --no-plot -q
expect_status plan1 0
check "the same advice with 1 and 2 workers" cmp -s "$csv" "$work/plan1/plan-advice.csv"
check "--no-plot draws nothing" [ ! -e "$work/plan1/plan-advice-pareto.png" ]
if command -v gnuplot >/dev/null 2>&1; then
  check "the Pareto plot (PNG)" [ -s "$work/plan/plan-advice-pareto.png" ]
  check "the Pareto plot (SVG)" [ -s "$work/plan/plan-advice-pareto.svg" ]
  check "no temporary file left" [ -z "$(ls -A "$work/plan" | grep '^\.')" ]
  run replot plot pareto "$csv" -o "$work/replot"
  expect_status replot 0
  check "ddpsim plot pareto" [ -s "$work/replot/plan-advice-pareto.png" ]
fi

# --- the table names what it changes as the CSV does --------------------------------
variant per_node 's/devices_per_node = 8;/devices_per_node = [4, 8];/'
run per_node advise "$work/per_node.cfg" -o "$work/per_node" --no-plot
expect_status per_node 0
check "the table's columns and the changes it names are the CSV's columns" python3 - \
  "$work/per_node.out" "$work/per_node/plan-advice.csv" <<'PY'
import csv, re, sys
cols = set(next(csv.reader(open(sys.argv[2]))))
lines = open(sys.argv[1]).read().splitlines()
head = next(l for l in lines if l.split()[:1] == ["rank"]).split()
knobs = head[1:head.index("ttt_h")]
assert "gpus_per_node" in knobs, knobs
assert not [k for k in knobs if k not in cols], [k for k in knobs if k not in cols]
changed = set(re.findall(r"(?:: |, )([a-z_]+) \S+ -> ", open(sys.argv[1]).read()))
assert "gpus_per_node" in changed, changed
assert not changed - cols, changed - cols
PY

# --- without prices: no cost columns, no plot --------------------------------------
variant noprice '/^cost = /d; s/node_hour_usd = [0-9.]*; //; s/minimize = "cost_usd"; //'
run noprice advise "$work/noprice.cfg" -o "$work/noprice" -j 2
expect_status noprice 0
expect_in noprice out "no Pareto plot: the study has no prices"
check "no cost columns without prices" sh -c "! head -1 '$work/noprice/plan-advice.csv' | grep -q cost_usd"

# --- bad input: exit 3, a clear message, nothing written ---------------------------
variant deadline 's/deadline_h = 24.0;/deadline_h = 1.0;/'
run deadline advise "$work/deadline.cfg" -o "$work/deadline-out" -j 2
expect_status deadline 3
adv_line=$(grep -n '^advise = ' "$work/deadline.cfg" | cut -d: -f1)
expect_in deadline err "deadline.cfg:$adv_line: no point meets the deadline of 1 h; the closest of the"
expect_in deadline err "relax the deadline"
empty_dir deadline "$work/deadline-out"

variant budget 's/deadline_h = 24.0;/budget_usd = 100.0;/'
run budget advise "$work/budget.cfg" -o "$work/budget-out" -j 2
expect_status budget 3
expect_in budget err "no point meets the budget of 100 USD"
empty_dir budget "$work/budget-out"

cat >"$work/empty.cfg" <<EOF
profile = "$src/scenarios/profiles/dgx-h100.cfg";
model = "$src/scenarios/models/gpt2-xl.cfg";
training = { batch = 8; precision = "amp_bf16"; };
cluster = { nodes = 16; devices_per_node = 8; };
networks = ( { name = "IB"; gbps = 400.0; latency_us = 14.0; nics_per_node = 8; } );
job = { samples = 1e8; };
EOF
run empty advise "$work/empty.cfg" -o "$work/empty-out"
expect_status empty 3
expect_in empty err "the search space is empty"
empty_dir empty "$work/empty-out"

variant swept 's/mtbf_h = 6330.0;/mtbf_h = [6330.0, 3000.0];/'
run swept advise "$work/swept.cfg" -o "$work/swept-out"
expect_status swept 3
expect_in swept err "failures.mtbf_h has 2 values"
empty_dir swept "$work/swept-out"

variant missing 's/minimize = "cost_usd";/minimize = "cost_eur";/'
run missing advise "$work/missing.cfg" -o "$work/missing-out"
expect_status missing 3
expect_in missing err "advise.minimize names 'cost_eur', which is not a column of the advice"
empty_dir missing "$work/missing-out"

it_end

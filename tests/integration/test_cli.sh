#!/usr/bin/env bash
# Integration test of the ddpsim command line: help and version, usage
# errors, `simulate` on the shipped study (CSV columns and row count), the
# trace JSON, determinism (same seed, same bytes; other seed, other bytes;
# any number of jobs) and sharding (the shards' rows are the whole study's).
#
#   test_cli.sh DDPSIM_BINARY SOURCE_DIR WORK_DIR
set -u

bin=${1:?usage: test_cli.sh DDPSIM_BINARY SOURCE_DIR WORK_DIR}
src=${2:?source dir}
work=${3:?work dir}

. "$src/tests/integration/need.sh"
need_tools test_cli python3

rm -rf "$work"
mkdir -p "$work"
failures=0
checks=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run NAME ARGS...: runs the binary, keeps stdout/stderr in $work/NAME.{out,err}
# and the exit status in $status.
run() {
  local name=$1
  shift
  "$bin" "$@" >"$work/$name.out" 2>"$work/$name.err"
  status=$?
}

expect_status() { # NAME WANT
  checks=$((checks + 1))
  [ "$status" -eq "$2" ] || fail "$1: exit status $status, expected $2 (stderr: $(head -c 400 "$work/$1.err"))"
}

expect_in() { # NAME out|err TEXT
  checks=$((checks + 1))
  grep -qF -- "$3" "$work/$1.$2" || fail "$1: std$2 lacks '$3' (got: $(head -c 400 "$work/$1.$2"))"
}

# --- help and version -----------------------------------------------------------
run help --help
expect_status help 0
expect_in help out simulate
expect_in help out plot
expect_in help out "Exit status"

run help_short -h
expect_status help_short 0
expect_in help_short out simulate

run version --version
expect_status version 0
checks=$((checks + 1))
grep -qE '^ddpsim [0-9]+\.[0-9]+\.[0-9]+$' "$work/version.out" || fail "version: '$(cat "$work/version.out")' is not 'ddpsim X.Y.Z'"

run help_simulate help simulate
expect_status help_simulate 0
expect_in help_simulate out "Usage: ddpsim simulate SCENARIO"
expect_in help_simulate out "--shard"
expect_in help_simulate out "--seed"

run help_plot help plot
expect_status help_plot 0
expect_in help_plot out "Usage: ddpsim plot"

# The README's usage line of a command names every option its help lists
# (short or long form), so that what the walkthrough uses is in the summary.
readme_names_options() { # COMMAND
  "$bin" help "$1" > "$work/help_$1.out" 2>&1 || return 0 # not in this build (validate without the runtime)
  checks=$((checks + 1))
  python3 - "$src/README.md" "$work/help_$1.out" "$1" <<'PY' || fail "README's usage of '$1' lacks options of its help"
import re, sys
readme, help_text, cmd = sys.argv[1:]
usage = open(readme).read().split("## The `ddpsim` command")[1]
line = [l for l in usage.splitlines() if l.startswith("ddpsim %s " % cmd)][0]
words = set(re.findall(r"-[\w-]+", line))
section, missing = False, []
for l in open(help_text):  # the options: from "Options" to the next blank line
    if section and l == "\n":
        break
    section = section or l.startswith("Options")
    m = re.match(r"^ {2,6}(?:(-\w), )?(--[\w-]+) ", l) if section else None
    if m and not (m.group(1) in words or m.group(2) in words):
        missing.append(m.group(2))
if missing:
    print("README's 'ddpsim %s' line lacks %s" % (cmd, " ".join(missing)), file=sys.stderr)
    sys.exit(1)
PY
}
readme_names_options validate
readme_names_options collective

# A one-rank profile (no collectives) loads, and plotting its fits says why not.
run plot_fit_one_rank plot fit "$src/scenarios/profiles/h200-1gpu.cfg" -o "$work/plots"
expect_status plot_fit_one_rank 3
expect_in plot_fit_one_rank err "no collective entries to plot"
expect_in plot_fit_one_rank err "--nproc 2 or more"

# The tables `plot` derives for gnuplot: a point without a step time or a cost
# (an empty cell) is left out, never written as nan or inf. A stand-in gnuplot
# keeps them (plot removes them after).
mkdir -p "$work/fakegp" "$work/gpdata"
cat > "$work/fakegp/gnuplot" <<'EOF'
#!/usr/bin/env bash
for k in data breaks front; do
  f=$(printf '%s\n' "$2" | sed -n "s/.*\b$k='\([^']*\)'.*/\1/p")
  if [ -n "$f" ]; then cp "$f" "$GP_KEEP/$k.csv"; fi
done
printf '%s\n' "$2" >"$GP_KEEP/vars"
EOF
chmod +x "$work/fakegp/gnuplot"
printf '%s\n' model,nodes,network,gbps,compression,step_s,status m,2,n1,1,none,0.2,ok m,2,n1,1,fp16,0.1,ok \
  m,2,n10,10,none,0.1,ok m,2,n10,10,fp16,,timeout m,2,n100,100,none,0.05,ok m,2,n100,100,fp16,0.06,ok >"$work/comp.csv"
GP_KEEP="$work/gpdata" PATH="$work/fakegp:$PATH" run plot_comp_gaps plot compression "$work/comp.csv"
expect_status plot_comp_gaps 0
checks=$((checks + 1))
python3 - "$work/gpdata/data.csv" "$work/gpdata/breaks.csv" <<'EOF' || fail "plot_comp_gaps: the speedup tables are not as expected"
import csv, sys
for p in sys.argv[1:]:
    assert "nan" not in open(p).read().lower() and "inf" not in open(p).read().lower(), open(p).read()
rows = list(csv.DictReader(open(sys.argv[1])))
assert [(float(r["gbps"]), round(float(r["speedup"]), 6)) for r in rows] == [(1, 2), (100, round(0.05 / 0.06, 6))], rows
assert len(list(csv.DictReader(open(sys.argv[2])))) == 1
EOF
printf '%s\n' rank,feasible,pareto,time_to_train_h,cost_usd,why 1,1,1,10,100,x 2,1,1,5,,y 3,1,1,2,300,z >"$work/adv.csv"
GP_KEEP="$work/gpdata" PATH="$work/fakegp:$PATH" run plot_front_gaps plot pareto "$work/adv.csv"
expect_status plot_front_gaps 0
checks=$((checks + 1))
[ "$(cat "$work/gpdata/front.csv")" = "$(printf 'time_to_train_h,cost_usd\n2,300\n10,100')" ] ||
  fail "plot_front_gaps: the front is $(cat "$work/gpdata/front.csv")"

# A name the plot scripts cannot label is refused at the line the file has
# it on, past a blank line and a quoted field over two lines.
for bad in model network; do
  m=m n=n
  if [ $bad = model ]; then m="m x" want="m x"; else n="n x" want="n x/nccl"; fi
  printf 'model,nodes,gpus_per_node,gpus,network,backend,samples_per_s,scaling_eff,status,note\nm,1,8,8,n,nccl,100,1,ok,a\n\nm,2,8,16,n,nccl,190,0.95,ok,"two\nlines"\n%s,4,8,32,%s,nccl,370,0.92,ok,c\n' \
    "$m" "$n" >"$work/label-$bad.csv"
  GP_KEEP="$work/gpdata" PATH="$work/fakegp:$PATH" run plot_label_$bad plot scaling "$work/label-$bad.csv"
  expect_status plot_label_$bad 3
  expect_in plot_label_$bad err "label-$bad.csv:6: '$want'"
  expect_in plot_label_$bad err "holds a space or quote"
done

# The scaling plot tells apart every setting the study varies, not only the
# network and backend: one curve per precision and batch here, each curve's
# points in order of GPUs, the point that timed out left out.
printf '%s\n' model,nodes,gpus_per_node,gpus,network,backend,precision,batch,samples_per_s,scaling_eff,status \
  m,1,8,8,n,nccl,fp32,8,100,1,ok m,2,8,16,n,nccl,fp32,8,190,0.95,ok m,1,8,8,n,nccl,bf16,8,300,1,ok \
  m,2,8,16,n,nccl,bf16,8,,,timeout m,1,8,8,n,nccl,fp32,16,120,1,ok m,2,8,16,n,nccl,fp32,16,230,0.96,ok >"$work/scal.csv"
GP_KEEP="$work/gpdata" PATH="$work/fakegp:$PATH" run plot_scaling_dims plot scaling "$work/scal.csv"
expect_status plot_scaling_dims 0
expect_in plot_scaling_dims out "scal-m-scaling.png"
checks=$((checks + 1))
grep -q "curves='n/nccl/fp32/batch=8 n/nccl/bf16/batch=8 n/nccl/fp32/batch=16'" "$work/gpdata/vars" ||
  fail "plot_scaling_dims: curves not told apart: $(cat "$work/gpdata/vars")"
checks=$((checks + 1))
[ "$(cut -d, -f2,3 "$work/gpdata/data.csv" | tr '\n' ' ')" = \
  "curve,gpus n/nccl/fp32/batch=8,8 n/nccl/fp32/batch=8,16 n/nccl/bf16/batch=8,8 n/nccl/fp32/batch=16,8 n/nccl/fp32/batch=16,16 " ] ||
  fail "plot_scaling_dims: the table is $(cat "$work/gpdata/data.csv")"

# The scaling plot's title names a compression only where some row is
# compressed: all none says nothing; a sweep draws its baseline, none.
printf '%s\n' model,nodes,gpus,network,backend,compression,samples_per_s,scaling_eff,status \
  m,1,8,n,nccl,none,100,1,ok m,2,16,n,nccl,none,190,0.95,ok >"$work/nocomp.csv"
GP_KEEP="$work/gpdata" PATH="$work/fakegp:$PATH" run plot_no_comp plot scaling "$work/nocomp.csv"
expect_status plot_no_comp 0
checks=$((checks + 1))
grep -q "comp='';" "$work/gpdata/vars" || fail "plot_no_comp: an uncompressed study titled: $(cat "$work/gpdata/vars")"
printf '%s\n' m,1,8,n,nccl,fp16,150,1,ok m,2,16,n,nccl,fp16,290,0.97,ok >>"$work/nocomp.csv"
GP_KEEP="$work/gpdata" PATH="$work/fakegp:$PATH" run plot_comp_sweep plot scaling "$work/nocomp.csv"
expect_status plot_comp_sweep 0
checks=$((checks + 1))
grep -q "comp='none';" "$work/gpdata/vars" || fail "plot_comp_sweep: the baseline not named: $(cat "$work/gpdata/vars")"

run simulate_help simulate --help
expect_status simulate_help 0
expect_in simulate_help out "Usage: ddpsim simulate"

# --- usage errors: exit 2 and a pointer to the help -------------------------
# Unknown command: the pointer is to the command list (`ddpsim --help`), as
# `ddpsim help` with no command prints it.
run unknown_cmd frobnicate
expect_status unknown_cmd 2
expect_in unknown_cmd err frobnicate
checks=$((checks + 1))
grep -qE "ddpsim (--)?help" "$work/unknown_cmd.err" || fail "unknown_cmd: no pointer to ddpsim help"

run no_args
expect_status no_args 2
expect_in no_args err "Usage: ddpsim COMMAND"

run help_unknown help frobnicate
expect_status help_unknown 2
checks=$((checks + 1))
grep -qE "ddpsim (--)?help" "$work/help_unknown.err" || fail "help_unknown: no pointer to ddpsim help"

run unknown_opt simulate --frobnicate "$src/scenarios/gigabit-vs-ib.cfg"
expect_status unknown_opt 2
expect_in unknown_opt err "unknown option '--frobnicate'"
expect_in unknown_opt err "ddpsim help simulate"

run missing_arg simulate
expect_status missing_arg 2
expect_in missing_arg err "missing SCENARIO"
expect_in missing_arg err "ddpsim help simulate"

run missing_value simulate "$src/scenarios/gigabit-vs-ib.cfg" --jobs
expect_status missing_value 2
expect_in missing_value err "needs a value"
expect_in missing_value err "ddpsim help simulate"

run two_files simulate "$src/scenarios/gigabit-vs-ib.cfg" "$src/tests/data/mlp-test.cfg"
expect_status two_files 2
expect_in two_files err "ddpsim help simulate"

run bad_jobs simulate "$src/scenarios/gigabit-vs-ib.cfg" --jobs 0 -o "$work/never"
expect_status bad_jobs 2
expect_in bad_jobs err "--jobs"

run bad_shard simulate "$src/scenarios/gigabit-vs-ib.cfg" --shard 2/2 -o "$work/never"
expect_status bad_shard 2
expect_in bad_shard err "--shard"

run bad_seed simulate "$src/scenarios/gigabit-vs-ib.cfg" --seed 12x -o "$work/never"
expect_status bad_seed 2
checks=$((checks + 1))
[ ! -e "$work/never" ] || fail "a usage error created the output directory"

run missing_file simulate "$work/no-such-scenario.cfg" -o "$work/never"
expect_status missing_file 3
expect_in missing_file err "no-such-scenario.cfg"

# A profile's name may not be empty: --name "" is refused before any work,
# not written into a profile that ddpsim then cannot read.
run import_empty_name import nccl-tests --base "$src/scenarios/profiles/dgx-h100.cfg" --name "" \
  --out "$work/empty-name.cfg" "$src/tests/data/nccl-tests/all_reduce_perf.txt"
expect_status import_empty_name 2
expect_in import_empty_name err "--name expects the profile's name"
checks=$((checks + 1))
[ ! -e "$work/empty-name.cfg" ] || fail "import nccl-tests --name '': a profile was written"
if "$bin" help calibrate >/dev/null 2>&1; then
  run calibrate_empty_name calibrate --quick --name "" --out "$work/empty-name.cfg"
  expect_status calibrate_empty_name 2
  expect_in calibrate_empty_name err "--name expects the profile's name"
fi

# An empty --profile is refused, not taken as no --profile (the scenario's
# own profile, silently); an empty merge -o is not the root directory.
run empty_profile simulate "$src/scenarios/gigabit-vs-ib.cfg" --profile "" -o "$work/never"
expect_status empty_profile 2
expect_in empty_profile err "--profile is empty"
checks=$((checks + 1))
[ ! -e "$work/never" ] || fail "simulate --profile '': the output directory was made"
run empty_merge_dir merge "$src/scenarios/gigabit-vs-ib.cfg" --shards 2 -o ""
expect_status empty_merge_dir 2
expect_in empty_merge_dir err "-o is empty"

# "-0" given for a number is 0, and is printed as 0, not "-0".
printf 'rank,attempt,step,step_s,compute_s,comm_s,exposed_comm_s\n0,0,0,0.1,0.05,0.04,0.03\n' >"$work/m0.csv"
if "$bin" help validate >/dev/null 2>&1; then
  printf '%s\n' 'name = "one";' "profile = \"$src/tests/data/cpu-test.cfg\";" \
    "model = \"$src/scenarios/models/mlp-small.cfg\";" 'training = { batch = 32; };' \
    'cluster = { nodes = 1; devices_per_node = 1; };' 'networks = ( { name = "n"; gbps = 1.0; latency_us = 30.0; } );' \
    'ddp = { backend = "gloo"; };' >"$work/one.cfg"
  run tol_minus_zero validate "$work/one.cfg" --measured "$work/m0.csv" --skip 0 --tolerance -0
  expect_status tol_minus_zero 6
  expect_in tol_minus_zero out "the tolerance of 0.00%"
fi

# --- simulate the shipped study ----------------------------------------------
columns="model,nodes,gpus_per_node,gpus,network,backend,bucket_cap_mb,find_unused_parameters,step_s,compute_s,comm_s,exposed_comm_s,samples_per_s,scaling_eff"
run gig simulate "$src/scenarios/gigabit-vs-ib.cfg" -o "$work/gig" --trace "$work/gig/trace.json"
expect_status gig 0
csv="$work/gig/gigabit-vs-ib.csv"
checks=$((checks + 1))
if [ ! -s "$csv" ]; then
  fail "gig: no CSV at $csv"
else
  header=$(head -n 1 "$csv")
  IFS=, read -r -a have <<<"$header"
  IFS=, read -r -a want <<<"$columns"
  for c in "${want[@]}"; do
    checks=$((checks + 1))
    found=0
    for h in "${have[@]}"; do [ "$h" = "$c" ] && found=1; done
    [ $found -eq 1 ] || fail "gig: CSV header lacks column '$c' (header: $header)"
  done
  # 2 models x 4 networks x 2 backends x 7 node counts.
  rows=$(($(wc -l <"$csv") - 1))
  checks=$((checks + 1))
  [ "$rows" -eq 112 ] || fail "gig: $rows data rows, expected 112"
  # ...and they are 112 different points, every row as wide as the header.
  checks=$((checks + 1))
  distinct=$(python3 - "$csv" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
width_ok = all(None not in r and None not in r.values() for r in rows)
keys = {(r["model"], r["network"], r["backend"], r["nodes"]) for r in rows}
print(len(keys) if width_ok else -1)
EOF
)
  [ "$distinct" = 112 ] || fail "gig: $distinct distinct (model, network, backend, nodes) points, expected 112"
fi
# The trace: valid JSON with traceEvents.
checks=$((checks + 1))
if ! python3 -m json.tool "$work/gig/trace.json" >/dev/null 2>"$work/json.err"; then
  fail "trace: not valid JSON: $(head -c 300 "$work/json.err")"
fi
checks=$((checks + 1))
grep -q '"traceEvents"' "$work/gig/trace.json" || fail "trace: no traceEvents"
checks=$((checks + 1))
python3 - "$work/gig/trace.json" <<'EOF' || fail "trace: no complete (X) events with ts and dur"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
x = [e for e in ev if e.get("ph") == "X"]
sys.exit(0 if x and all("ts" in e and "dur" in e and e["dur"] >= 0 for e in x) else 1)
EOF

# --- determinism ------------------------------------------------------------------
jit="$src/tests/data/jitter-test.cfg"
for r in a b; do
  run "seed5_$r" simulate "$jit" --seed 5 -o "$work/seed5_$r" -q
  expect_status "seed5_$r" 0
done
run seed6 simulate "$jit" --seed 6 -o "$work/seed6" -q
expect_status seed6 0
run jobs1 simulate "$jit" --seed 5 --jobs 1 -o "$work/jobs1" -q
expect_status jobs1 0
run jobs2 simulate "$jit" --seed 5 --jobs 2 -o "$work/jobs2" -q
expect_status jobs2 0
checks=$((checks + 1))
cmp -s "$work/seed5_a/jitter-test.csv" "$work/seed5_b/jitter-test.csv" ||
  fail "determinism: two runs with --seed 5 differ"
checks=$((checks + 1))
cmp -s "$work/jobs1/jitter-test.csv" "$work/jobs2/jitter-test.csv" ||
  fail "determinism: --jobs 1 and --jobs 2 differ"
checks=$((checks + 1))
cmp -s "$work/jobs1/jitter-test.csv" "$work/seed5_a/jitter-test.csv" ||
  fail "determinism: --jobs 1 differs from the default number of jobs"
checks=$((checks + 1))
if cmp -s "$work/seed5_a/jitter-test.csv" "$work/seed6/jitter-test.csv"; then
  fail "determinism: --seed 5 and --seed 6 give the same CSV (is the jitter used?)"
fi
# --trace leaves the CSV as it is, whichever point is traced and whichever
# worker runs it: points that share a step level (here the job-level
# settings of plan.cfg, cut down) share the untraced step.
sed -e "s|\"profiles/|\"$src/scenarios/profiles/|; s|\"models/|\"$src/scenarios/models/|" \
  -e 's/nodes = \[16, 32, 64, 128, 256, 512\]/nodes = [16, 32]/; s/replications = 100;/replications = 10;/' \
  -e 's/every_s = \[300.0, 600.0, 1200.0, 1800.0, 3600.0\]/every_s = [600.0, 1200.0]/' \
  "$src/scenarios/plan.cfg" >"$work/plan-small.cfg"
run plan_untraced simulate "$work/plan-small.cfg" --jobs 2 -o "$work/plan_untraced" -q
expect_status plan_untraced 0
for k in 1 2 3; do
  run "plan_traced$k" simulate "$work/plan-small.cfg" --jobs 2 --trace "$work/plan$k.json" --trace-point $k \
    -o "$work/plan_traced$k" -q
  expect_status "plan_traced$k" 0
  checks=$((checks + 1))
  cmp -s "$work/plan_untraced/plan.csv" "$work/plan_traced$k/plan.csv" ||
    fail "determinism: --trace --trace-point $k changes the CSV"
done
# The seed in the file is the default: no --seed equals --seed 7 (jitter-test.cfg).
run seed_default simulate "$jit" -o "$work/seed_default" -q
run seed7 simulate "$jit" --seed 7 -o "$work/seed7" -q
checks=$((checks + 1))
cmp -s "$work/seed_default/jitter-test.csv" "$work/seed7/jitter-test.csv" ||
  fail "determinism: the scenario's seed 7 and --seed 7 differ"

# --- sharding ------------------------------------------------------------------------
run shard0 simulate "$jit" --seed 5 --shard 0/2 -o "$work/shards" -q
expect_status shard0 0
run shard1 simulate "$jit" --seed 5 --shard 1/2 -o "$work/shards" -q
expect_status shard1 0
s0="$work/shards/jitter-test.shard-0-of-2.csv"
s1="$work/shards/jitter-test.shard-1-of-2.csv"
whole="$work/seed5_a/jitter-test.csv"
checks=$((checks + 1))
if [ ! -s "$s0" ] || [ ! -s "$s1" ]; then
  fail "shards: missing $s0 or $s1"
else
  # Each shard begins with its stamp; shard 0 then carries the header, shard
  # 1 only rows, so without their stamps they concatenate.
  checks=$((checks + 1))
  [ "$(sed -n 2p "$s0")" = "$(head -n 1 "$whole")" ] || fail "shards: shard 0 has no header after its stamp"
  checks=$((checks + 1))
  ! grep -q '^model,' "$s1" || fail "shards: shard 1 repeats the header"
  checks=$((checks + 1))
  [ "$(head -c 16 "$s0")" = "# ddpsim shard 0" ] && [ "$(head -c 16 "$s1")" = "# ddpsim shard 1" ] ||
    fail "shards: a shard does not begin with its stamp"
  grep -hv '^# ddpsim shard ' "$s0" "$s1" >"$work/shards/concat.csv"
  checks=$((checks + 1))
  if ! diff <(sort "$work/shards/concat.csv") <(sort "$whole") >"$work/shards/diff.txt"; then
    fail "shards: concatenated shards differ from the whole study as a multiset of rows ($(head -c 400 "$work/shards/diff.txt"))"
  fi
  # Both shards hold rows (the split is real).
  checks=$((checks + 1))
  [ "$(wc -l <"$s1")" -gt 0 ] && [ "$(wc -l <"$s0")" -gt 1 ] || fail "shards: one shard is empty"
fi

# --- work bounds: a failure study refused before it runs -----------------------------
# The shipped node-failure study at mtbf_h = 1: interrupted every 1.8 s, it would take
# about 1e13 events. Refused at once, at the line of mtbf_h, with the estimate and what
# to do; nothing written.
sed -e 's/mtbf_h = 6330.0;/mtbf_h = 1.0;/' -e "s#\"profiles/#\"$src/scenarios/profiles/#" \
  -e "s#\"models/#\"$src/scenarios/models/#" "$src/scenarios/node-failure.cfg" >"$work/nf-mtbf1.cfg"
mtbf_line=$(grep -n 'mtbf_h = 1.0;' "$work/nf-mtbf1.cfg" | cut -d: -f1)
run nf_mtbf1 simulate "$work/nf-mtbf1.cfg" -o "$work/nf-mtbf1"
expect_status nf_mtbf1 3
expect_in nf_mtbf1 err "nf-mtbf1.cfg:$mtbf_line: this study would take about"
expect_in nf_mtbf1 err "over simulation.max_events = 200000000 a point"
expect_in nf_mtbf1 err "Raise simulation.max_events"
checks=$((checks + 1))
[ -z "$(ls -A "$work/nf-mtbf1" 2>/dev/null)" ] || fail "nf_mtbf1: a refused study wrote $(ls "$work/nf-mtbf1")"
# --- options that would do nothing: usage errors, not silence --------------------------
run trace_point_alone simulate "$src/scenarios/gigabit-vs-ib.cfg" --trace-point 3 -o "$work/never"
expect_status trace_point_alone 2
expect_in trace_point_alone err "give --trace FILE too"
# A trace named as the CSV would be written, then replaced by the CSV: it is
# refused before anything runs, under any spelling of the path.
mkdir -p "$work/same"
run trace_is_csv simulate "$src/scenarios/gigabit-vs-ib.cfg" -o "$work/same" --trace "$work/same/../same/gigabit-vs-ib.csv"
expect_status trace_is_csv 2
expect_in trace_is_csv err "is the CSV this run writes"
checks=$((checks + 1))
[ -z "$(ls -A "$work/same")" ] || fail "trace_is_csv: wrote $(ls -A "$work/same")"
# -o where a directory cannot be: a file on the way, or a link to nowhere,
# is the user's to change (exit 2), and says so.
: >"$work/a-file"
run out_under_file simulate "$src/scenarios/gigabit-vs-ib.cfg" -o "$work/a-file/sub" -q
expect_status out_under_file 2
expect_in out_under_file err "a part of that path is a file"
ln -sfn "$work/nowhere" "$work/dangling"
run out_dangling simulate "$src/scenarios/gigabit-vs-ib.cfg" -o "$work/dangling" -q
expect_status out_dangling 2
expect_in out_dangling err "is a symbolic link that leads nowhere"
checks=$((checks + 1))
[ ! -e "$work/nowhere" ] || fail "out_dangling: created the link's target"
run trace_ranks_alone simulate "$src/scenarios/gigabit-vs-ib.cfg" --trace-ranks 4 -o "$work/never"
expect_status trace_ranks_alone 2
run plot_shard simulate "$src/scenarios/gigabit-vs-ib.cfg" --plot --shard 0/2 -o "$work/never"
expect_status plot_shard 2
expect_in plot_shard err "--plot draws the whole study"
run shard_overflow simulate "$src/scenarios/gigabit-vs-ib.cfg" --shard 0/4294967297 -o "$work/never"
expect_status shard_overflow 2
expect_in shard_overflow err "--shard expects I/N"
printf 'rank,attempt,step,step_s,compute_s,comm_s,exposed_comm_s\n0,0,0,0.1,0.05,0.04,0.03\n' >"$work/m.csv"
run label_alone validate "$src/scenarios/gigabit-vs-ib.cfg" --measured "$work/m.csv" --label x
expect_status label_alone 2
expect_in label_alone err "give --append CSV too"
# A measured run with a negative step time: bad input at its line.
printf 'rank,attempt,step,step_s,compute_s,comm_s,exposed_comm_s\n0,0,0,-0.1,0.05,0.04,0.03\n' >"$work/neg.csv"
run negative_step validate "$src/scenarios/gigabit-vs-ib.cfg" --measured "$work/neg.csv" --skip 0
expect_status negative_step 3
expect_in negative_step err "neg.csv:2: column 'step_s' holds -0.1"
# A CSV holds a row per rank and step: the output counts steps, and the rows apart.
{
  echo 'rank,attempt,step,step_s,compute_s,comm_s,exposed_comm_s'
  for r in 0 1 2 3 4 5 6 7; do for k in 0 1 2 3 4; do echo "$r,0,$k,0.03,0.029,0.002,0.001"; done; done
} >"$work/eight.csv"
run csv_steps validate "$src/scenarios/gigabit-vs-ib.cfg" --measured "$work/eight.csv"
expect_status csv_steps 0
expect_in csv_steps out "2 steps of 8 ranks from step 3 (16 rows)"
# The run's directory given for its steps.csv: said so, not "the file is empty".
mkdir -p "$work/a-run"
run measured_dir validate "$src/scenarios/gigabit-vs-ib.cfg" --measured "$work/a-run"
expect_status measured_dir 3
expect_in measured_dir err "a-run' is a directory, not a CSV file"
checks=$((checks + 1))
[ ! -e "$work/never" ] || fail "a usage error created the output directory"

run bad_progress simulate "$src/scenarios/gigabit-vs-ib.cfg" --progress maybe -o "$work/never"
expect_status bad_progress 2
expect_in bad_progress err "--progress expects on or off"
# --- ddpsim model: buckets as CSV ---------------------------------------------------
run help_model help model
expect_status help_model 0
expect_in help_model out "Usage: ddpsim model MODEL"
expect_in help_model out "--find-unused-parameters"
mlp="$src/scenarios/models/mlp.cfg"
run model_rebuilt model "$mlp"
expect_status model_rebuilt 0
run model_first model "$mlp" --iteration first
expect_status model_first 0
checks=$((checks + 1))
[ "$(head -n 1 "$work/model_rebuilt.out")" = "bucket,bytes,params" ] || fail "model: header is '$(head -n 1 "$work/model_rebuilt.out")'"
# The first iteration is one bucket of every tensor in parameter order; the
# rebuilt buckets hold the same tensors and bytes, in more than one bucket.
checks=$((checks + 1))
[ "$(tail -n +2 "$work/model_first.out" | wc -l)" -eq 1 ] || fail "model: the first iteration has more than one bucket"
checks=$((checks + 1))
[ "$(tail -n +2 "$work/model_rebuilt.out" | wc -l)" -gt 1 ] || fail "model: the rebuilt buckets are one bucket"
sum_bytes() { awk -F, 'NR > 1 { s += $2 } END { print s }' "$1"; }
names() { tail -n +2 "$1" | cut -d, -f3 | tr ' ' '\n' | sort; }
checks=$((checks + 1))
[ "$(sum_bytes "$work/model_first.out")" = "$(sum_bytes "$work/model_rebuilt.out")" ] || fail "model: bytes differ between iterations"
checks=$((checks + 1))
[ "$(names "$work/model_first.out")" = "$(names "$work/model_rebuilt.out")" ] || fail "model: tensors differ between iterations"
checks=$((checks + 1))
[ "$(tail -n 1 "$work/model_first.out" | cut -d, -f3 | cut -d' ' -f1-2)" = "fc1.weight fc1.bias" ] || fail "model: the first iteration's bucket does not start with fc1.weight fc1.bias"
# find_unused_parameters: the same buckets in both iterations; -o writes what stdout gets.
run model_unused model "$mlp" --find-unused-parameters
expect_status model_unused 0
run model_unused_first model "$mlp" --find-unused-parameters --iteration first -o "$work/unused.csv"
expect_status model_unused_first 0
checks=$((checks + 1))
cmp -s "$work/model_unused.out" "$work/unused.csv" || fail "model: find_unused_parameters' first iteration differs from its later ones"
# --bucket-cap-mb alone sets the first bucket's cap too, as PyTorch does.
run model_cap model "$mlp" --bucket-cap-mb 10
run model_cap_first model "$mlp" --bucket-cap-mb 10 --first-bucket-mb 10
checks=$((checks + 1))
cmp -s "$work/model_cap.out" "$work/model_cap_first.out" || fail "model: --bucket-cap-mb alone does not cap the first bucket at it"
run model_bad_iter model "$mlp" --iteration second
expect_status model_bad_iter 2
expect_in model_bad_iter err "--iteration expects first or rebuilt"
run model_bad_cap model "$mlp" --bucket-cap-mb 0
expect_status model_bad_cap 2
run model_two model "$mlp" "$mlp"
expect_status model_two 2
# A traced step whose trace did not say its parameters' sizes has no tensors:
# no buckets, said naming the file.
cat >"$work/notensors.cfg" <<'EOF'
model = {
  name = "notensors";
  layers = ( { name = "unattributed"; kind = "other"; params = [ ]; fwd_flops = 0.0; fwd_ms = 0.0; bwd_ms = 0.0; } );
  measured_batch = 32.0;
  traced = {
    device = "NVIDIA A100-SXM4-80GB"; world_size = 2; ddp = false; precision = "fp32";
    pieces = ( { kind = "other"; host_us = 10.0; dev_us = 20.0; } );
  };
};
EOF
run model_notensors model "$work/notensors.cfg"
expect_status model_notensors 3
expect_in model_notensors err "notensors.cfg has no parameter tensors"
run model_missing model "$work/no-such-model.cfg"
expect_status model_missing 3
expect_in model_missing err "no-such-model.cfg"

# --- no temp files left behind ------------------------------------------------------
checks=$((checks + 1))
# --- a GPU trace: the traced job's scenario replays its step; validate takes the trace ----
gpu_trace="$src/tests/data/torch-trace/gpu-ddp.json"
run gpu_nodir import torch-trace -o "$work/gpu/fx.cfg" --scenario "$work/gpu/fx-job.cfg" "$gpu_trace"
expect_status gpu_nodir 2   # its directory does not exist, and is not created for it
mkdir -p "$work/gpu"
run gpu_import import torch-trace -o "$work/gpu/fx.cfg" --scenario "$work/gpu/fx-job.cfg" "$gpu_trace"
expect_status gpu_import 0
expect_in gpu_import err "steps: 3 of 4 used (1 warm-up"
checks=$((checks + 1))
[ -f "$work/gpu/fx-job.profile.cfg" ] || fail "gpu_import: no profile beside the scenario"
run gpu_sim simulate "$work/gpu/fx-job.cfg" -o "$work/gpu/out" -q
expect_status gpu_sim 0
checks=$((checks + 1))
python3 - "$work/gpu/out/fx-job.csv" <<'EOF' || fail "gpu_sim: the traced job does not replay the trace's 1.265 ms step"
import csv, sys
step = float(next(csv.DictReader(open(sys.argv[1])))["step_s"])
assert abs(step - 1.265e-3) < 0.01 * 1.265e-3, step
EOF
# The traced host had 8 GPUs and the job used 2: a what-if on 4 or 8 of
# them runs, on 16 (more than the host had) is refused at its line.
sed 's/devices_per_node = 2;/devices_per_node = [2, 8];/' "$work/gpu/fx-job.cfg" >"$work/gpu/fx-x4.cfg"
run gpu_host simulate "$work/gpu/fx-x4.cfg" -o "$work/gpu/x4" -q
expect_status gpu_host 0
sed 's/devices_per_node = 2;/devices_per_node = [2, 16];/' "$work/gpu/fx-job.cfg" >"$work/gpu/fx-x8.cfg"
run gpu_beyond_host simulate "$work/gpu/fx-x8.cfg" -o "$work/gpu/x8" -q
expect_status gpu_beyond_host 3
expect_in gpu_beyond_host err "devices_per_node = 16, but a node holds 8 GPUs"
run gpu_validate validate "$work/gpu/fx-job.cfg" --measured "$gpu_trace" --skip 1 --tolerance 0.02
expect_status gpu_validate 0
expect_in gpu_validate out "3 steps of 2 ranks"
# Without --skip a trace's leading warm-up steps are left out by the importer's
# rule, and the output says how many and why.
run gpu_validate_warm validate "$work/gpu/fx-job.cfg" --measured "$gpu_trace" --tolerance 0.02
expect_status gpu_validate_warm 0
expect_in gpu_validate_warm out "3 steps of 2 ranks from step 1"
expect_in gpu_validate_warm out "1 leading step left out as warm-up: more than 10% from the median"
# Appended rows: what a trace does not measure (compute, exposed communication)
# and its error are empty cells, never "nan"; a label with a comma is quoted.
for k in 1 2; do
  run gpu_append$k validate "$work/gpu/fx-job.cfg" --measured "$gpu_trace" --skip 1 --append "$work/gpu/v.csv" \
    --label "fx,run $k"
  expect_status gpu_append$k 0
done
checks=$((checks + 1))
python3 - "$work/gpu/v.csv" <<'EOF' || fail "gpu_append: the appended rows are not as expected"
import csv, sys
text = open(sys.argv[1]).read()
assert "nan" not in text.lower() and "inf" not in text.lower(), text
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["label"] for r in rows] == ["fx,run 1", "fx,run 2"], rows
for r in rows:
    assert r["meas_compute_s"] == r["err_compute"] == r["meas_exposed_s"] == r["err_exposed"] == "", r
    assert float(r["meas_step_s"]) > 0 and abs(float(r["err_step"])) < 0.02, r
EOF
# A traced model records no activation sizes: at a batch above the traced one
# its memory estimate (mem_GB) is the model state's alone, and stderr says so.
checks=$((checks + 1))
! grep -q "warning" "$work/gpu_sim.err" || fail "gpu_sim: a warning at the traced batch"
sed 's/batch = 32;/batch = [32, 4096];/' "$work/gpu/fx-job.cfg" >"$work/gpu/fx-b.cfg"
run gpu_sim_batch simulate "$work/gpu/fx-b.cfg" -o "$work/gpu/out-b" -q
expect_status gpu_sim_batch 0
expect_in gpu_sim_batch err "warning: model \"fx\" records no activation sizes"
expect_in gpu_sim_batch err "batch 4096"
# Communication that is not DDP's replays as measured, at the traced world: a
# point of another world says so on stderr (its time is not predicted), the
# traced world does not.
sed 's/void fbgemm_gpu::permute_2D_lengths_kernel<int>/ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)/' \
  "$src/tests/data/torch-trace/gpu-side.json" >"$work/gpu/own-comm.json"
run gpu_own_comm import torch-trace -o "$work/gpu/oc.cfg" --scenario "$work/gpu/oc-job.cfg" "$work/gpu/own-comm.json"
expect_status gpu_own_comm 0
run gpu_own_comm_sim simulate "$work/gpu/oc-job.cfg" -o "$work/gpu/oc-out" -q
expect_status gpu_own_comm_sim 0
checks=$((checks + 1))
! grep -q "warning" "$work/gpu/oc-out.err" 2>/dev/null && ! grep -q "warning" "$work/gpu_own_comm_sim.err" ||
  fail "gpu_own_comm_sim: a warning at the traced world"
sed 's/devices_per_node = 2;/devices_per_node = [2, 8];/' "$work/gpu/oc-job.cfg" >"$work/gpu/oc-x4.cfg"
run gpu_own_comm_x4 simulate "$work/gpu/oc-x4.cfg" -o "$work/gpu/oc-out" -q
expect_status gpu_own_comm_x4 0
expect_in gpu_own_comm_x4 err "warning: model \"oc\" ran communication of its own"
expect_in gpu_own_comm_x4 err "a world of 2"
# A traced model records its gradients' sizes, not their shapes: PowerSGD
# compresses none of them, and stderr says so; fp16 alone says nothing.
sed 's/ddp = { backend = "nccl";/ddp = { backend = "nccl"; compression = ["none", "fp16", "powersgd:2"];/' \
  "$work/gpu/oc-job.cfg" >"$work/gpu/oc-psgd.cfg"
run gpu_psgd simulate "$work/gpu/oc-psgd.cfg" -o "$work/gpu/oc-out" -q
expect_status gpu_psgd 0
expect_in gpu_psgd err "warning: model \"oc\" records no tensor's shape (rows), so PowerSGD"
sed 's/"powersgd:2"/"bf16"/' "$work/gpu/oc-psgd.cfg" >"$work/gpu/oc-half.cfg"
run gpu_half simulate "$work/gpu/oc-half.cfg" -o "$work/gpu/oc-out" -q
expect_status gpu_half 0
checks=$((checks + 1))
! grep -q "PowerSGD" "$work/gpu_half.err" || fail "gpu_half: a PowerSGD warning without PowerSGD"
# Side work replays as measured, at the traced batch: a point of another
# batch says so on stderr (its side streams' time is not predicted).
sed 's/batch = \([0-9]*\);/batch = [\1, 1];/' "$work/gpu/oc-job.cfg" >"$work/gpu/oc-b1.cfg"
run gpu_own_side_batch simulate "$work/gpu/oc-b1.cfg" -o "$work/gpu/oc-out" -q
expect_status gpu_own_side_batch 0
expect_in gpu_own_side_batch err "warning: model \"oc\" ran work of its own on side streams"
expect_in gpu_own_side_batch err "at batch 1 (and any batch but"
# advise says the same, once however many points it simulates.
{ cat "$work/gpu/oc-x4.cfg"; echo 'job = { samples = 100000.0; };'; } >"$work/gpu/oc-adv.cfg"
sed -i 's/batch = \([0-9]*\);/batch = [\1, 4096];/' "$work/gpu/oc-adv.cfg"
run gpu_own_comm_advise advise "$work/gpu/oc-adv.cfg" -o "$work/gpu/oc-adv" -q --no-plot
expect_status gpu_own_comm_advise 0
checks=$((checks + 1))
[ "$(grep -c 'ddpsim advise: warning: model "oc" ran communication of its own' "$work/gpu_own_comm_advise.err")" = 1 ] ||
  fail "gpu_own_comm_advise: not one warning of the traced world"
checks=$((checks + 1))
[ "$(grep -c 'ddpsim advise: warning: model "oc" records no activation sizes' "$work/gpu_own_comm_advise.err")" = 1 ] ||
  fail "gpu_own_comm_advise: not one warning of the batch above the traced one"
run gpu_scenario_cpu import torch-trace -o "$work/gpu/cpu.cfg" --scenario "$work/gpu/cpu-job.cfg" \
  "$src/tests/data/torch-trace/mlp-small-b32.json"
expect_status gpu_scenario_cpu 2
expect_in gpu_scenario_cpu err "holds no GPU work"
run gpu_missing import torch-trace -o "$work/gpu/x.cfg" "$work/gpu/no-such-trace.json.gz"
expect_status gpu_missing 3   # a path that leads nowhere is bad input
expect_in gpu_missing err "no-such-trace.json.gz"
# A step span of no time has no step time to compare: refused naming it, not
# an error of nan% (and, with --tolerance, exit 0 under "EXCEEDS").
sed 's/"name":"ProfilerStep#1","pid":1,"tid":1000,"ts":1700000002530.0,"dur":1265.0/"name":"ProfilerStep#1","pid":1,"tid":1000,"ts":1700000002530.0,"dur":0/' \
  "$gpu_trace" >"$work/gpu/step0.json"
run gpu_validate_step0 validate "$work/gpu/fx-job.cfg" --measured "$work/gpu/step0.json" --tolerance 0.05
expect_status gpu_validate_step0 3
expect_in gpu_validate_step0 err "(ProfilerStep#1) lasts 0 us"
run gpu_validate_missing validate "$work/gpu/fx-job.cfg" --measured "$work/gpu/no-such-trace.json.gz"
expect_status gpu_validate_missing 3
run gpu_base_alone import torch-trace -o "$work/gpu/x.cfg" --profile-base "$src/scenarios/profiles/dgx-a100.cfg" "$gpu_trace"
expect_status gpu_base_alone 2

# --- bench/gpu_compare.py: a predicted point that cannot run is refused only where
# a measured step is compared with it (the scenario predicts more than was measured).
printf '%s\n' model,precision,batch,step_s,status m,fp32,8,0.1,ok m,fp32,256,0.9,oom >"$work/gc-pred.csv"
printf '%s\n' model,precision,layout,batch,median_ms,p10_ms,p90_ms,steps m,fp32,-,8,110,109,111,5 >"$work/gc-meas.csv"
python3 "$src/bench/gpu_compare.py" "$work/gc-pred.csv" "$work/gc-meas.csv" >"$work/gc.out" 2>"$work/gc.err"
status=$?
expect_status gc 0
expect_in gc out "1 points (fastest layout each): step-time MAPE 9.1%"
echo m,fp32,-,256,1000,990,1010,5 >>"$work/gc-meas.csv"
python3 "$src/bench/gpu_compare.py" "$work/gc-pred.csv" "$work/gc-meas.csv" >"$work/gc_oom.out" 2>"$work/gc_oom.err"
status=$?
expect_status gc_oom 1
expect_in gc_oom err "was measured but has status oom"

left=$(find "$work" -name '*.tmp.*' | head -n 3)
[ -z "$left" ] || fail "temp files left behind: $left"

echo "test_cli: $checks checks, $failures failures"
[ "$failures" -eq 0 ]

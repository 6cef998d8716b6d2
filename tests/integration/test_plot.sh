#!/usr/bin/env bash
# Integration test of `ddpsim plot` with the real gnuplot: a plot is written
# like every other output, whole or not at all. A script that fails halfway
# and a gnuplot killed mid-write leave no PNG or SVG (and no temp file) where
# the plot would go, and a plot drawn before is left as it was.
#
#   test_plot.sh DDPSIM_BINARY SOURCE_DIR
set -u

bin=${1:?usage: test_plot.sh DDPSIM_BINARY SOURCE_DIR}
src=${2:?source dir}
. "$src/tests/integration/lib.sh"
it_begin test_plot
need_tools test_plot gnuplot cmp sed

printf '%s\n' model,nodes,gpus_per_node,gpus,network,backend,samples_per_s,scaling_eff,status \
  m,1,8,8,n,nccl,100,1,ok m,2,8,16,n,nccl,190,0.95,ok m,4,8,32,n,nccl,370,0.92,ok >"$work/scal.csv"
leftovers() { ls -A "$1" | grep -c -- '-scaling\.' || true; }

# A failing script: the SVG's second panel refers to a variable nobody set,
# after both files were opened and the PNG drawn.
mkdir -p "$work/bad" "$work/o1"
cp "$src"/plots/*.gp "$work/bad/"
sed -i '/set ylabel "scaling efficiency/i\  if (fmt eq "svg") { print no_such_variable }' "$work/bad/scaling.gp"
check "the broken script is broken where meant" grep -q no_such_variable "$work/bad/scaling.gp"
DDPSIM_PLOTS_DIR="$work/bad" run bad_script plot scaling "$work/scal.csv" -o "$work/o1"
check "a failing gnuplot fails the command" [ "$status" -ne 0 ]
check "it says gnuplot failed" grep -q "gnuplot failed" "$work/bad_script.err"
check "nothing half-written is left ($(ls -A "$work/o1" | tr '\n' ' '))" [ "$(leftovers "$work/o1")" -eq 0 ]

# The real scripts draw both files, whole.
run good plot scaling "$work/scal.csv" -o "$work/o1"
check "the plot is drawn" [ "$status" -eq 0 ]
check "PNG written" [ -s "$work/o1/scal-m-scaling.png" ]
check "SVG written whole" grep -q '</svg>' "$work/o1/scal-m-scaling.svg"
check "no temp file left ($(ls -A "$work/o1" | tr '\n' ' '))" [ "$(leftovers "$work/o1")" -eq 2 ]
cp "$work/o1/scal-m-scaling.png" "$work/o1/scal-m-scaling.svg" "$work/"

# The failing script again over that plot: the plot stays as it was.
DDPSIM_PLOTS_DIR="$work/bad" run bad_again plot scaling "$work/scal.csv" -o "$work/o1"
check "a failing gnuplot fails the command again" [ "$status" -ne 0 ]
check "the PNG drawn before is intact" cmp "$work/scal-m-scaling.png" "$work/o1/scal-m-scaling.png"
check "the SVG drawn before is intact" cmp "$work/scal-m-scaling.svg" "$work/o1/scal-m-scaling.svg"
check "no temp file left ($(ls -A "$work/o1" | tr '\n' ' '))" [ "$(leftovers "$work/o1")" -eq 2 ]

# A gnuplot killed after writing part of each file it was told to write.
mkdir -p "$work/killgp" "$work/o2"
cat >"$work/killgp/gnuplot" <<'EOF'
#!/usr/bin/env bash
for k in png svg; do
  f=$(printf '%s\n' "$2" | sed -n "s/.*\b$k='\([^']*\)'.*/\1/p")
  [ -n "$f" ] || f=$(printf '%s\n' "$2" | sed -n "s/.*\bout='\([^']*\)'.*/\1/p").$k
  printf 'half a plot' >"$f"
done
kill -KILL $$
EOF
chmod +x "$work/killgp/gnuplot"
PATH="$work/killgp:$PATH" run killed plot scaling "$work/scal.csv" -o "$work/o2"
check "a killed gnuplot fails the command" [ "$status" -ne 0 ]
check "nothing half-written is left ($(ls -A "$work/o2" | tr '\n' ' '))" [ "$(leftovers "$work/o2")" -eq 0 ]
# A plot that fails takes back the folders -o made for it, not one that was there.
PATH="$work/killgp:$PATH" run killed_new plot scaling "$work/scal.csv" -o "$work/o2/new/deeper"
check "a failed plot into a new folder fails" [ "$status" -ne 0 ]
check "... and leaves no folder it made" [ ! -e "$work/o2/new" ]
check "... but keeps the folder that was there" [ -d "$work/o2" ]

# A model whose every point timed out has nothing to draw: the others are
# drawn, it is named on stderr, and the command succeeds.
printf '%s\n' model,nodes,gpus_per_node,gpus,network,backend,samples_per_s,scaling_eff,status \
  m,1,8,8,n,nccl,100,1,ok m,2,8,16,n,nccl,190,0.95,ok late,1,8,8,n,nccl,10,1,timeout \
  late,2,8,16,n,nccl,5,0.3,timeout >"$work/late.csv"
mkdir -p "$work/o3"
run all_late plot scaling "$work/late.csv" -o "$work/o3"
check "a model that only timed out does not fail the plot" [ "$status" -eq 0 ]
check "the other model is drawn" [ -s "$work/o3/late-m-scaling.png" ]
check "none is drawn for it" [ ! -e "$work/o3/late-late-scaling.png" ]
check "it says why" grep -q "no scaling plot of late: none of its points ran" "$work/all_late.err"

# A goodput plot draws one curve per checkpoint mode and spare pool: rows
# that differ in another setting (here the failure rate, mtti_h) would share
# its curves, so the plot is left out with a note naming the setting; one
# failure rate is drawn.
printf '%s\n' model,ckpt_mode,spares,ckpt_every_s,mtti_h,goodput,goodput_lo,goodput_hi,young_s,daly_s,best_every_s,status \
  m,sync,0,300,15.6,0.76,0.75,0.77,649,646,900,ok m,sync,0,900,15.6,0.77,0.76,0.78,649,646,900,ok \
  m,sync,0,300,98.9,0.95,0.94,0.96,1632,1629,900,ok m,sync,0,900,98.9,0.96,0.95,0.97,1632,1629,900,ok \
  >"$work/mtbf.csv"
run mixed_goodput plot goodput "$work/mtbf.csv" -o "$work/o7"
check "a goodput plot of two failure rates succeeds" [ "$status" -eq 0 ]
check "it draws nothing that mixes them" [ ! -e "$work/o7/mtbf-m-goodput.png" ]
check "it names the setting that differs" grep -q "no goodput plot of m: its points differ in mtti_h (the failure rate)" \
  "$work/mixed_goodput.err"
head -n 3 "$work/mtbf.csv" >"$work/one-mtbf.csv"
run one_goodput plot goodput "$work/one-mtbf.csv" -o "$work/o7"
check "one failure rate is drawn" [ -s "$work/o7/one-mtbf-m-goodput.png" ]

# A fabric study has a point per fabric at each GPU count: the scaling plot
# draws a curve per fabric, not one curve through all of them.
printf '%s\n' model,nodes,gpus_per_node,gpus,network,backend,samples_per_s,scaling_eff,status,fabric \
  m,1,8,8,n,nccl,100,1,ok,ft-1to1 m,2,8,16,n,nccl,190,0.95,ok,ft-1to1 \
  m,1,8,8,n,nccl,99,0.99,ok,ft-3to1 m,2,8,16,n,nccl,180,0.9,ok,ft-3to1 >"$work/fab.csv"
run fabric_scaling plot scaling "$work/fab.csv" -o "$work/o9"
check "a fabric study's scaling plot is drawn" [ -s "$work/o9/fab-m-scaling.svg" ]
check "it has a curve for one fabric" grep -q "n/nccl/ft-1to1" "$work/o9/fab-m-scaling.svg"
check "and one for the other" grep -q "n/nccl/ft-3to1" "$work/o9/fab-m-scaling.svg"

# A CSV through a pipe gives its rows once: a plot whose script reads the
# CSV again (goodput, fabric, pareto) is refused (exit 2) and says to save
# it to a file, not a gnuplot failure on an empty file; a scaling plot of a
# pipe is drawn, but needs -o (a pipe has no directory to draw beside).
run pipe_goodput plot goodput <(cat "$work/one-mtbf.csv") -o "$work/o10"
check "plot goodput of a pipe: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... saying to save it to a file" grep -q "reads its CSV twice (ddpsim, then gnuplot): save it to a file" \
  "$work/pipe_goodput.err"
check "... leaving no directory" [ ! -e "$work/o10" ]
run pipe_no_out plot scaling <(cat "$work/scal.csv")
check "plot scaling of a pipe without -o: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... asking for -o DIR" grep -q "name one with -o DIR" "$work/pipe_no_out.err"
run pipe_scaling plot scaling <(cat "$work/scal.csv") -o "$work/o10"
check "plot scaling of a pipe with -o: exit 0 (got $status)" [ "$status" -eq 0 ]

# Ranks are labelled by what they are: a study on a CPU profile (simulate
# --plot, merge --plot, or plot --devices cpu) counts CPU ranks, a GPU
# study GPUs.
printf '%s\n' 'name = "cpu-plot";' "profile = \"$src/scenarios/profiles/example-2core.cfg\";" \
  "model = \"$src/scenarios/models/mlp-small.cfg\";" 'training = { batch = 16; };' \
  'cluster = { nodes = [1, 2, 4]; devices_per_node = 2; };' \
  'networks = ( { name = "1GbE"; gbps = 1.0; latency_us = 30.0; } );' >"$work/cpu-plot.cfg"
run cpu_plot simulate "$work/cpu-plot.cfg" -o "$work/o4" -q --plot
check "a CPU study plots" [ "$status" -eq 0 ]
check "its axis counts CPU ranks" grep -q "CPU ranks" "$work/o4/cpu-plot-mlp-small-scaling.svg"
check "its efficiency is against one CPU rank" grep -q "vs one CPU rank" "$work/o4/cpu-plot-mlp-small-scaling.svg"
check "it names no GPU" [ "$(grep -c GPU "$work/o4/cpu-plot-mlp-small-scaling.svg")" -eq 0 ]
for i in 0 1; do run "cpu_shard$i" simulate "$work/cpu-plot.cfg" --shard "$i/2" -o "$work/o5" -q; done
run cpu_merge merge "$work/cpu-plot.cfg" --shards 2 -o "$work/o5" --plot
check "a merged CPU study plots CPU ranks" grep -q "CPU ranks" "$work/o5/cpu-plot-mlp-small-scaling.svg"
run cpu_devices plot scaling "$work/o4/cpu-plot.csv" -o "$work/o6" --devices cpu
check "plot --devices cpu counts CPU ranks" grep -q "CPU ranks" "$work/o6/cpu-plot-mlp-small-scaling.svg"
check "a GPU CSV's axis counts GPUs" grep -q ">GPUs<" "$work/o1/scal-m-scaling.svg"
run bad_devices plot scaling "$work/scal.csv" -o "$work/o6" --devices tpu
check "plot --devices tpu is a usage error" [ "$status" -eq 2 ]
check "it says what --devices takes" grep -q "devices expects gpu or cpu" "$work/bad_devices.err"

# A job level without checkpoints (a time to train, as advise prices it) has
# no interval to plot goodput against: simulate --plot draws its scaling,
# and plot goodput says why it draws nothing.
{ cat "$work/cpu-plot.cfg"; echo 'job = { hours = 10.0; };'; } | sed 's/"cpu-plot"/"cpu-job"/' >"$work/cpu-job.cfg"
run job_plot simulate "$work/cpu-job.cfg" -o "$work/o8" -q --plot
check "a job level without checkpoints plots" [ "$status" -eq 0 ]
check "its scaling is drawn" [ -s "$work/o8/cpu-job-mlp-small-scaling.png" ]
check "no goodput plot is drawn" [ ! -e "$work/o8/cpu-job-mlp-small-goodput.png" ]
run job_goodput plot goodput "$work/o8/cpu-job.csv" -o "$work/o8"
check "plot goodput of it succeeds" [ "$status" -eq 0 ]
check "it says there is no interval" grep -q "none of its points checkpoints" "$work/job_goodput.err"
it_end

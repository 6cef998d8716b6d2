#!/usr/bin/env bash
# No command destroys what the user has: outputs named as a character device,
# a FIFO or a symlink are written through or to the link's target, never
# replaced; an output that is one of the command's own inputs is refused
# (exit 2) before anything is written; empty and impossible paths are usage
# errors; options that would do nothing are refused. An append (validate
# --append) replaces the file whole with the row added, and refuses what an
# output refuses and a file under another header.
#
#   test_outputs.sh DDPSIM_BINARY SOURCE_DIR
set -u

bin=${1:?usage: test_outputs.sh DDPSIM_BINARY SOURCE_DIR}
src=${2:?source dir}
. "$src/tests/integration/lib.sh"
need_tools test_outputs python3 pgrep cmp
it_begin test_outputs
it_watchdog=60
it_quiet=" 0 2 3 "

log="$src/tests/data/nccl-tests/all_reduce_perf.txt"
cat > "$work/S.cfg" <<EOF
name = "outputs";
profile = "$src/tests/data/cpu-test.cfg";
model = "$src/scenarios/models/mlp-small.cfg";
training = { batch = 32; precision = "fp32"; };
cluster = { nodes = [1, 2]; devices_per_node = 1; };
networks = ( { name = "1GbE"; gbps = 1.0; latency_us = 30.0; } );
ddp = { backend = "gloo"; };
EOF
cp "$work/S.cfg" "$work/S.orig"

same() { cmp -s "$1" "$2"; }

# ---- character devices and FIFOs: written through, left as they are ------------
if [ "$(id -u)" -eq 0 ]; then
  mknod "$work/null" c 1 3   # a /dev/null of the test's own, so the real one is never at stake
  run trace_chardev simulate "$work/S.cfg" -o "$work/o1" --trace "$work/null" -q
  check "trace to a character device: exit 0" [ "$status" -eq 0 ]
  check "the character device is still one" [ -c "$work/null" ]
fi
run trace_devnull simulate "$work/S.cfg" -o "$work/o1" --trace /dev/null -q
check "--trace /dev/null: exit 0" [ "$status" -eq 0 ]
check "/dev/null is still a character device" [ -c /dev/null ]

mkfifo "$work/fifo"
cat "$work/fifo" > "$work/fifo.got" &
reader=$!
# The reader may not have opened the FIFO yet (a loaded machine): until it
# has, simulate refuses it as unread; try again a while.
for _ in $(seq 100); do
  run trace_fifo simulate "$work/S.cfg" -o "$work/o1" --trace "$work/fifo" -q
  [ "$status" -eq 1 ] && grep -q "nothing reads the FIFO" "$work/trace_fifo.err" || break
  sleep 0.1
done
wait "$reader"
check "--trace FIFO: exit 0" [ "$status" -eq 0 ]
check "the FIFO is still a FIFO" [ -p "$work/fifo" ]
check "the reader got the trace" python3 -m json.tool "$work/fifo.got" /dev/null

run fifo_no_reader simulate "$work/S.cfg" -o "$work/o1" --trace "$work/fifo" -q
check "a FIFO nobody reads: an error, not a hang (exit 1)" [ "$status" -eq 1 ]
check "... that says so" grep -q "nothing reads the FIFO" "$work/fifo_no_reader.err"

# ---- two outputs of one run onto one file: refused before the work ----------------
run trace_onto_plot simulate "$work/S.cfg" -o "$work/o5" --plot --trace "$work/o5/outputs-mlp-small-scaling.png" -q
check "simulate --plot --trace (the plot's name): exit 2" [ "$status" -eq 2 ]
check "... saying why" grep -q "is named like a file --plot draws" "$work/trace_onto_plot.err"
check "... before simulating (no CSV)" [ ! -e "$work/o5/outputs.csv" ]
run tb_onto_csv simulate "$work/S.cfg" -o "$work/o6" --tensorboard "$work/o6/outputs.csv" -q
check "simulate --tensorboard (the CSV's path): exit 2" [ "$status" -eq 2 ]
check "... leaving no directory in the CSV's place" [ ! -e "$work/o6/outputs.csv" ]
run tb_onto_trace simulate "$work/S.cfg" -o "$work/o7" --tensorboard "$work/o7/t.json" --trace "$work/o7/t.json" -q
check "simulate --tensorboard X --trace X: exit 2" [ "$status" -eq 2 ]
check "... leaving no directory in the trace's place" [ ! -e "$work/o7/t.json" ]

# A plot named over an input (a link from its name to the scenario, to a
# shard) is refused before the study or the merge, not after the CSV.
mkdir -p "$work/o11"
ln -s ../S.cfg "$work/o11/outputs-mlp-small-scaling.png"
run plot_onto_scenario simulate "$work/S.cfg" -o "$work/o11" --plot -q
check "simulate --plot, a plot's name a link to the scenario: exit 2" [ "$status" -eq 2 ]
check "... naming the input" grep -q "same file as the input '$work/S.cfg'" "$work/plot_onto_scenario.err"
check "... before simulating (no CSV)" [ ! -e "$work/o11/outputs.csv" ]
check "... the scenario unchanged" same "$work/S.cfg" "$work/S.orig"
mkdir -p "$work/o12"
cp "$src/scenarios/plan.cfg" "$work/plan.orig"
ln -s "$src/scenarios/plan.cfg" "$work/o12/plan-advice-pareto.svg"
run pareto_onto_scenario advise "$src/scenarios/plan.cfg" -o "$work/o12" -q
check "advise, the Pareto plot's name a link to the scenario: exit 2" [ "$status" -eq 2 ]
check "... before the search (no advice CSV)" [ ! -e "$work/o12/plan-advice.csv" ]
check "... the scenario unchanged" same "$src/scenarios/plan.cfg" "$work/plan.orig"
mkdir -p "$work/o13"
run shard_0 simulate "$work/S.cfg" --shard 0/2 -o "$work/o13" -q
run shard_1 simulate "$work/S.cfg" --shard 1/2 -o "$work/o13" -q
cp "$work/o13/outputs.shard-1-of-2.csv" "$work/shard1.orig"
ln -s outputs.shard-1-of-2.csv "$work/o13/outputs-mlp-small-scaling.svg"
run plot_onto_shard merge "$work/S.cfg" --shards 2 -o "$work/o13" --plot
check "merge --plot, a plot's name a link to a shard: exit 2" [ "$status" -eq 2 ]
check "... before merging (no CSV)" [ ! -e "$work/o13/outputs.csv" ]
check "... the shard unchanged" same "$work/o13/outputs.shard-1-of-2.csv" "$work/shard1.orig"

# So is a TensorBoard event file that is already there as a link to an input.
mkdir -p "$work/tb14/outputs"
ln -s ../../S.cfg "$work/tb14/outputs/events.out.tfevents.0000000000.ddpsim-simulate"
run tb_onto_scenario simulate "$work/S.cfg" -o "$work/o14" --tensorboard "$work/tb14" -q
check "simulate --tensorboard, its event file a link to the scenario: exit 2" [ "$status" -eq 2 ]
check "... naming the input" grep -q "same file as the input '$work/S.cfg'" "$work/tb_onto_scenario.err"
check "... before simulating (no CSV, no -o)" [ ! -e "$work/o14" ]
check "... the scenario unchanged" same "$work/S.cfg" "$work/S.orig"

# The plots read the CSV back: a CSV written through to a FIFO (its reader
# there) has nothing to give back, and is refused before the study, not
# waited on forever once it is written.
mkdir -p "$work/o15"
mkfifo "$work/o15/outputs.csv"
timeout 20 cat "$work/o15/outputs.csv" >/dev/null &
plot_reader=$!
it_watchdog=15
run plot_csv_fifo simulate "$work/S.cfg" -o "$work/o15" --plot -q
it_watchdog=60
check "simulate --plot with the CSV a FIFO: exit 2, not a hang (got $status)" [ "$status" -eq 2 ]
check "... saying why" grep -q "the plot reads the CSV back to draw it, but $work/o15/outputs.csv is a FIFO" \
  "$work/plot_csv_fifo.err"
kill "$plot_reader" 2>/dev/null
wait "$plot_reader" 2>/dev/null

# A scenario, profile or model must be a regular file: one that is a FIFO
# nobody writes is refused at once, not waited on.
mkfifo "$work/S.fifo"
it_watchdog=10
run scenario_fifo simulate "$work/S.fifo" -o "$work/o1" -q
check "simulate FIFO: exit 3, not a hang" [ "$status" -eq 3 ]
check "... saying it is not a regular file" grep -q "scenario file '$work/S.fifo': not a regular file" \
  "$work/scenario_fifo.err"
run profile_fifo simulate "$work/S.cfg" --profile "$work/S.fifo" -o "$work/o1" -q
check "simulate --profile FIFO: exit 3, not a hang" [ "$status" -eq 3 ]
it_watchdog=60

# --plot into a directory gnuplot cannot be given (a space in its path):
# refused before the study, not after it with the CSV written.
run plot_space simulate "$work/S.cfg" -o "$work/sp ace" --plot -q
check "simulate --plot -o 'DIR WITH SPACE': exit 2" [ "$status" -eq 2 ]
check "... saying why" grep -q "cannot be passed to gnuplot" "$work/plot_space.err"
check "... before simulating (no CSV)" [ ! -e "$work/sp ace/outputs.csv" ]

# ---- symlinks: the target is written, the link stays ------------------------------
mkdir "$work/real"
ln -s real/trace.json "$work/link.json"
run trace_link simulate "$work/S.cfg" -o "$work/o1" --trace "$work/link.json" -q
check "--trace symlink: exit 0" [ "$status" -eq 0 ]
check "the link is still a link" [ -L "$work/link.json" ]
check "its target holds the trace" python3 -m json.tool "$work/real/trace.json" /dev/null

# ---- an output onto an input of the same command -------------------------------------
run trace_onto_scenario simulate "$work/S.cfg" -o "$work/o2" --trace "$work/S.cfg"
check "simulate S --trace S: exit 2" [ "$status" -eq 2 ]
check "... naming the input by its path" grep -q "same file as the input '$work/S.cfg'" "$work/trace_onto_scenario.err"
check "the scenario is unchanged" same "$work/S.cfg" "$work/S.orig"
ln -s S.cfg "$work/S-link.cfg"
run trace_onto_scenario_link simulate "$work/S.cfg" -o "$work/o2" --trace "$work/S-link.cfg"
check "simulate S --trace (a link to S): exit 2" [ "$status" -eq 2 ]
check "the scenario is unchanged (link)" same "$work/S.cfg" "$work/S.orig"

cp "$log" "$work/L.txt"
run import_onto_log import nccl-tests --base "$src/scenarios/profiles/dgx-h100.cfg" --out "$work/L.txt" "$work/L.txt"
check "import nccl-tests --out L L: exit 2" [ "$status" -eq 2 ]
check "the log is unchanged" same "$work/L.txt" "$log"
run measured_under_file validate "$work/S.cfg" --measured "$work/S.cfg/steps.csv"
check "validate --measured under a file: exit 3, as a missing input (got $status)" [ "$status" -eq 3 ]
run import_missing import nccl-tests --base "$src/scenarios/profiles/dgx-h100.cfg" --out "$work/never.cfg" \
  "$work/no-such-log.txt"
check "import nccl-tests of a missing file: exit 3, as every missing input (got $status)" [ "$status" -eq 3 ]
check "... naming it" grep -q "no-such-log.txt': No such file or directory (check the path)" "$work/import_missing.err"
cp "$src/scenarios/profiles/dgx-h100.cfg" "$work/P.cfg"
run import_onto_base import nccl-tests --base "$work/P.cfg" --out "$work/P.cfg" "$log"
check "import nccl-tests --base P --out P: exit 2" [ "$status" -eq 2 ]
check "... naming the input by its path" grep -q "same file as the input '$work/P.cfg'" "$work/import_onto_base.err"
check "the base profile is unchanged" same "$work/P.cfg" "$src/scenarios/profiles/dgx-h100.cfg"

# import torch-trace: every output (the model, --scenario, the profile beside
# it) is checked against every input and against the others before any
# work, so a refusal leaves no file behind. The case's files are in a
# directory of its own, which must hold only what the case put there.
gpu="$src/tests/data/torch-trace/gpu-ddp.json"
imp_case() { # NAME WHAT-IS-REFUSED ARGS... (paths relative to the case's directory)
  local name=$1 what=$2
  shift 2
  mkdir -p "$work/$name.d"
  local before
  before=$(cd "$work/$name.d" && ls -A | sort | tr '\n' ' ')
  run "$name" import torch-trace "$@"
  check "import torch-trace, $what: exit 2" [ "$status" -eq 2 ]
  check "... nothing written ($what)" [ "$(cd "$work/$name.d" && ls -A | sort | tr '\n' ' ')" = "$before" ]
}
d="$work/imp_model_is_scenario.d"
imp_case imp_model_is_scenario "-o M --scenario M" "$gpu" -o "$d/M.cfg" --scenario "$d/M.cfg"
check "... naming both" grep -q "the model '$d/M.cfg' and --scenario '$d/M.cfg' are the same file" \
  "$work/imp_model_is_scenario.err"
d="$work/imp_model_is_profile.d"
imp_case imp_model_is_profile "-o S.profile.cfg --scenario S" "$gpu" -o "$d/S.profile.cfg" --scenario "$d/./S.cfg"
d="$work/imp_scenario_is_trace.d"
mkdir -p "$d" && cp "$gpu" "$d/T.json"
imp_case imp_scenario_is_trace "--scenario TRACE" "$d/T.json" -o "$d/M.cfg" --scenario "$d/T.json"
check "... the trace is unchanged" same "$d/T.json" "$gpu"
d="$work/imp_profile_base.d"
mkdir -p "$d" && cp "$src/scenarios/profiles/dgx-h100.cfg" "$d/S.profile.cfg"
imp_case imp_profile_base "--scenario S --profile-base S.profile.cfg" "$gpu" -o "$d/M.cfg" --scenario "$d/S.cfg" \
  --profile-base "$d/S.profile.cfg"
check "... the base profile is unchanged" same "$d/S.profile.cfg" "$src/scenarios/profiles/dgx-h100.cfg"
# An output named by its extension alone (".cfg") has no stem to name the
# model, the scenario, its profile and its CSV after: refused (exit 2), as
# --out of a model or of nccl-tests' profile.
d="$work/imp_empty_stem.d"
imp_case imp_empty_stem "--scenario .cfg" "$gpu" -o "$d/M.cfg" --scenario "$d/.cfg"
check "... saying why" grep -q "has nothing before its extension" "$work/imp_empty_stem.err"
d="$work/imp_empty_model_stem.d"
imp_case imp_empty_model_stem "-o .cfg" "$gpu" -o "$d/.cfg"
mkdir -p "$work/stem.d"
run import_empty_stem import nccl-tests --base "$src/scenarios/profiles/dgx-h100.cfg" --out "$work/stem.d/.cfg" "$log"
check "import nccl-tests --out .cfg: exit 2" [ "$status" -eq 2 ]
check "... saying why" grep -q "has nothing before its extension" "$work/import_empty_stem.err"
check "... nothing written" [ ! -e "$work/stem.d/.cfg" ]
# --base is an input of a GPU trace's import even where DDP's copies give the
# tensors' sizes and the base is not read.
d="$work/imp_gpu_base.d"
mkdir -p "$d" && cp "$src/scenarios/models/mlp-small.cfg" "$d/M.cfg"
imp_case imp_gpu_base "GPU trace --base M -o M" "$gpu" --base "$d/M.cfg" -o "$d/M.cfg"
check "... the base model is unchanged" same "$d/M.cfg" "$src/scenarios/models/mlp-small.cfg"
# A trace that --scenario cannot be made of (a GPU without datasheet figures
# and no --profile-base, a world that does not fill its hosts) is refused
# before the model is written, not after.
d="$work/imp_no_sheet.d"
mkdir -p "$d" && sed 's/NVIDIA A100-SXM4-80GB/NVIDIA Z9/g' "$gpu" >"$d/T.json"
imp_case imp_no_sheet "--scenario of a GPU without datasheet figures" "$d/T.json" -o "$d/M.cfg" --scenario "$d/S.cfg"
check "... naming the GPU" grep -q "no datasheet figures for the traced GPU 'NVIDIA Z9'" "$work/imp_no_sheet.err"
d="$work/imp_world.d"
mkdir -p "$d" && sed 's/"world_size":2/"world_size":12/' "$gpu" >"$d/T.json"
run imp_world import torch-trace "$d/T.json" -o "$d/M.cfg" --scenario "$d/S.cfg"
check "import torch-trace --scenario, a world of 12 on hosts of 8: exit 3" [ "$status" -eq 3 ]
check "... nothing written" [ "$(ls -A "$d")" = "T.json" ]
# --scenario reads the model back: a model written to a FIFO would block
# there, to a device would not read back; both are refused up front.
d="$work/imp_model_fifo.d"
mkdir -p "$d" && mkfifo "$d/M.fifo"
imp_case imp_model_fifo "-o FIFO --scenario S" "$gpu" -o "$d/M.fifo" --scenario "$d/S.cfg"
check "... saying why" grep -q "is not a regular file" "$work/imp_model_fifo.err"
# The scenario names the profile written beside it: a scenario to a device
# (here a link to /dev/null) would leave that profile beside the device.
d="$work/imp_scenario_dev.d"
mkdir -p "$d" && ln -sf /dev/null "$d/S.cfg"
imp_case imp_scenario_dev "--scenario DEVICE" "$gpu" -o "$d/M.cfg" --scenario "$d/S.cfg"
check "... saying why" grep -q "is not a regular file" "$work/imp_scenario_dev.err"
d="$work/imp_model_null.d"
imp_case imp_model_null "-o /dev/null --scenario S" "$gpu" -o /dev/null --scenario "$d/S.cfg"

# A GPU trace may come through a pipe (read once); a CPU job's trace, read
# a second time once no GPU work is found, is refused with the reason, not
# reported empty.
run imp_gpu_pipe import torch-trace <(cat "$gpu") -o "$work/pipe-gpu.cfg"
check "import torch-trace of a GPU trace through a pipe: exit 0" [ "$status" -eq 0 ]
# ... but without --out, a pipe (/dev/fd/63) has no name to give the model:
# refused, not written to "63.cfg" in the current directory.
mkdir -p "$work/pipe.d"
(cd "$work/pipe.d" && timeout -s KILL 30 "$bin" import torch-trace <(cat "$gpu") >/dev/null 2>"$work/imp_pipe_noout.err")
status=$?
check "import torch-trace PIPE without --out: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... saying to name the model" grep -q "name the model with --out MODEL" "$work/imp_pipe_noout.err"
check "... writing nothing" [ -z "$(ls -A "$work/pipe.d")" ]
run imp_cpu_pipe import torch-trace <(cat "$src/tests/data/torch-trace/mlp-small-b32.json") -o "$work/pipe-cpu.cfg"
check "import torch-trace of a CPU trace through a pipe: exit 2" [ "$status" -eq 2 ]
check "... saying to save it to a file" grep -q "CPU job's trace is read twice: save it to a file" \
  "$work/imp_cpu_pipe.err"
check "... and writing nothing" [ ! -e "$work/pipe-cpu.cfg" ]

if "$bin" help train >/dev/null 2>&1; then
  cp "$src/tests/data/runtime/mlp-tiny.cfg" "$work/M.cfg"
  t0=$(date +%s)
  run params_onto_model train --model "$work/M.cfg" --steps 2000 --batch 8 --params-out "$work/M.cfg" -o "$work/run"
  t1=$(date +%s)
  check "train --model M --params-out M: exit 2" [ "$status" -eq 2 ]
  check "... before training (within 10 s)" [ $((t1 - t0)) -le 10 ]
  check "the model is unchanged" same "$work/M.cfg" "$src/tests/data/runtime/mlp-tiny.cfg"
  # calibrate refuses an output onto an input before it measures anything
  # (--progress on: any measurement would say so on stderr), and leaves nothing.
  mkdir "$work/cal"
  cp "$src/scenarios/models/mlp-small.cfg" "$work/cal/m.cfg"
  run cal_onto_model calibrate --quick --progress on --out "$work/cal/m.cfg" --model "$work/cal/m.cfg"
  check "calibrate --out M --model M: exit 2" [ "$status" -eq 2 ]
  check "... before measuring (stderr is the refusal alone)" [ "$(wc -l < "$work/cal_onto_model.err")" -eq 1 ]
  check "... naming the input" grep -q "same file as the input '$work/cal/m.cfg'" "$work/cal_onto_model.err"
  check "... leaving the model as it was" same "$work/cal/m.cfg" "$src/scenarios/models/mlp-small.cfg"
  check "... and nothing beside it" [ "$(ls "$work/cal")" = "m.cfg" ]
  cp "$work/cal/m.cfg" "$work/cal/p.mlp-small.cfg"
  run cal_measured_onto_model calibrate --quick --progress on --out "$work/cal/p.cfg" --model "$work/cal/p.mlp-small.cfg"
  check "calibrate --out P --model P.NAME.cfg (its measured times' file): exit 2" [ "$status" -eq 2 ]
  check "... before measuring" [ "$(wc -l < "$work/cal_measured_onto_model.err")" -eq 1 ]
  check "... naming the measured model file" grep -q "measured times of --model .* cannot be written to '$work/cal/p.mlp-small.cfg'" \
    "$work/cal_measured_onto_model.err"
  check "... which is unchanged" same "$work/cal/p.mlp-small.cfg" "$src/scenarios/models/mlp-small.cfg"
  run cal_same_model_twice calibrate --quick --progress on --out "$work/cal/q.cfg" --model "$work/cal/m.cfg" \
    --model "$work/cal/p.mlp-small.cfg"
  check "calibrate with two models of one name (one measured file): exit 2" [ "$status" -eq 2 ]
  check "... before measuring" [ "$(wc -l < "$work/cal_same_model_twice.err")" -eq 1 ]
  check "... saying why" grep -q "both the model 'mlp-small'" "$work/cal_same_model_twice.err"
  check "... and nothing written" [ "$(ls "$work/cal")" = "$(printf 'm.cfg\np.mlp-small.cfg')" ]
  run every_without_dir train --model "$work/M.cfg" --steps 2 --ckpt-every 1 -o "$work/run"
  check "train --ckpt-every without --ckpt-dir: exit 2" [ "$status" -eq 2 ]
  check "... saying it would write nothing" grep -q "without it no checkpoint is written" "$work/every_without_dir.err"

  # Resume with a stray copy of an older checkpoint under a newer name, a FIFO
  # named like a checkpoint and a dead writer's temp file in the directory:
  # resumed from the newest real one at once, each reported, the temp removed.
  ck="$work/ck"
  run ckpt_first train --model "$work/M.cfg" --steps 4 --batch 8 --ckpt-dir "$ck" --ckpt-every 2 -o "$work/run1"
  check "4 steps with checkpoints: exit 0" [ "$status" -eq 0 ]
  cp "$ck/ckpt-00000002.ddpc" "$ck/ckpt-00000050.ddpc"
  mkfifo "$ck/ckpt-00000060.ddpc"
  head -c 1000 "$ck/ckpt-00000004.ddpc" > "$ck/ckpt-00000006.ddpc.tmp.Dead01"
  t0=$(date +%s)
  run ckpt_resume train --model "$work/M.cfg" --steps 6 --batch 8 --ckpt-dir "$ck" --ckpt-every 2 --resume -o "$work/run2"
  t1=$(date +%s)
  check "resume past a stray, a FIFO and a temp file: exit 0" [ "$status" -eq 0 ]
  check "... within 20 s (the FIFO is not opened blocking)" [ $((t1 - t0)) -le 20 ]
  check "... from step 4, the newest real checkpoint" grep -q "ckpt-00000004.ddpc at step 4" "$work/ckpt_resume.err"
  check "... reporting the stray copy" grep -q "ckpt-00000050.ddpc' holds step 2" "$work/ckpt_resume.err"
  check "... reporting the FIFO" grep -q "ckpt-00000060.ddpc: not a regular file" "$work/ckpt_resume.err"
  check "... removing the dead writer's temp file" grep -q "ckpt-00000006.ddpc.tmp.Dead01' (1000 bytes)" "$work/ckpt_resume.err"
  check "the new checkpoint is kept" [ -f "$ck/ckpt-00000006.ddpc" ]
  check "the last real one is kept" [ -f "$ck/ckpt-00000004.ddpc" ]
  check "the stray is left alone" [ -f "$ck/ckpt-00000050.ddpc" ]
  check "the FIFO is left alone" [ -p "$ck/ckpt-00000060.ddpc" ]

  # A refused run leaves none of the directories it made (-o, --tensorboard,
  # --ckpt-dir, their missing parents), and keeps one that was there before.
  mkdir "$work/kept"
  run refused_o_file train --model "$work/M.cfg" --steps 2 --tensorboard "$work/gone/tb" -o "$work/M.cfg"
  check "train -o FILE --tensorboard NEW: exit 2" [ "$status" -eq 2 ]
  check "... leaving no TensorBoard directory" [ ! -e "$work/gone" ]
  run refused_params train --model "$work/M.cfg" --steps 2 --tensorboard "$work/kept/tb" -o "$work/gone/run" \
    --ckpt-dir "$work/gone2/ck" --ckpt-every 1 --params-out "$work/gone/run/steps.csv"
  check "train --params-out onto its own steps.csv: exit 2" [ "$status" -eq 2 ]
  check "... leaving no -o directory" [ ! -e "$work/gone" ]
  check "... no --ckpt-dir directory" [ ! -e "$work/gone2" ]
  check "... no TensorBoard directory" [ ! -e "$work/kept/tb" ]
  check "... and the directory that was there before" [ -d "$work/kept" ]
  run refused_late train --model "$work/M.cfg" --steps 2 --batch 8 --ckpt-dir "$ck" --ckpt-every 2 \
    --tensorboard "$work/gone/tb" -o "$work/gone/run"
  check "train --ckpt-dir of an earlier run without --resume: exit 2" [ "$status" -eq 2 ]
  check "... leaving neither -o nor --tensorboard" [ ! -e "$work/gone" ]
  check "... nor touching --ckpt-dir" [ -f "$ck/ckpt-00000006.ddpc" ]
  # --trace onto an input: refused before the rank's metrics file is made,
  # so nothing is left in -o, which was there before.
  mkdir -p "$work/rt"
  ln -s ../M.cfg "$work/rt/trace-rank-0.json"
  run trace_onto_model train --model "$work/M.cfg" --steps 2 --batch 8 -o "$work/rt" --trace
  check "train --trace, its trace a link to the model: exit 2" [ "$status" -eq 2 ]
  check "... the model unchanged" same "$work/M.cfg" "$src/tests/data/runtime/mlp-tiny.cfg"
  check "... and no metrics file left in -o" [ "$(ls -A "$work/rt")" = "trace-rank-0.json" ]
  # A batch larger than the rank's share of --dataset is the options' fault:
  # exit 2 before any output, not exit 3 at the first step with -o made.
  run batch_past_dataset train --model "$work/M.cfg" --steps 2 --batch 8 --dataset 1 -o "$work/gone/ds"
  check "train --batch 8 --dataset 1: exit 2 (got $status)" [ "$status" -eq 2 ]
  check "... leaving no -o" [ ! -e "$work/gone" ]
  # The mark an injected failure leaves (-o/fail-attempt-A.time) is an
  # output like any other: a link from its name to the model is refused
  # before training, not followed when the rank kills itself.
  mkdir -p "$work/rf"
  ln -s ../M.cfg "$work/rf/fail-attempt-0.time"
  run fail_mark_onto_model train --model "$work/M.cfg" --steps 4 --batch 8 -o "$work/rf" --fail-at-step 1 --fail-rank 0
  check "train --fail-at-step, its mark a link to the model: exit 2 (got $status)" [ "$status" -eq 2 ]
  check "... the model unchanged" same "$work/M.cfg" "$src/tests/data/runtime/mlp-tiny.cfg"
  check "... and nothing left in -o" [ "$(ls -A "$work/rf")" = "fail-attempt-0.time" ]
fi

# The summary names the dimensions it sweeps as the CSV's columns do.
sed 's/devices_per_node = 1;/devices_per_node = [1, 2];/' "$work/S.cfg" > "$work/per_node.cfg"
run per_node simulate "$work/per_node.cfg" -o "$work/per_node"
check "simulate sweeping devices_per_node: exit 0" [ "$status" -eq 0 ]
check "... the summary's column is the CSV's gpus_per_node" \
  grep -q "^model .* gpus_per_node " "$work/per_node.out"
check "... which the CSV has" grep -q "^model,nodes,gpus_per_node," "$work/per_node/outputs.csv"
check "... and no devices_per_node" [ -z "$(grep devices_per_node "$work/per_node.out")" ]

# simulate and advise refused after -o is made leave no directory either.
run sim_refused simulate "$work/S.cfg" -o "$work/gone/sim" --tensorboard "$work/gone/tb" \
  --trace "$work/gone/sim/outputs.csv" -q
check "simulate --trace onto its own CSV: exit 2" [ "$status" -eq 2 ]
check "... leaving neither -o nor --tensorboard" [ ! -e "$work/gone" ]

# ---- validate --append: the file replaced whole with the row added ------------------------
printf 'rank,attempt,step,step_s,compute_s,comm_s,exposed_comm_s\n0,0,0,0.1,0.05,0.04,0.03\n' > "$work/m.csv"
cp "$work/m.csv" "$work/m.orig"
mkdir "$work/v"
ln -s v/runs.csv "$work/runs-link.csv"
run append_1 validate "$work/S.cfg" --measured "$work/m.csv" --skip 0 --append "$work/runs-link.csv" --label one
run append_2 validate "$work/S.cfg" --measured "$work/m.csv" --skip 0 --append "$work/runs-link.csv" --label two
check "validate --append twice through a symlink: exit 0" [ "$status" -eq 0 ]
check "the link is still a link" [ -L "$work/runs-link.csv" ]
check "its target has the header and both rows" python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["label"] for r in rows] == ["one", "two"], rows' "$work/v/runs.csv"
cp "$work/v/runs.csv" "$work/runs.before"
run append_onto_measured validate "$work/S.cfg" --measured "$work/m.csv" --skip 0 --append "$work/m.csv"
check "validate --measured M --append M: exit 2" [ "$status" -eq 2 ]
check "... before validating (no report)" [ ! -s "$work/append_onto_measured.out" ]
check "the measured run is unchanged" same "$work/m.csv" "$work/m.orig"
run append_onto_scenario validate "$work/S.cfg" --measured "$work/m.csv" --skip 0 --append "$work/S.cfg"
check "validate S --append S: exit 2" [ "$status" -eq 2 ]
check "... before validating (no report)" [ ! -s "$work/append_onto_scenario.out" ]
check "... naming the input by its path" grep -q "same file as the input '$work/S.cfg'" "$work/append_onto_scenario.err"
check "the scenario is unchanged (append)" same "$work/S.cfg" "$work/S.orig"
cp "$src/scenarios/models/mlp-small.cfg" "$work/Mv.cfg"
sed "s#^model = .*#model = \"$work/Mv.cfg\";#" "$work/S.cfg" > "$work/Sv.cfg"
run append_onto_model validate "$work/Sv.cfg" --measured "$work/m.csv" --skip 0 --append "$work/Mv.cfg"
check "validate --append onto the scenario's model: exit 2" [ "$status" -eq 2 ]
check "... before validating (no report)" [ ! -s "$work/append_onto_model.out" ]
check "the model is unchanged (append)" same "$work/Mv.cfg" "$src/scenarios/models/mlp-small.cfg"
printf 'a,b\n1,2' > "$work/other.csv"
cp "$work/other.csv" "$work/other.orig"
run append_other validate "$work/S.cfg" --measured "$work/m.csv" --skip 0 --append "$work/other.csv"
check "--append to another table's CSV: exit 3" [ "$status" -eq 3 ]
check "... naming its header" grep -q "other.csv:1: not the header" "$work/append_other.err"
check "... which is unchanged" same "$work/other.csv" "$work/other.orig"
run append_dir validate "$work/S.cfg" --measured "$work/m.csv" --skip 0 --append "$work/v"
check "--append to a directory: exit 2" [ "$status" -eq 2 ]
check "... before simulating" [ ! -s "$work/append_dir.out" ]
check "the appended file is unchanged by the refusals" same "$work/v/runs.csv" "$work/runs.before"
# A full disk while the file is copied to be appended to (a file-size limit
# gives EFBIG where a full disk gives ENOSPC): the write error, not a file
# "not of this command", and the file as it was. The file is smaller than
# stdio's buffer, so the copy meets the limit only when it is flushed.
head -n 1 "$work/v/runs.csv" > "$work/full.csv"
for _ in $(seq 12); do tail -n 1 "$work/v/runs.csv" >> "$work/full.csv"; done
cp "$work/full.csv" "$work/full.orig"
full_size=$(wc -c < "$work/full.csv")
check "the appended file is over 1 KiB and under 4 KiB ($full_size bytes)" [ "$full_size" -gt 1024 ] && [ "$full_size" -lt 4096 ]
(trap '' XFSZ; ulimit -f 1; run append_full validate "$work/S.cfg" --measured "$work/m.csv" --skip 0 --append "$work/full.csv"
  exit "$status")
status=$?
check "--append with the disk full while copying: exit 1" [ "$status" -eq 1 ]
check "... saying the copy failed" grep -q "copying '$work/full.csv' to append to it failed: File too large" "$work/append_full.err"
check "... the file unchanged" same "$work/full.csv" "$work/full.orig"
check "... and no temp file beside it" [ -z "$(find "$work" -maxdepth 1 -name 'full.csv.tmp.*')" ]
run append_devnull validate "$work/S.cfg" --measured "$work/m.csv" --skip 0 --append /dev/null
check "--append /dev/null: exit 0" [ "$status" -eq 0 ]
check "... still a character device" [ -c /dev/null ]

# ---- a killed writer's temp files: removed when the output is written again ------------
# Only "<name>.tmp." and six letters, unchanged for a minute and unlocked: a
# user's file of a like name, a fresh temp and a live writer's stay.
o8="$work/o8"
mkdir -p "$o8"
printf 'half' > "$o8/outputs.csv.tmp.Dead01"
printf 'mine' > "$o8/outputs.csv.old.tmp.Keep01"
printf 'held' > "$o8/outputs.csv.tmp.Held01"
touch -d '1 hour ago' "$o8/outputs.csv.tmp.Dead01" "$o8/outputs.csv.old.tmp.Keep01" "$o8/outputs.csv.tmp.Held01"
printf 'fresh' > "$o8/outputs.csv.tmp.Live01"
held=0
if command -v flock >/dev/null; then
  exec 9<"$o8/outputs.csv.tmp.Held01"
  flock 9 && held=1
fi
run sweep_dead simulate "$work/S.cfg" -o "$o8" -q
check "simulate beside a dead writer's temp file: exit 0" [ "$status" -eq 0 ]
check "... which is removed" [ ! -e "$o8/outputs.csv.tmp.Dead01" ]
check "... and reported" grep -q "removed '$o8/outputs.csv.tmp.Dead01' (4 bytes)" "$work/sweep_dead.err"
check "a user's file of a like name stays" [ -f "$o8/outputs.csv.old.tmp.Keep01" ]
check "a temp file of the last minute stays" [ -f "$o8/outputs.csv.tmp.Live01" ]
if [ "$held" -eq 1 ]; then
  check "a temp file a live writer holds locked stays" [ -f "$o8/outputs.csv.tmp.Held01" ]
  exec 9<&-
fi
rm -f "$o8"/*.tmp.*

# ---- empty and impossible output paths: usage errors, nothing created ------------------
run trace_empty simulate "$work/S.cfg" -o "$work/o3" --trace ""
check "--trace '': exit 2" [ "$status" -eq 2 ]
run trace_dir simulate "$work/S.cfg" -o "$work/o3" --trace "$work"
check "--trace DIRECTORY: exit 2" [ "$status" -eq 2 ]
run trace_missing_dir simulate "$work/S.cfg" -o "$work/o3" --trace "$work/no/such/t.json"
check "--trace in a missing directory: exit 2" [ "$status" -eq 2 ]
check "... which is not created" [ ! -e "$work/no" ]
# A directory the user cannot write (permissions; for root, a read-only
# file system) is a path to choose again, as a missing one is: exit 2.
mkdir -p "$work/ro"
if [ "$(id -u)" -eq 0 ]; then
  ro_run() { unshare -m sh -c 'mount -t tmpfs -o ro tmpfs "$0" && exec "$@"' "$work/ro" "$@"; }
else
  chmod 555 "$work/ro"
  ro_run() { "$@"; }
fi
ro_run timeout -s KILL 30 "$bin" simulate "$work/S.cfg" -o "$work/o3" --trace "$work/ro/t.json" -q \
  >"$work/trace_ro.out" 2>"$work/trace_ro.err"
status=$?
check "--trace in a directory that cannot be written: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... saying to choose another path" grep -q "cannot write into directory '$work/ro'.*choose another path" \
  "$work/trace_ro.err"
ro_run timeout -s KILL 30 "$bin" simulate "$work/S.cfg" -o "$work/ro/sub" -q >"$work/out_ro.out" 2>"$work/out_ro.err"
status=$?
check "-o under a directory that cannot be written: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... saying to choose another" grep -q "cannot create directory '$work/ro/sub'.*choose another output directory" \
  "$work/out_ro.err"
# A name that fits the file system but not with its temp file's suffix
# (.tmp.XXXXXX): refused before the work, like any other impossible path.
long=$(printf 'x%.0s' $(seq 250))
run trace_long_name simulate "$work/S.cfg" -o "$work/o4" --trace "$work/$long" -q
check "--trace with a 250-byte name: exit 2" [ "$status" -eq 2 ]
check "... saying how long it may be" grep -q "shorten the name to 244 bytes or less" "$work/trace_long_name.err"
check "... before simulating (no CSV)" [ ! -e "$work/o4/outputs.csv" ]
run trace_too_long simulate "$work/S.cfg" -o "$work/o4" --trace "$work/${long}xxxxxx" -q
check "--trace with a 256-byte name: exit 2" [ "$status" -eq 2 ]
# ... but a link of that name to a device is written through, no temp file.
ln -s /dev/null "$work/$long"
run trace_long_link simulate "$work/S.cfg" -o "$work/o4" --trace "$work/$long" -q
check "--trace with a 250-byte name linked to /dev/null: exit 0" [ "$status" -eq 0 ]
check "... /dev/null still a character device" [ -c /dev/null ]
rm "$work/$long"
check "no temp file anywhere" [ -z "$(find "$work" -name '*.tmp.*')" ]

# ---- standard output: what a command prints must reach it ----------------------------
# A table redirected onto a full disk (/dev/full) is a failure that says
# so, not a success with the table lost; stdout closed with nothing to
# print is no loss.
stdout_full() { # NAME ARGS...
  local name=$1
  shift
  timeout -s KILL "$it_watchdog" "$bin" "$@" >/dev/full 2>"$work/$name.err"
  status=$?
}
if [ -w /dev/full ]; then
  stdout_full coll_full collective --profile "$src/scenarios/profiles/dgx-h100.cfg"
  check "collective > /dev/full: exit 1 (got $status)" [ "$status" -eq 1 ]
  check "... saying stdout could not be written" grep -q "writing to standard output failed" "$work/coll_full.err"
  stdout_full sim_full simulate "$work/S.cfg" -o "$work/o10"
  check "simulate (its summary) > /dev/full: exit 1 (got $status)" [ "$status" -eq 1 ]
  stdout_full help_full --help
  check "--help > /dev/full: exit 1 (got $status)" [ "$status" -eq 1 ]
  stdout_full model_full model "$src/scenarios/models/mlp-small.cfg"
  check "model > /dev/full: exit 1 (got $status)" [ "$status" -eq 1 ]
  check "... one message, the command's own" [ "$(wc -l < "$work/model_full.err")" -eq 1 ]
fi
# Standard output appended to an input (`>> INPUT`): refused before
# anything is added to it, as cat refuses "input file is output file".
cp "$src/scenarios/models/mlp-small.cfg" "$work/Mo.cfg"
timeout -s KILL 30 "$bin" model "$work/Mo.cfg" >>"$work/Mo.cfg" 2>"$work/model_onto_self.err"
status=$?
check "model M >> M: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... saying why" grep -q "standard output is the input '$work/Mo.cfg'" "$work/model_onto_self.err"
check "... the model unchanged" same "$work/Mo.cfg" "$src/scenarios/models/mlp-small.cfg"
timeout -s KILL 30 "$bin" simulate "$work/S.cfg" -o "$work/o16" >>"$work/S.cfg" 2>"$work/sim_onto_self.err"
status=$?
check "simulate S >> S: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... the scenario unchanged" same "$work/S.cfg" "$work/S.orig"
check "... before simulating (no -o)" [ ! -e "$work/o16" ]
timeout -s KILL 30 "$bin" simulate "$work/S.cfg" -o "$work/o10" -q >&- 2>"$work/sim_closed.err"
status=$?
check "simulate -q with stdout closed (nothing to print): exit 0 (got $status)" [ "$status" -eq 0 ]
timeout -s KILL 30 "$bin" --version >&- 2>"$work/version_closed.err"
status=$?
check "--version with stdout closed: exit 1 (got $status)" [ "$status" -eq 1 ]

it_end

#!/usr/bin/env bash
# What `ddpsim train`, `launch` and `calibrate` do with outputs and scratch
# directories that cannot take what they write, checkpoints that cannot be
# resumed, a launcher killed outright and an address that does not resolve:
#
#  1. a rank's metrics file that is a FIFO nobody reads: exit 2 at once,
#     naming it (opening it for writing would block forever);
#  2. a steps.csv that is the model file (a symlink onto it): exit 2 before
#     any step is trained, the model untouched;
#  3. a metrics file the disk does not take (a symlink to /dev/full): exit 1
#     naming the file and the full disk, not a bad-CSV error at the merge;
#  4. calibrate --scratch that does not exist or is a file: exit 2 before any
#     measurement, and the missing directory is not created;
#  5. launch SIGKILLed mid-training: its ranks end too (within 5 s), instead
#     of training on and writing checkpoints beside the next launch's;
#  6. --resume from a directory whose checkpoints are all rejected (another
#     model's, or damaged): exit 3 naming the way out, the files untouched,
#     instead of training from step 0 and writing over them;
#  7. --resume from a checkpoint past --steps: exit 2 naming both, nothing
#     written (no parameters of "2 steps" that are those of 4);
#  8. --resume into the -o of the run it continues: that run's metrics rows
#     are kept and the resumed ones follow (a torn last row cut), not
#     overwritten; a file by that name that is not metrics is refused;
#  9. an address to bind that does not resolve (train --bind, calibrate's
#     DDPSIM_BIND_ADDR): exit 2 naming it, not a crash inside Gloo;
# 10. a --ckpt-dir that is a file or cannot be written: exit 2 before any
#     step, not exit 1 at the first checkpoint;
# 11. a run that fails before training (no rendezvous) leaves no event file
#     in --tensorboard DIR, so that the next run into DIR is not refused;
# 12. launch of a command that does not exist: exit 2 naming it, before any
#     rank starts (not every rank dying with status 127 and exit 4);
# 13. the temp file of a traced rank killed outright is removed by the next
#     run into the same -o, not left there for good;
# 14. calibrate --out a device (a link to /dev/null): the profile written
#     through, and no measured model file made "beside" the device;
# 15. DDPSIM_RESTART_COUNT that is not a count (abc, -5): exit 3 naming it,
#     not attempt 0 or a file named rank-0.attempt--5.csv;
# 16. --params-out onto a name the run writes itself (DIR/steps.csv, a
#     checkpoint's name): exit 2; into the -o the run makes: written there;
# 17. the scratch directory of a calibration killed during its checkpoint
#     test (its process gone) is removed by the next calibration there;
# 18. a second run writing checkpoints into a --ckpt-dir another run is
#     writing (each would prune the other's): exit 2, saying it is in use;
# 19. a --rdzv directory that holds an earlier run's keys: exit 2 saying to
#     give each run an empty one (it told to "use a fresh prefix", which no
#     option sets).
#
#   test_train_outputs.sh DDPSIM_BINARY SOURCE_DIR
set -u

bin=${1:?usage: test_train_outputs.sh DDPSIM_BINARY SOURCE_DIR}
src=${2:?source dir}
model="$src/tests/data/runtime/mlp-tiny.cfg"
. "$src/tests/integration/lib.sh"
need_tools test_train_outputs python3 pgrep mkfifo
it_begin test_train_outputs
it_watchdog=30
it_quiet=" 0 1 2 3 "

common=(--model "$model" --batch 8 --timeout 10)

# ---- 1. a metrics file that is a FIFO without a reader ------------------------------
mkdir -p "$work/fifo"
mkfifo "$work/fifo/rank-0.attempt-0.csv"
run fifo train "${common[@]}" --steps 2 -o "$work/fifo"
check "metrics FIFO without a reader: exit 2, not a hang (got $status)" [ "$status" -eq 2 ]
check "... the error names the FIFO" grep -q "nothing reads the FIFO '.*rank-0.attempt-0.csv'" "$work/fifo.err"
check "... and it is left a FIFO" [ -p "$work/fifo/rank-0.attempt-0.csv" ]

# ---- 2. steps.csv onto the model -------------------------------------------------------
cp "$model" "$work/model.cfg"
mkdir -p "$work/onto"
ln -s ../model.cfg "$work/onto/steps.csv"
run onto train --model "$work/model.cfg" --batch 8 --timeout 10 --steps 2 -o "$work/onto"
check "steps.csv onto the model: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... the error names both" grep -q "output '.*steps.csv' is the same file as the input '.*model.cfg'" "$work/onto.err"
check "... refused before training: no rank's metrics file" [ ! -e "$work/onto/rank-0.attempt-0.csv" ]
check "... the model is untouched" cmp -s "$model" "$work/model.cfg"

# ---- 3. a metrics file the disk does not take ---------------------------------------------
if [ -c /dev/full ]; then
  mkdir -p "$work/full"
  ln -s /dev/full "$work/full/rank-0.attempt-0.csv"
  run full train "${common[@]}" --steps 3 -o "$work/full"
  check "metrics on a full disk: exit 1 (got $status)" [ "$status" -eq 1 ]
  check "... the error names the metrics file and the full disk" \
    grep -q "metrics to '.*rank-0.attempt-0.csv': No space left on device" "$work/full.err"
  check "... no steps.csv merged from rows that were never written" [ ! -e "$work/full/steps.csv" ]
else
  fail "/dev/full is not a character device here"
fi

# ---- 4. calibrate --scratch ------------------------------------------------------------------
run scratch_missing calibrate --quick --scratch "$work/no/such" --out "$work/p.cfg"
check "calibrate --scratch missing: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... the error names it" grep -q -- "--scratch .*no/such" "$work/scratch_missing.err"
check "... and it is not created" [ ! -e "$work/no" ]
check "... nothing written" [ ! -e "$work/p.cfg" ]
run scratch_file calibrate --quick --scratch "$work/model.cfg" --out "$work/p.cfg"
check "calibrate --scratch FILE: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... says it is not a directory" grep -q "is not a directory" "$work/scratch_file.err"

# ---- 5. the launcher killed outright -------------------------------------------------------------
"$bin" launch --nproc 2 --rdzv-dir "$work/rdzv" -- "$bin" train "${common[@]}" --steps 1000000 \
  -o "$work/orphans" >"$work/orphans.out" 2>&1 &
lpid=$!
ranks=""
for _ in $(seq 1 100); do
  ranks=$(pgrep -P $lpid | tr '\n' ' ')
  [ "$(echo $ranks | wc -w)" -eq 2 ] && [ -s "$work/orphans/rank-1.attempt-0.csv" ] && break
  sleep 0.1
done
check "launch started 2 ranks (got: $ranks)" [ "$(echo $ranks | wc -w)" -eq 2 ]
{ kill -KILL $lpid && wait $lpid; } 2>/dev/null
alive() { for p in $ranks; do [ -d /proc/$p ] && [ "$(cut -d' ' -f3 /proc/$p/stat)" != Z ] && return 0; done; return 1; }
for _ in $(seq 1 50); do alive || break; sleep 0.1; done
check "launcher SIGKILLed: its ranks are gone within 5 s (left: $(for p in $ranks; do [ -d /proc/$p ] && echo $p; done))" \
  eval '! alive'

# ---- 6. --resume over checkpoints that are all rejected -------------------------------------------
run ck_first train "${common[@]}" --steps 4 -o "$work/ck_run" --ckpt-dir "$work/ck" --ckpt-every 2
check "checkpoints written: exit $status" [ "$status" -eq 0 ]
cp -a "$work/ck" "$work/ck.before"
sed 's/out = 32;/out = 16;/' "$model" >"$work/other.cfg"
run ck_other train --model "$work/other.cfg" --batch 8 --timeout 10 --steps 6 -o "$work/ck_run2" \
  --ckpt-dir "$work/ck" --ckpt-every 2 --resume
check "--resume with another model: exit 3 (got $status)" [ "$status" -eq 3 ]
check "... the error says all were rejected and what to do" \
  grep -q "all 2 were rejected .*pass the --model they were written for" "$work/ck_other.err"
check "... the checkpoints are untouched" diff -r "$work/ck.before" "$work/ck"
printf 'XXXX' | dd of="$work/ck/ckpt-00000004.ddpc" bs=1 seek=200 conv=notrunc 2>/dev/null
truncate -s 1000 "$work/ck/ckpt-00000002.ddpc"
cp -a "$work/ck" "$work/ck.damaged"
run ck_damaged train "${common[@]}" --steps 6 -o "$work/ck_run3" --ckpt-dir "$work/ck" --ckpt-every 2 --resume
check "--resume over damaged checkpoints only: exit 3 (got $status)" [ "$status" -eq 3 ]
check "... the damaged files are left for the user" diff -r "$work/ck.damaged" "$work/ck"
check "... no step trained" [ ! -e "$work/ck_run3/steps.csv" ]

# ---- 7. --resume from a checkpoint past --steps ----------------------------------------------------
run past_first train "${common[@]}" --steps 4 -o "$work/past_run" --ckpt-dir "$work/past" --ckpt-every 2
check "checkpoint at step 4 written: exit $status" [ "$status" -eq 0 ]
cp "$work/past_run/steps.csv" "$work/past_steps.before"
run past train "${common[@]}" --steps 2 -o "$work/past_run" --ckpt-dir "$work/past" --resume \
  --params-out "$work/past.bin"
check "--resume at step 4 with --steps 2: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... the error names the checkpoint's step and --steps" \
  grep -q -- "--steps 2: the newest checkpoint, .*ckpt-00000004.ddpc, is already at step 4" "$work/past.err"
check "... no parameters written as those of 2 steps" [ ! -e "$work/past.bin" ]
check "... the earlier run's steps.csv untouched" cmp -s "$work/past_steps.before" "$work/past_run/steps.csv"

# ---- 8. --resume into the -o of the run it continues -------------------------------------------
run cont_first train "${common[@]}" --steps 4 -o "$work/cont" --ckpt-dir "$work/cont_ck" --ckpt-every 2
check "first run: exit $status" [ "$status" -eq 0 ]
cp "$work/cont/rank-0.attempt-0.csv" "$work/cont_rows.before"
printf '0,0,4,0.01' >>"$work/cont/rank-0.attempt-0.csv" # a row torn by a full disk
run cont train "${common[@]}" --steps 6 -o "$work/cont" --ckpt-dir "$work/cont_ck" --ckpt-every 2 --resume
check "--resume into the same -o: exit $status" [ "$status" -eq 0 ]
check "... the earlier run's rows are kept, first" \
  cmp -s "$work/cont_rows.before" <(head -n 5 "$work/cont/rank-0.attempt-0.csv")
check "... the torn row is cut and said so" grep -q "cut a torn row (10 bytes)" "$work/cont.err"
check "... steps.csv has steps 0-3, then 4-5" \
  [ "$(tail -n +2 "$work/cont/steps.csv" | cut -d, -f3 | tr '\n' ' ')" = "0 1 2 3 4 5 " ]
echo "not metrics" >"$work/cont/rank-0.attempt-0.csv"
run cont_foreign train "${common[@]}" --steps 8 -o "$work/cont" --ckpt-dir "$work/cont_ck" --ckpt-every 2 --resume
check "--resume onto a file that is not metrics: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... it is left as it was" [ "$(cat "$work/cont/rank-0.attempt-0.csv")" = "not metrics" ]

# ---- 9. an address to bind that does not resolve ------------------------------------------------
run bind_bad train "${common[@]}" --steps 2 -o "$work/bind" --bind 999.1.1.1
check "train --bind 999.1.1.1: exit 2, not a crash (got $status)" [ "$status" -eq 2 ]
check "... the error names the address" grep -q "the address to bind, '999.1.1.1'.* does not resolve" "$work/bind_bad.err"
DDPSIM_BIND_ADDR=999.1.1.1 run bind_cal calibrate --quick --out "$work/bind.cfg"
check "calibrate with DDPSIM_BIND_ADDR=999.1.1.1: exit 2, not a crash (got $status)" [ "$status" -eq 2 ]
check "... no profile" [ ! -e "$work/bind.cfg" ]

# ---- 10. a checkpoint directory that cannot take a checkpoint -------------------------------------
run ckdir_file train "${common[@]}" --steps 3 -o "$work/ckdir" --ckpt-dir "$work/model.cfg" --ckpt-every 2
check "--ckpt-dir that is a file: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... says it is not a directory" grep -q -- "--ckpt-dir .*model.cfg is not a directory" "$work/ckdir_file.err"
mkdir -p "$work/ro"
if [ "$(id -u)" -eq 0 ]; then # root writes anywhere but on a read-only file system
  ro_run() { unshare -m sh -c 'mount -t tmpfs -o ro tmpfs "$0" && exec "$@"' "$work/ro" "$@"; }
else
  chmod 555 "$work/ro"
  ro_run() { "$@"; }
fi
ro_run timeout -s KILL 30 "$bin" train "${common[@]}" --steps 3 -o "$work/ckro" --ckpt-dir "$work/ro" --ckpt-every 2 \
  >"$work/ckro.out" 2>"$work/ckro.err"
status=$?
check "--ckpt-dir that cannot be written: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... says so before training, not at the first checkpoint" \
  grep -q -- "--ckpt-dir .*/ro: cannot write there" "$work/ckro.err"
check "... no step trained" [ ! -s "$work/ckro/rank-0.attempt-0.csv" ]

# ---- 11. --tensorboard of a run that fails before training -----------------------------------------
run tb_fail train "${common[@]}" --steps 2 -o "$work/tbf" --tensorboard "$work/tbf_tb" --rdzv "$work/no-such-rdzv"
check "train with a missing --rdzv directory: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... saying to create it" grep -q "rendezvous directory .*no-such-rdzv' does not exist: create it" "$work/tb_fail.err"
check "... and leaves no event file in --tensorboard" [ -z "$(find "$work/tbf_tb" -type f 2>/dev/null)" ]
run tb_again train "${common[@]}" --steps 2 -o "$work/tbf" --tensorboard "$work/tbf_tb"
check "the same --tensorboard then takes a fresh run (got $status)" [ "$status" -eq 0 ]
check "... which writes its event file" [ -n "$(find "$work/tbf_tb/rank_0" -name 'events.out.tfevents.*')" ]

# ---- 12. launch of a command that cannot run ------------------------------------------------------
run launch_nocmd launch --nproc 2 --rdzv-dir "$work/rdzv12" -- "$work/no-such-command" --x
check "launch of a missing command: exit 2, not 4 (got $status)" [ "$status" -eq 2 ]
check "... naming it" grep -q "cannot run '.*no-such-command'" "$work/launch_nocmd.err"
check "... before any rank starts" sh -c '! grep -q "rank 0 (pid" "$1"' _ "$work/launch_nocmd.err"
run launch_nopath launch --nproc 2 --rdzv-dir "$work/rdzv12" -- no-such-command-on-path-xyz
check "launch of a command not on PATH: exit 2 (got $status)" [ "$status" -eq 2 ]

# ---- 13. temp files of a killed traced run -------------------------------------------------------
"$bin" train "${common[@]}" --steps 1000000 -o "$work/tr" --trace >/dev/null 2>&1 &
tpid=$!
for _ in $(seq 1 100); do
  [ -n "$(find "$work/tr" -name 'trace-rank-0.json.tmp.*' 2>/dev/null)" ] && break
  sleep 0.1
done
{ kill -KILL $tpid && wait $tpid; } 2>/dev/null
check "a killed traced rank leaves its trace's temp file" [ -n "$(find "$work/tr" -name 'trace-rank-0.json.tmp.*')" ]
run tr_again train "${common[@]}" --steps 2 -o "$work/tr" --trace
check "the next run into -o: exit $status" [ "$status" -eq 0 ]
check "... removes that temp file, saying so" grep -q "removed '.*trace-rank-0.json.tmp." "$work/tr_again.err"
check "... and none is left" [ -z "$(find "$work/tr" -name '*.tmp.*')" ]
check "... its own trace written" [ -s "$work/tr/trace-rank-0.json" ]

# ---- 14. calibrate --out to a device ---------------------------------------------------------------
ln -s /dev/null "$work/null.cfg"
run cal_null calibrate --quick --model "$model" --out "$work/null.cfg" --progress off
check "calibrate --out a link to /dev/null: exit $status" [ "$status" -eq 0 ]
check "... writes no measured model file beside a device" [ ! -e "$work/null.mlp-tiny.cfg" ]
check "... and says so" grep -q "device or FIFO, so the measured model files" "$work/cal_null.err"
check "... the link is left a link to /dev/null" [ "$(readlink "$work/null.cfg")" = /dev/null ]

# ---- 15. a restart count that is not one -----------------------------------------------------------
for v in abc -5; do
  DDPSIM_RESTART_COUNT=$v run restart_count train "${common[@]}" --steps 2 -o "$work/rc"
  check "DDPSIM_RESTART_COUNT=$v: exit 3 (got $status)" [ "$status" -eq 3 ]
  check "... naming the variable" grep -q "DDPSIM_RESTART_COUNT" "$work/restart_count.err"
done
check "... and no metrics of an attempt 0 or -5" [ -z "$(ls "$work/rc" 2>/dev/null)" ]

# ---- 16. --params-out among the run's own outputs ------------------------------------------------
run po_steps train "${common[@]}" --steps 2 -o "$work/po" --params-out "$work/po/steps.csv"
check "--params-out DIR/steps.csv: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... naming the clash" grep -q -- "--params-out .*steps.csv is a name this run writes in -o" "$work/po_steps.err"
run po_ckpt train "${common[@]}" --steps 2 -o "$work/po" --ckpt-dir "$work/po_ck" --ckpt-every 2 \
  --params-out "$work/po_ck/ckpt-00000002.ddpc"
check "--params-out named like a checkpoint in --ckpt-dir: exit 2 (got $status)" [ "$status" -eq 2 ]
run po_inside train "${common[@]}" --steps 2 -o "$work/po_new" --params-out "$work/po_new/params.bin"
check "--params-out inside an -o the run makes: exit 0 (got $status)" [ "$status" -eq 0 ]
check "... the parameters written there" [ -s "$work/po_new/params.bin" ]

# ---- 17. what a killed calibration left in --scratch --------------------------------------------------
sh -c 'exit 0' &
dead=$!
wait $dead
mkdir -p "$work/scr/ddpsim-calibrate-ckpt.$dead"
head -c 4096 /dev/zero >"$work/scr/ddpsim-calibrate-ckpt.$dead/ckpt-00000000.ddpc.tmp.Ab12Cd"
head -c 4096 /dev/zero >"$work/scr/ddpsim-calibrate-ckpt.$dead/ckpt-00000000.ddpc"
mkdir -p "$work/scr/ddpsim-calibrate-ckpt.$$" # a live process's: kept
run cal_scr calibrate --quick --model "$model" --out "$work/scr.cfg" --scratch "$work/scr" --progress off
check "calibrate with a dead calibration's scratch left: exit $status" [ "$status" -eq 0 ]
check "... removes it" [ ! -e "$work/scr/ddpsim-calibrate-ckpt.$dead" ]
check "... saying so" grep -q "removed '.*ddpsim-calibrate-ckpt.$dead', left by a calibration that died" "$work/cal_scr.err"
check "... and keeps a live process's" [ -d "$work/scr/ddpsim-calibrate-ckpt.$$" ]

# ---- 18. two runs writing checkpoints into one directory --------------------------------------------
"$bin" train "${common[@]}" --steps 1000000 -o "$work/twoA" --ckpt-dir "$work/two_ck" --ckpt-every 5 \
  >/dev/null 2>&1 &
apid=$!
for _ in $(seq 1 100); do
  [ -n "$(find "$work/two_ck" -name 'ckpt-*.ddpc' 2>/dev/null)" ] && break
  sleep 0.1
done
run twoB train "${common[@]}" --steps 1000000 -o "$work/twoB" --ckpt-dir "$work/two_ck" --ckpt-every 5 --resume
check "a second run into a --ckpt-dir another is writing: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... saying it is in use" grep -q -- "--ckpt-dir .*two_ck is in use by another run" "$work/twoB.err"
{ kill -KILL $apid && wait $apid; } 2>/dev/null
run twoC train "${common[@]}" --steps 1 -o "$work/twoC" --ckpt-dir "$work/two_ck" --ckpt-every 5 --resume
check "once the first run is gone, the directory is free (only --steps 1 is refused now)" \
  grep -q "is already at step" "$work/twoC.err"

# ---- 19. a rendezvous directory reused from an earlier run ---------------------------------------
mkdir -p "$work/rz"
run rz_first train "${common[@]}" --steps 1 -o "$work/rz_run" --rdzv "$work/rz"
check "a run through --rdzv DIR: exit $status" [ "$status" -eq 0 ]
run rz_again train "${common[@]}" --steps 1 -o "$work/rz_run2" --rdzv "$work/rz"
check "the next run through the same --rdzv DIR: exit 2 (got $status)" [ "$status" -eq 2 ]
check "... saying what to do" grep -q "give every run an empty rendezvous directory" "$work/rz_again.err"

it_end

#!/usr/bin/env bash
# Integration test of the communication hooks through the command line:
# `ddpsim launch --nproc 2 -- ddpsim train --compress ...` (Gloo over
# loopback TCP, FileStore rendezvous).
#
#  1. fp16, bf16 and powersgd:1 (--powersgd-start 2) on mlp-small.cfg, 6
#     steps: exit 0, steps.csv with 2 x 6 rows, and rank 0's summary line of
#     the hook: fp16/bf16 allreduce half the fp32 bytes a step; PowerSGD
#     (steps 2..5 compressed, 0..1 vanilla) fewer than fp32.
#  2. Bad input exits 2 with a message and starts nothing: --compress
#     powersgd:0, --compress zip, --powersgd-start without PowerSGD,
#     --powersgd-min-rate -1, bf16 with a non-default algorithm.
#
#   test_compress.sh DDPSIM_BINARY SOURCE_DIR
set -u

bin=${1:?usage: test_compress.sh DDPSIM_BINARY SOURCE_DIR}
src=${2:?source dir}
model="$src/scenarios/models/mlp-small.cfg"   # 2,099,712 parameters
fp32_bytes=$((2099712 * 4))
. "$src/tests/integration/lib.sh"
need_tools test_compress pgrep
it_begin test_compress
it_watchdog=120
it_quiet=" 0 2 "

N=6
# ---- 1. each hook under the launcher -------------------------------------------
for hook in fp16 bf16 powersgd:1; do
  name=${hook%%:*}
  extra=()
  [ "$name" = powersgd ] && extra=(--powersgd-start 2)
  run "$name" launch --nproc 2 --rdzv-dir "$work/rdzv-$name" -- ddpsim train --model "$model" \
    --batch 8 --steps $N --timeout 30 --compress "$hook" "${extra[@]}" -o "$work/run-$name"
  check "$hook: exit $status" [ "$status" -eq 0 ]
  check "$hook: steps.csv written" [ -s "$work/run-$name/steps.csv" ]
  check "$hook: 2 x $N rows in steps.csv" \
    [ "$(tail -n +2 "$work/run-$name/steps.csv" 2>/dev/null | wc -l)" -eq $((2 * N)) ]
  line=$(grep "ddpsim train: hook $hook:" "$work/$name.out")
  check "$hook: rank 0 reports the hook (stdout: $(head -c 600 "$work/$name.out"))" [ -n "$line" ]
  bytes=$(sed -n 's/.*: \([0-9]*\) bytes allreduced a step.*/\1/p' <<<"$line")
  case $name in
    fp16|bf16)
      check "$hook: $bytes bytes a step, want half of $fp32_bytes" \
        [ "${bytes:-0}" -eq $((fp32_bytes / 2)) ] ;;
    powersgd)
      check "$hook: 2 of $N steps in the vanilla phase ($line)" \
        grep -q "2 of $N steps in PowerSGD's vanilla phase" <<<"$line"
      # 2 vanilla steps at fp32 plus 4 compressed ones, fewer than fp32 throughout
      check "$hook: $bytes bytes a step, want fewer than $fp32_bytes" \
        [ "${bytes:-$fp32_bytes}" -lt "$fp32_bytes" ] ;;
  esac
done

# ---- 2. bad input: exit 2 with a message, before any rendezvous ---------------------
bad() { # NAME EXPECTED-PHRASE ARGS...
  local name=$1 phrase=$2
  shift 2
  run "$name" train --model "$model" --steps 1 -o "$work/bad" "$@"
  check "$name: exit $status, want 2" [ "$status" -eq 2 ]
  check "$name: message names '$phrase' (stderr: $(head -c 400 "$work/$name.err"))" \
    grep -q -- "$phrase" "$work/$name.err"
}
bad rank0 "rank" --compress powersgd:0
bad zip "unknown compression 'zip'" --compress zip
bad start_alone "go with --compress powersgd" --powersgd-start 5
bad rate_neg "powersgd-min-rate" --compress powersgd:1 --powersgd-min-rate -1
bad bf16_ring "bf16 needs --algorithm default" --compress bf16 --algorithm ring
check "bad input wrote no metrics" [ ! -e "$work/bad/steps.csv" ]

it_end

#!/usr/bin/env bash
# Integration test of faults in real training under `ddpsim launch`, with a
# short collective timeout (--timeout 3) and grace period (--grace 2):
#
#  a. a rank SIGKILLed in the middle of a step's allreduces
#     (--fail-at-step S --fail-rank 1): the launcher exits 4 within
#     timeout + 5 s of the kill, names rank 1 and signal 9, and leaves no
#     process behind (every rank it started is gone, none a zombie); what
#     the ranks measured before the fault is kept. Also when the launcher
#     runs late and finds both ranks dead at once, it blames rank 1, not
#     rank 0 that only exited because its peer died.
#  b. the same with --max-restarts 1 and checkpoints: the job completes and
#     its final parameters equal an uninterrupted run's, bit for bit.
#  c. a hung rank (SIGSTOP mid-training): the launcher ends within
#     timeout + 5 s + grace with a non-zero code, and every rank is gone.
#  d. a rendezvous that never completes (WORLD_SIZE=2 RANK=0 by hand, no
#     second rank): exit 4 within timeout + 5 s, naming the rendezvous.
#  e. bad options exit 2 with a message, a model that is not a stack of
#     linear layers exits 3, neither leaves output behind, and the launcher
#     does not retry them. `launch --cpu-bind` with more ranks than CPUs is
#     bad usage; with two ranks each gets CPUs of its own, the launcher's
#     between them.
#
# Times are CLOCK_MONOTONIC (python's time.monotonic), taken by a watcher
# that runs each command under a watchdog, timestamps its stderr lines,
# records every process the launcher starts, injects the SIGSTOP, and kills
# whatever is left at the end (so a failed check never leaves a rank behind).
#
#   test_faults.sh DDPSIM_BINARY SOURCE_DIR
set -u

bin=${1:?usage: test_faults.sh DDPSIM_BINARY SOURCE_DIR}
src=${2:?source dir}
model="$src/tests/data/runtime/mlp-tiny.cfg"
TIMEOUT=3
GRACE=2
SLACK=5
. "$src/tests/integration/lib.sh"
need_tools test_faults python3 pgrep
it_begin test_faults
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }   # a <= b, as reals

# ---- the watcher ---------------------------------------------------------------
cat >"$work/watch.py" <<'EOF'
"""Run a command under a watchdog and report what happened, as shell
variables (RC, T_START, T_END, T_STOP, PIDS, LEFT, ZOMBIES, TIMED_OUT) in
--vars, and its stderr with a CLOCK_MONOTONIC stamp per line in --err.

--stop-rank R --stop-after F:N  SIGSTOP the process whose environment has
RANK=R once file F has N lines (training is underway).
--pause-launcher N  SIGSTOP the command itself once it has started N
children, and SIGCONT it once every child has ended (is a zombie), so it
finds them all dead at once (PAUSED=1 when that happened).
Every process the command starts (its children: the ranks) is recorded in
PIDS as pid:rank; at the end any still there is listed in LEFT (ZOMBIES:
those in state Z). Then those and any deeper descendant still alive are
SIGCONTed and SIGKILLed, so nothing outlives the test. (Deeper descendants
are not checked: under ASan, LeakSanitizer's helper clones show up there,
and this container's init does not reap orphans.)"""
import os, signal, subprocess, sys, threading, time

args = sys.argv[1:]
opt = {}
while args and args[0] != "--":
    opt[args[0]] = args[1]
    args = args[2:]
cmd = args[1:]
limit = float(opt.get("--limit", "60"))

def children(pid):
    out = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out

def state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None

def rank_of(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            for kv in f.read().split(b"\0"):
                if kv.startswith(b"RANK="):
                    return int(kv[5:])
    except (OSError, ValueError):
        pass
    return None

lines = []
t_start = time.monotonic()
p = subprocess.Popen(cmd, stdout=open(opt["--out"], "wb"), stderr=subprocess.PIPE,
                     start_new_session=True)

def reader():
    for raw in p.stderr:
        lines.append((time.monotonic(), raw.decode(errors="replace").rstrip("\n")))
th = threading.Thread(target=reader, daemon=True)
th.start()

seen = {}          # pid -> rank (None when unknown)
t_stop = None
timed_out = 0
stop_rank = int(opt["--stop-rank"]) if "--stop-rank" in opt else None
if "--stop-after" in opt:
    stop_file, stop_n = opt["--stop-after"].rsplit(":", 1)
    stop_n = int(stop_n)
pause_n = int(opt.get("--pause-launcher", "0"))
paused = 0     # 0 not yet, 1 stopped, 2 continued after all children ended
others = set()     # deeper descendants (e.g. a sanitizer's helper processes)
while p.poll() is None:
    for c in children(p.pid):
        if seen.get(c) is None:       # the environment is the launcher's until exec
            seen[c] = rank_of(c)
    todo = list(seen)
    while todo:
        for c in children(todo.pop()):
            if c not in others:
                others.add(c)
                todo.append(c)
    if stop_rank is not None and t_stop is None:
        try:
            with open(stop_file) as f:
                n = sum(1 for _ in f)
        except OSError:
            n = 0
        victims = [q for q, r in seen.items() if r == stop_rank and state(q) not in (None, "Z")]
        if n >= stop_n and victims:
            os.kill(victims[0], signal.SIGSTOP)
            t_stop = time.monotonic()
    if pause_n and paused == 0 and len(seen) >= pause_n:
        os.kill(p.pid, signal.SIGSTOP)
        paused = 1
    elif paused == 1 and all(state(q) in (None, "Z") for q in seen):
        os.kill(p.pid, signal.SIGCONT)
        paused = 2
    if time.monotonic() - t_start > limit:
        timed_out = 1
        os.kill(p.pid, signal.SIGCONT)
        os.killpg(p.pid, signal.SIGKILL)
        break
    time.sleep(0.01)
rc = p.wait()
t_end = time.monotonic()
th.join(5)
left = [q for q in seen if state(q) is not None]
zombies = [q for q in left if state(q) == "Z"]
for q in left + [q for q in others if state(q) is not None]:
    for s in (signal.SIGCONT, signal.SIGKILL):
        try:
            os.kill(q, s)
        except OSError:
            pass
with open(opt["--err"], "w") as f:
    for t, l in lines:
        f.write("%.3f %s\n" % (t, l))
with open(opt["--vars"], "w") as f:
    f.write("RC=%d\nT_START=%.3f\nT_END=%.3f\nT_STOP=%s\nTIMED_OUT=%d\nPAUSED=%d\n" %
            (rc if rc >= 0 else 128 - rc, t_start, t_end,
             "%.3f" % t_stop if t_stop is not None else "", timed_out, paused == 2))
    f.write("PIDS='%s'\nLEFT='%s'\nZOMBIES='%s'\n" % (
        " ".join("%d:%s" % (q, r) for q, r in sorted(seen.items())),
        " ".join(map(str, left)), " ".join(map(str, zombies))))
EOF

# watch NAME LIMIT [watcher options] -- CMD...: run under the watcher; its
# variables are then set here (RC, T_START, T_END, ...); stderr is in
# $work/NAME.err with stamps.
watch() {
  local name=$1 limit=$2
  shift 2
  RC=255 T_START=0 T_END=0 T_STOP="" TIMED_OUT=0 PAUSED=0 PIDS="" LEFT="" ZOMBIES=""
  python3 "$work/watch.py" --limit "$limit" --out "$work/$name.out" --err "$work/$name.err" \
    --vars "$work/$name.vars" "$@"
  # shellcheck disable=SC1090
  . "$work/$name.vars"
  echo "--- $name: exit $RC after $(awk -v a="$T_START" -v b="$T_END" 'BEGIN{printf "%.2f", b-a}') s, processes seen: ${PIDS:-none}"
  check "$name: finished before the watchdog (${limit} s)" [ "$TIMED_OUT" -eq 0 ]
  check "$name: no process left behind (left: '$LEFT', zombies: '$ZOMBIES')" [ -z "$LEFT" ]
  check "$name: no process of this test still running" [ -z "$(pgrep -f -- "$work/$name" 2>/dev/null)" ]
}
err_has() { grep -qF -- "$2" "$work/$1.err"; }
# stamp of the first stderr line of NAME containing TEXT
stamp_of() { grep -F -- "$2" "$work/$1.err" | head -1 | cut -d' ' -f1; }
show_err() { echo "    stderr of $1:"; sed 's/^/    | /' "$work/$1.err" | head -c 3000; }

train=(ddpsim train --model "$model" --batch 8 --timeout $TIMEOUT --bucket-cap-mb 0.03
       --first-bucket-mb 0.01 --dataset 256)
launch=("$bin" launch --nproc 2 --grace $GRACE)

# ---- a. a rank killed mid-allreduce --------------------------------------------
S=5
watch kill 40 -- "${launch[@]}" --rdzv-dir "$work/kill/rdzv" -- "${train[@]}" --steps 400 \
  -o "$work/kill/out" --fail-at-step $S --fail-rank 1
t_kill=$(stamp_of kill "injected failure: SIGKILL at step $S")
check "kill: exit 4 (a peer died), got $RC" [ "$RC" -eq 4 ] || show_err kill
check "kill: the rank reported its injected failure" [ -n "$t_kill" ]
if [ -n "$t_kill" ]; then
  took=$(awk -v a="$t_kill" -v b="$T_END" 'BEGIN{printf "%.2f", b-a}')
  echo "    kill -> launcher exit: $took s (bound $TIMEOUT + $SLACK s)"
  check "kill: launcher ended ${took} s after the kill (bound $((TIMEOUT + SLACK)) s)" le "$took" $((TIMEOUT + SLACK))
fi
check "kill: the launcher names rank 1" err_has kill "rank 1"
check "kill: the launcher says signal 9" err_has kill "signal 9"
check "kill: the launcher's summary blames rank 1, killed by signal 9" \
  grep -qE "ddpsim launch: error: rank 1 .*signal 9" "$work/kill.err"
check "kill: one attempt (no restarts were allowed)" [ "$(ls "$work/kill/rdzv" | grep -c "^attempt-")" -eq 1 ]
# What was measured before the fault is on disk: steps 0..S-1 on both ranks.
for r in 0 1; do
  f="$work/kill/out/rank-$r.attempt-0.csv"
  check "kill: rank $r kept its rows of steps 0..$((S - 1))" \
    [ "$(tail -n +2 "$f" 2>/dev/null | cut -d, -f3 | tr '\n' ' ')" = "$(seq -s ' ' 0 $((S - 1))) " ]
done

# A launcher that runs late finds both ranks dead at once: rank 0 exited 4
# because rank 1 died, and the launcher must still blame rank 1.
watch late 40 --pause-launcher 2 -- "${launch[@]}" --rdzv-dir "$work/late/rdzv" -- "${train[@]}" \
  --steps 400 -o "$work/late/out" --fail-at-step $S --fail-rank 1
check "late: the launcher was paused until both ranks had ended" [ "$PAUSED" -eq 1 ]
check "late: exit 4, got $RC" [ "$RC" -eq 4 ] || show_err late
check "late: rank 0 failed because of its peer (exit 4)" err_has late "rank 0 of 2"
check "late: the launcher's summary still blames rank 1, killed by signal 9" \
  grep -qE "ddpsim launch: error: rank 1 .*signal 9" "$work/late.err" || show_err late

# ---- b. the same with a restart from the checkpoint ------------------------------
N=12
watch straight 60 -- "${launch[@]}" --rdzv-dir "$work/straight/rdzv" -- "${train[@]}" --steps $N \
  -o "$work/straight/out" --params-out "$work/straight.bin"
check "straight: exit 0, got $RC" [ "$RC" -eq 0 ] || show_err straight
watch restart 60 -- "${launch[@]}" --max-restarts 1 --rdzv-dir "$work/restart/rdzv" -- \
  "${train[@]}" --steps $N -o "$work/restart/out" --fail-at-step $S --fail-rank 1 \
  --ckpt-dir "$work/restart/ck" --ckpt-every 2 --params-out "$work/restart.bin"
check "restart: exit 0, got $RC" [ "$RC" -eq 0 ] || show_err restart
check "restart: rank 1 was killed by signal 9" grep -qE "rank 1 .*signal 9" "$work/restart.err"
check "restart: the group was restarted" err_has restart "restarting the group (restart 1 of 1)"
check "restart: resumed from the checkpoint of step 4" err_has restart "at step 4"
check "restart: done after 2 attempts" err_has restart "done after 2 attempts"
check "restart: two attempts, each with a fresh rendezvous directory" [ "$(ls "$work/restart/rdzv" | grep -c "^attempt-")" -eq 2 ]
check "restart: final parameters equal the uninterrupted run's (bitwise)" \
  cmp "$work/straight.bin" "$work/restart.bin"
# The second attempt measured steps 4..N-1 on each rank.
python3 - "$work/restart/out/steps.csv" $N <<'EOF' || fail "restart: steps.csv of the restarted job"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
n = int(sys.argv[2])
for rank in ("0", "1"):
    a1 = sorted(int(r["step"]) for r in rows if r["rank"] == rank and r["attempt"] == "1")
    assert a1 == list(range(4, n)), "rank %s attempt 1 steps %s" % (rank, a1)
    a0 = sorted(int(r["step"]) for r in rows if r["rank"] == rank and r["attempt"] == "0")
    assert a0 == list(range(0, 5)), "rank %s attempt 0 steps %s" % (rank, a0)
EOF
checks=$((checks + 1))

# ---- c. a hung rank ------------------------------------------------------------
# Rank 1 is stopped once rank 0 has measured 20 steps; rank 0 then waits in
# an allreduce until its timeout, exits 4, and the launcher stops rank 1
# (SIGTERM stays pending on a stopped process; SIGKILL after the grace).
watch hang 60 --stop-rank 1 --stop-after "$work/hang/out/rank-0.attempt-0.csv:21" -- \
  "${launch[@]}" --rdzv-dir "$work/hang/rdzv" -- "${train[@]}" --steps 1000000 -o "$work/hang/out"
check "hang: the watcher stopped rank 1 mid-training" [ -n "$T_STOP" ]
check "hang: non-zero exit, got $RC" [ "$RC" -ne 0 ]
check "hang: exit 4 (a peer timed out), got $RC" [ "$RC" -eq 4 ] || show_err hang
if [ -n "$T_STOP" ]; then
  took=$(awk -v a="$T_STOP" -v b="$T_END" 'BEGIN{printf "%.2f", b-a}')
  echo "    SIGSTOP -> launcher exit: $took s (bound $TIMEOUT + $SLACK + $GRACE s)"
  check "hang: launcher ended ${took} s after the stop (bound $((TIMEOUT + SLACK + GRACE)) s)" \
    le "$took" $((TIMEOUT + SLACK + GRACE))
fi
check "hang: rank 0 reports the timeout" grep -qiE "timed out|timeout" "$work/hang.err"
check "hang: the launcher names the rank that failed" grep -qE "ddpsim launch: rank 0 " "$work/hang.err"

# ---- d. a rendezvous that never completes --------------------------------------------
mkdir -p "$work/lonely/rdzv"
watch lonely 30 -- env WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 \
  "$bin" train --model "$model" --timeout $TIMEOUT --rdzv "$work/lonely/rdzv" -o "$work/lonely/out"
took=$(awk -v a="$T_START" -v b="$T_END" 'BEGIN{printf "%.2f", b-a}')
echo "    lonely rank 0 gave up after $took s (bound $TIMEOUT + $SLACK s)"
check "lonely: exit 4, got $RC" [ "$RC" -eq 4 ] || show_err lonely
check "lonely: ended in ${took} s (bound $((TIMEOUT + SLACK)) s)" le "$took" $((TIMEOUT + SLACK))
check "lonely: took at least the timeout (${took} s)" le "$TIMEOUT" "$took"
check "lonely: the message mentions the rendezvous" err_has lonely "rendezvous"
check "lonely: the message says how many ranks were expected" err_has lonely "2 ranks"

# ---- e. bad input ----------------------------------------------------------------------
bad() { # NAME WANT-RC TEXT ARGS...
  local name=$1 want=$2 text=$3
  shift 3
  watch "$name" 30 -- "$bin" "$@"
  check "$name: exit $want, got $RC" [ "$RC" -eq "$want" ] || show_err "$name"
  check "$name: the message mentions '$text'" err_has "$name" "$text"
  check "$name: no output directory created" [ ! -e "$work/$name/out" ]
}
bad overlap 2 "--overlap" train --model "$model" -o "$work/overlap/out" --overlap maybe
bad batch0 2 "--batch" train --model "$model" -o "$work/batch0/out" --batch 0
bad nomodel 2 "--model" train -o "$work/nomodel/out" --steps 3
bad unknown 2 "unknown option" train --model "$model" -o "$work/unknown/out" --frobnicate
bad failpair 2 "--fail-rank" train --model "$model" -o "$work/failpair/out" --fail-at-step 3
bad resumenodir 2 "--ckpt-dir" train --model "$model" -o "$work/resumenodir/out" --resume
# Options that would do nothing: usage errors, not silence.
bad ckptdironly 2 "alone it does nothing" train --model "$model" -o "$work/ckptdironly/out" --ckpt-dir "$work/ck"
bad ckptkeep 2 "--ckpt-keep" train --model "$model" -o "$work/ckptkeep/out" --ckpt-keep 3
bad failafter 2 "--fail-at-step 30: the run has steps 0 to 19" train --model "$model" -o "$work/failafter/out" \
  --steps 20 --fail-at-step 3,30 --fail-rank 0
bad failrank 2 "--fail-rank 5: the job has ranks 0 to 0" train --model "$model" -o "$work/failrank/out" \
  --steps 3 --fail-at-step 1 --fail-rank 5
bad launchseed 2 "--fail-seed" launch --nproc 2 --fail-seed 3 -- sh -c "mkdir -p '$work/launchseed/out'"
bad launchmtbf 2 "--max-restarts" launch --nproc 2 --fail-mtbf 1 -- sh -c "mkdir -p '$work/launchmtbf/out'"
bad resnet 3 "linear" train --model "$src/scenarios/models/resnet50.cfg" -o "$work/resnet/out"
bad launchnonproc 2 "--nproc" launch -- ddpsim train --model "$model" -o "$work/launchnonproc/out"
bad launchnocmd 2 "command" launch --nproc 2
# Under the launcher, with restarts allowed: not retried, the rank's code
# passes through.
bad launchbad 2 "not restarting" launch --nproc 2 --max-restarts 3 --rdzv-dir "$work/launchbad/rdzv" -- \
  ddpsim train --model "$model" -o "$work/launchbad/out" --overlap maybe
check "launchbad: one attempt only (no restart)" [ "$(ls "$work/launchbad/rdzv" | grep -c "^attempt-")" -eq 1 ]
check "launchbad: no restart announced" [ -z "$(grep -F "restarting the group" "$work/launchbad.err")" ]
bad launchresnet 3 "not restarting" launch --nproc 2 --max-restarts 3 --rdzv-dir "$work/launchresnet/rdzv" -- \
  ddpsim train --model "$src/scenarios/models/resnet50.cfg" -o "$work/launchresnet/out"
check "launchresnet: one attempt only (no restart)" [ "$(ls "$work/launchresnet/rdzv" | grep -c "^attempt-")" -eq 1 ]
check "launchresnet: no restart announced" [ -z "$(grep -F "restarting the group" "$work/launchresnet.err")" ]
check "launchresnet: the rank's message names the layer" err_has launchresnet "is not type = \"linear\""

# --cpu-bind: more ranks than CPUs is bad usage; otherwise each rank gets CPUs
# of its own, and together they are all the launcher's.
ncpu=$(nproc)
bad launchbindmany 2 "--cpu-bind" launch --nproc $((ncpu + 1)) --cpu-bind -- sh -c "mkdir -p '$work/launchbindmany/out'"
if [ "$ncpu" -ge 2 ]; then
  mkdir -p "$work/bind"
  watch bind 30 -- "$bin" launch --nproc 2 --cpu-bind -- \
    sh -c 'grep Cpus_allowed_list /proc/self/status > "$0/rank-$RANK"' "$work/bind"
  check "bind: exit 0, got $RC" [ "$RC" -eq 0 ] || show_err bind
  check "bind: the ranks' CPUs are disjoint, one block each, and together the launcher's" \
    python3 - "$work/bind" "$(grep Cpus_allowed_list /proc/self/status)" <<'PY'
import sys
def cpus(line):
    out = set()
    for part in line.split(":")[1].split(","):
        a, _, b = part.strip().partition("-")
        out |= set(range(int(a), int(b or a) + 1))
    return out
r0, r1 = (cpus(open(f"{sys.argv[1]}/rank-{r}").read()) for r in (0, 1))
mine = cpus(sys.argv[2])
print(f"    launcher {sorted(mine)}: rank 0 {sorted(r0)}, rank 1 {sorted(r1)}")
assert r0 and r1 and not r0 & r1 and r0 | r1 == mine and max(r0) < min(r1)
PY
else
  echo "    bind: skipped, one CPU here"
fi

it_end

#!/usr/bin/env bash
# TensorBoard event files, read with TensorBoard's own reader (the tensorboard
# package from PyPI, installed by this test into a venv in the build
# directory and kept there for the next run). Where PyPI cannot be reached,
# the reader cannot be had and the test skips (exit 77).
#
#  1. launch --nproc 2 -- train --tensorboard (Gloo over loopback): one event
#     file per rank in DIR/rank_R; every listed tag; each step's values equal
#     steps.csv's (at float32 precision: TensorBoard stores float32), the
#     derived ones (CommRatio, SamplesPerSec, the buckets' sum) agree with it,
#     nothing dropped, system figures present.
#  2. A restart (--max-restarts 1, rank 1 killed at step 7, checkpoint at 5):
#     still one file per rank, a SessionLog START at step 5, every step once
#     with the values of the attempt that ran it last (before step 5, what
#     the killed attempt's loggers had written: a prefix), Train/Attempt 0
#     then 1.
#  3. A killed rank without restarts: its file reads through without error up
#     to its last record, steps 0..k in order with the rank's CSV values.
#  4. Bad input: an unwritable --tensorboard (exit 2 before any training), a
#     directory with an earlier run's files (exit 2), an empty path (exit 2).
#  5. simulate --tensorboard: one run per combination of the other swept
#     dimensions, steps = the innermost swept values (nodes; the checkpoint
#     interval of the failure study), values equal the CSV's, same bytes on a
#     second run; --shard refused.
#
#   test_tensorboard.sh DDPSIM_BINARY SOURCE_DIR BUILD_DIR
set -u

bin=${1:?usage: test_tensorboard.sh DDPSIM_BINARY SOURCE_DIR BUILD_DIR}
src=${2:?source dir}
build=${3:?build dir}
model="$src/tests/data/runtime/mlp-tiny.cfg"
. "$src/tests/integration/lib.sh"
need_tools test_tensorboard python3 flock
it_begin test_tensorboard

# ---- TensorBoard's reader, in a venv kept in the build directory ------------
venv="$build/tb-venv"
py="$venv/bin/python"
reader_ok() { "$py" -c 'import tensorboard.backend.event_processing.event_accumulator' 2>/dev/null; }
exec 9>"$build/tb-venv.lock"
flock 9
if ! reader_ok; then
  echo "test_tensorboard: installing tensorboard from PyPI into $venv (once)"
  rm -rf "$venv"
  if ! python3 -m venv "$venv" >"$work/venv.log" 2>&1; then
    cat "$work/venv.log" >&2
    echo "test_tensorboard: FAIL: python3 -m venv does not work (python3-venv, from scripts/setup.sh)" >&2
    exit 1
  fi
  if ! "$venv/bin/pip" install --quiet --disable-pip-version-check tensorboard >>"$work/venv.log" 2>&1; then
    rm -rf "$venv"
    # No way to PyPI from here (no network, a proxy whose certificate this
    # system does not trust): the reader cannot be had, so nothing is checked.
    if grep -Eqi "SSLError|CERTIFICATE_VERIFY_FAILED|ConnectionError|NewConnectionError|Name or service not known|Temporary failure in name resolution|Network is unreachable|timed out|No matching distribution found" "$work/venv.log"; then
      echo "test_tensorboard: SKIP: PyPI is not reachable from this machine, so TensorBoard's reader cannot be installed:" \
           "$(grep -Ei -m1 "error|warning" "$work/venv.log" | cut -c1-200)" >&2
      exit 77
    fi
    cat "$work/venv.log" >&2
    echo "test_tensorboard: FAIL: pip could not install the tensorboard package into the venv" >&2
    exit 1
  fi
  if ! reader_ok; then
    echo "test_tensorboard: FAIL: the tensorboard package installed but its event reader does not import" >&2
    exit 1
  fi
fi
flock -u 9
echo "test_tensorboard: reader: tensorboard $("$py" -c 'import tensorboard; print(tensorboard.__version__)')"

# The checks in Python, run with the venv's interpreter.
cat >"$work/tbcheck.py" <<'EOF'
import csv, glob, math, os, sys
import numpy as np
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.backend.event_processing import event_file_loader as efl

def f32(x):
    return float(np.float32(x))

def same(tb, want, what):
    # TensorBoard holds float32: equal to the CSV's value rounded to float32,
    # give or take the CSV's own last printed digit.
    ok = abs(tb - f32(want)) <= abs(want) * 2.0 ** -23 + 1e-9
    assert ok, "%s: TensorBoard %r, CSV %r" % (what, tb, want)

def scalars(run_dir):
    acc = ea.EventAccumulator(run_dir, size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}

def raw_events(run_dir):
    files = sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))
    assert len(files) == 1, "%s: %d event files, expected one" % (run_dir, len(files))
    return list(efl.EventFileLoader(files[0]).Load())

TRAIN_TAGS = ["Train/Loss", "Train/LR", "Train/SamplesPerSec", "Train/StepTime", "Train/Attempt",
              "Dist/SyncTime", "Dist/ExposedComm", "Dist/CommRatio", "Logger/Dropped"]
SYSTEM_TAGS = ["System/CPUUtil", "System/MemoryRSS", "System/NetRxGbps", "System/NetTxGbps"]

def csv_rows(path, rank):
    # The last attempt's row of each step: what TensorBoard shows after a restart.
    rows = {}
    for r in csv.DictReader(open(path)):
        if int(r["rank"]) == rank:
            s = int(r["step"])
            if s not in rows or int(r["attempt"]) >= int(rows[s]["attempt"]):
                rows[s] = r
    return rows

def check_steps(sc, rows, steps, world, batch, lr, rank):
    for tag in TRAIN_TAGS:
        got = [s for s, _ in sc[tag]]
        assert got == steps, "rank %d %s: steps %s, expected %s" % (rank, tag, got, steps)
    buckets = sorted(t for t in sc if t.startswith("Dist/BucketAllreduce/"))
    assert buckets, "rank %d: no Dist/BucketAllreduce/<k>" % rank
    v = {t: dict(sc[t]) for t in sc}
    for s in steps:
        r = rows[s]
        what = "rank %d step %d" % (rank, s)
        same(v["Train/StepTime"][s], float(r["step_s"]), what + " Train/StepTime")
        same(v["Train/Loss"][s], float(r["loss"]), what + " Train/Loss")
        same(v["Dist/SyncTime"][s], float(r["comm_s"]), what + " Dist/SyncTime")
        same(v["Dist/ExposedComm"][s], float(r["exposed_comm_s"]), what + " Dist/ExposedComm")
        same(v["Train/LR"][s], lr, what + " Train/LR")
        same(v["Train/Attempt"][s], int(r["attempt"]), what + " Train/Attempt")
        step_s, comm_s = float(r["step_s"]), float(r["comm_s"])
        assert abs(v["Dist/CommRatio"][s] - comm_s / step_s) <= 1e-5 * max(1.0, comm_s / step_s) + 1e-8, what
        assert abs(v["Train/SamplesPerSec"][s] - batch * world / step_s) <= 1e-5 * batch * world / step_s, what
        bsum = sum(v[t][s] for t in buckets)
        assert abs(bsum - comm_s) <= 1e-5 * comm_s + 1e-8, "%s: buckets sum %g, comm_s %g" % (what, bsum, comm_s)
        assert v["Logger/Dropped"][s] == 0, what + ": dropped"

def train(run, tb, world, steps, batch, lr):
    for rank in range(world):
        d = os.path.join(tb, "rank_%d" % rank)
        raw_events(d)
        sc = scalars(d)
        missing = [t for t in TRAIN_TAGS + SYSTEM_TAGS if t not in sc]
        assert not missing, "rank %d: tags missing: %s (have %s)" % (rank, missing, sorted(sc))
        check_steps(sc, csv_rows(os.path.join(run, "steps.csv"), rank), list(range(steps)), world, batch, lr, rank)
        cpu = [x for _, x in sc["System/CPUUtil"]]
        rss = [x for _, x in sc["System/MemoryRSS"]]
        net = [x for _, x in sc["System/NetRxGbps"] + sc["System/NetTxGbps"]]
        assert all(0 <= x < 100 * os.cpu_count() + 50 for x in cpu), "CPUUtil %s" % cpu
        assert all(x > 1 for x in rss), "MemoryRSS %s" % rss
        assert all(x >= 0 for x in net) and max(net) > 0, "no traffic in NetRx/TxGbps: %s" % net
        print("rank %d: %d tags, %d steps equal to steps.csv" % (rank, len(sc), steps))

def restart(run, tb, world, steps, batch, lr, resume):
    for rank in range(world):
        d = os.path.join(tb, "rank_%d" % rank)
        ev = raw_events(d)
        starts = [e.step for e in ev if e.HasField("session_log") and e.session_log.status == 1]
        assert starts == [resume], "rank %d: SessionLog START at %s, expected [%d]" % (rank, starts, resume)
        sc = scalars(d)
        # The failed attempt's ranks were killed: the steps still in their
        # loggers' queues are lost, so before the resume step TensorBoard
        # holds a prefix of the steps; from it on, every step of the restart.
        have = [s for s, _ in sc["Train/Loss"]]
        before = [s for s in have if s < resume]
        assert before == list(range(len(before))), "rank %d: steps before %d: %s" % (rank, resume, before)
        want = before + list(range(resume, steps))
        check_steps(sc, csv_rows(os.path.join(run, "steps.csv"), rank), want, world, batch, lr, rank)
        att = dict(sc["Train/Attempt"])
        assert all(att[s] == (0 if s < resume else 1) for s in want), "Train/Attempt %s" % att
        print("rank %d: restart at %d marked; steps %s once each (of 0..%d)" % (rank, resume,
              "0..%d, %d..%d" % (len(before) - 1, resume, steps - 1), steps - 1))

def killed(run, tb, rank, lr):
    d = os.path.join(tb, "rank_%d" % rank)
    ev = raw_events(d)  # reads to the end without an error
    steps = [e.step for e in ev if e.HasField("summary")]
    assert steps and steps == list(range(len(steps))), "rank %d: steps %s" % (rank, steps)
    rows = csv_rows(os.path.join(run, "rank-%d.attempt-0.csv" % rank), rank)
    assert max(steps) <= max(rows), "rank %d: TensorBoard has steps the CSV lacks" % rank
    check_steps(scalars(d), rows, steps, 2, 8, lr, rank)
    print("rank %d: readable to its last record, steps 0..%d of the CSV's 0..%d" % (rank, max(steps), max(rows)))

def matches(cell, name):
    # A run's directory names the value as the CSV prints it, or as a number.
    if cell.replace(":", "_") == name:
        return True
    try:
        return float(cell) == float(name)
    except ValueError:
        return False

def simulate(csv_path, tb, xcol, runs, job):
    rows = list(csv.DictReader(open(csv_path)))
    run_dirs = sorted(p for p in glob.glob(os.path.join(tb, "*", "*")) if os.path.isdir(p)) or \
        sorted(glob.glob(os.path.join(tb, "*")))
    assert len(run_dirs) == runs, "%d runs, expected %d: %s" % (len(run_dirs), runs, run_dirs)
    seen = 0
    for d in run_dirs:
        raw_events(d)
        sc = scalars(d)
        keys = dict(kv.split("=", 1) for kv in os.path.basename(d).split(",")) if "=" in d else {}
        mine = [r for r in rows if all(matches(r[k], v) for k, v in keys.items())]
        mine.sort(key=lambda r: float(r[xcol]))
        xs = [int(float(r[xcol])) for r in mine]
        tags = {"Predicted/StepTime": "step_s", "Predicted/ExposedComm": "exposed_comm_s",
                "Predicted/SamplesPerSec": "samples_per_s", "Predicted/ScalingEff": "scaling_eff",
                "Predicted/SyncTime": "comm_s", "Predicted/ComputeTime": "compute_s"}
        if job:
            tags.update({"Predicted/Goodput": "goodput", "Predicted/TimeToTrainH": "time_to_train_h"})
        for tag, col in tags.items():
            assert [s for s, _ in sc[tag]] == xs, "%s %s: steps %s, expected %s" % (d, tag, [s for s, _ in sc[tag]], xs)
            for (s, val), r in zip(sc[tag], mine):
                same(val, float(r[col]), "%s %s at %d" % (d, tag, s))
        sweep = [t for t in sc if t.startswith("Sweep/")]
        assert sweep == ["Sweep/" + xcol], "%s: %s" % (d, sweep)
        assert [v for _, v in sc[sweep[0]]] == [f32(float(r[xcol])) for r in mine], d
        seen += len(mine)
    assert seen == len(rows), "%d of %d points in TensorBoard" % (seen, len(rows))
    print("%s: %d runs, %d points equal to the CSV" % (tb, runs, seen))

globals()[sys.argv[1]](*[int(a) if a.lstrip("-").isdigit() else (float(a) if a.replace(".", "", 1).isdigit() else a)
                         for a in sys.argv[2:]])
EOF
tbcheck() { "$py" "$work/tbcheck.py" "$@"; }

common=(--model "$model" --batch 8 --timeout 20 --bucket-cap-mb 0.03 --first-bucket-mb 0.01 --lr 0.05)

# ---- 1. two ranks, values against steps.csv ----------------------------------
N=30
run launch2 launch --nproc 2 -- ddpsim train "${common[@]}" --steps $N -o "$work/run1" --tensorboard "$work/tb1"
check "launch 2 ranks with --tensorboard: exit $status" [ "$status" -eq 0 ]
check "TensorBoard of the 2-rank run equals steps.csv" tbcheck train "$work/run1" "$work/tb1" 2 $N 8 0.05

# ---- 2. a restart continues each rank's file -----------------------------------
N=15
run restart launch --nproc 2 --max-restarts 1 -- ddpsim train "${common[@]}" --steps $N -o "$work/run2" \
  --ckpt-dir "$work/ck2" --ckpt-every 5 --fail-at-step 7 --fail-rank 1 --tensorboard "$work/tb2"
check "restarted run: exit $status" [ "$status" -eq 0 ]
check "restart: one file per rank, START at 5, every step once, last attempt's values" \
  tbcheck restart "$work/run2" "$work/tb2" 2 $N 8 0.05 5

# ---- 3. a killed rank's file reads up to its last record ------------------------
it_quiet=" 0 1 "
run killed launch --nproc 2 -- ddpsim train "${common[@]}" --steps 40 -o "$work/run3" \
  --fail-at-step 30 --fail-rank 1 --tensorboard "$work/tb3"
it_quiet=" 0 "
check "killed rank: the launch fails (exit $status)" [ "$status" -ne 0 ]
check "killed rank 1: event file readable to its last record, values equal its CSV" \
  tbcheck killed "$work/run3" "$work/tb3" 1 0.05
check "rank 0 (stopped): event file readable" tbcheck killed "$work/run3" "$work/tb3" 0 0.05

# ---- 4. bad input -------------------------------------------------------------------
it_quiet=" 0 2 "
: >"$work/plain-file"
run unwritable train "${common[@]}" --steps 3 -o "$work/run4" --tensorboard "$work/plain-file/tb"
check "unwritable --tensorboard: exit 2 (got $status)" [ "$status" -eq 2 ]
check "unwritable --tensorboard: the message names the option and the path" \
  grep -q -- "--tensorboard $work/plain-file/tb" "$work/unwritable.err"
check "unwritable --tensorboard: refused before training (no metrics)" [ ! -e "$work/run4" ]
run reused launch --nproc 2 -- ddpsim train "${common[@]}" --steps 3 -o "$work/run5" --tensorboard "$work/tb1"
check "a directory of an earlier run: exit 2 (got $status)" [ "$status" -eq 2 ]
check "a directory of an earlier run: said so" grep -q "already holds an event file" "$work/reused.err"
run empty train "${common[@]}" --steps 3 -o "$work/run6" --tensorboard ""
check "empty --tensorboard: exit 2 (got $status)" [ "$status" -eq 2 ]

# ---- 5. predictions ------------------------------------------------------------------
scen="$src/tests/data/mlp-test.cfg"
run sim1 simulate "$scen" -o "$work/sim1" -q --tensorboard "$work/stb1"
check "simulate --tensorboard: exit $status" [ "$status" -eq 0 ]
csv1=$(ls "$work"/sim1/*.csv)
# model x network x bucket_cap_mb x overlap x gpus_per_node runs, nodes on the step axis
check "simulate: 32 runs against nodes, values equal the CSV" tbcheck simulate "$csv1" "$work/stb1/mlp-test" nodes 32 0
run sim2 simulate "$scen" -o "$work/sim2" -q --tensorboard "$work/stb2"
check "simulate: the same bytes on a second run" diff -r "$work/stb1" "$work/stb2"
run nf simulate "$src/scenarios/node-failure.cfg" -o "$work/nf" -q --tensorboard "$work/nftb"
check "simulate the failure study: exit $status" [ "$status" -eq 0 ]
check "failure study: 4 runs against the checkpoint interval, goodput equals the CSV" \
  tbcheck simulate "$work/nf/node-failure.csv" "$work/nftb/node-failure" ckpt_every_s 4 1
run shard simulate "$scen" -o "$work/sim3" -q --shard 0/2 --tensorboard "$work/stb3"
check "simulate --shard with --tensorboard: exit 2 (got $status)" [ "$status" -eq 2 ]
run simbad simulate "$scen" -o "$work/sim4" -q --tensorboard "$work/plain-file/x"
check "simulate, unwritable --tensorboard: exit 2 (got $status)" [ "$status" -eq 2 ]
check "simulate, unwritable --tensorboard: no CSV written" [ -z "$(ls "$work/sim4" 2>/dev/null)" ]
it_quiet=" 0 "

it_end

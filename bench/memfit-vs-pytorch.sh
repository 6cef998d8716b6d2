#!/usr/bin/env bash
# ddpsim's memory estimate per GPU (`ddpsim simulate`'s mem_GB, sim/memfit)
# against PyTorch's peak of allocated tensor bytes in a steady-state DDP
# training step (bench/pytorch/memfit_steps.py: torch.profiler's allocation
# and free events of the CPU allocator, summed; CPU, Gloo, world size 1,
# fp32, foreach optimizers). Models: torchvision's ResNet-50 and VGG-16 at
# 224x224 and HuggingFace's BERT-large (BertForPreTraining) at 512 tokens,
# with SGD with momentum and with Adam, at two or three small batches.
# ddpsim's side is a generated scenario of the same points on a CPU profile
# (the estimate does not depend on the device; the profile gives no
# capacity, so no point is marked oom). Prints per point PyTorch's bytes at
# the step's start (after zero_grad), its peaks in backward and in
# optimizer.step(), the step's peak, ddpsim's mem_GB and its error, then
# the mean absolute and the lowest and highest error. BERT's attention
# dropout is 0 unless ATTN_DROPOUT sets it: on the CPU, PyTorch's
# scaled_dot_product_attention runs its fused kernel only without dropout
# (a GPU's kernels fuse it with dropout too), else its math kernel, which
# keeps each head's 512x512 scores. ddpsim's scenario says which:
# training.attention = "fused" without dropout (the shipped model gives
# BERT's attention dropout, 0.1, which "auto" on a CPU profile counts as
# unfused) and "auto" with it (scenarios/profiles/README.md,
# device.memory_GB). Installs torch,
# torchvision and transformers into bench/.venv on first use
# (bench/pytorch/setup-models.sh).
#
#   bash bench/memfit-vs-pytorch.sh [BUILD_DIR]
#
# POINTS picks the points: "MODEL:BATCH,BATCH[:OPTIMIZER,OPTIMIZER] ..."
# (optimizers sgd_momentum and adam; both when left out; the default,
# "resnet50:2,4,8 vgg16:1,2,4 bert-large:1,2:sgd_momentum bert-large:1:adam",
# takes about 10 minutes on 2 cores, most of them BERT-large). TORCH_CSV=F
# keeps PyTorch's figures in F, and where F exists reads them from it
# instead of measuring (another build's estimate against the same steps).
# BUCKET_VIEW=1 runs every point with DDP's gradient_as_bucket_view, on
# both sides. ZERO=1 runs every point on two ranks (two processes on
# 127.0.0.1) with torch.distributed.optim.ZeroRedundancyOptimizer, measuring
# rank 0, against ddpsim's 2-rank point with ddp.zero_optimizer = true
# (POINTS="resnet50:2:adam vgg16:1:adam" takes about two minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${1:-build}
DD=$BUILD/ddpsim
[ -x "$DD" ] || { echo "memfit-vs-pytorch: no ddpsim in $BUILD (build it first: see README)" >&2; exit 2; }
POINTS=${POINTS:-resnet50:2,4,8 vgg16:1,2,4 bert-large:1,2:sgd_momentum bert-large:1:adam}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
BV_FLAG="" BV_CFG=false
if [ "${BUCKET_VIEW:-0}" = 1 ]; then BV_FLAG=--bucket-view BV_CFG=true; fi
ZERO_FLAG="" ZERO_CFG=false RANKS=1
if [ "${ZERO:-0}" = 1 ]; then ZERO_FLAG=--zero ZERO_CFG=true RANKS=2; fi
ATTN=auto
if awk -v p="${ATTN_DROPOUT:-0}" 'BEGIN { exit !(p + 0 == 0) }'; then ATTN=fused; fi
MEASURE=1
if [ -n "${TORCH_CSV:-}" ] && [ -s "$TORCH_CSV" ]; then
  MEASURE=0
  cp "$TORCH_CSV" "$OUT/torch.csv"
  echo "== PyTorch's figures from $TORCH_CSV" >&2
else
  PY=$(bash bench/pytorch/setup-models.sh)
  echo "model,batch,optimizer,peak_bytes,state_bytes,backward_peak_bytes,step_peak_bytes" >"$OUT/torch.csv"
fi
for spec in $POINTS; do
  IFS=: read -r m batches opts <<<"$spec"
  opts=${opts:-sgd_momentum,adam}
  for opt in ${opts//,/ }; do
    if [ "$MEASURE" = 1 ]; then
      for b in ${batches//,/ }; do
        echo "== PyTorch: $m, batch $b, $opt" >&2
        "$PY" bench/pytorch/memfit_steps.py --model "$m" --batch "$b" --optimizer "$opt" \
          --attn-dropout "${ATTN_DROPOUT:-0}" $BV_FLAG $ZERO_FLAG >>"$OUT/torch.csv"
      done
    fi
    cat >"$OUT/$m-$opt.cfg" <<EOF
name = "$m-$opt";
profile = "$ROOT/scenarios/profiles/example-2core.cfg";
model = "$ROOT/scenarios/models/$m.cfg";
training = { batch = [$batches]; precision = "fp32"; optimizer = "$opt"; attention = "$ATTN"; };
cluster = { nodes = 1; devices_per_node = $RANKS; };
networks = ( { name = "none"; gbps = 100.0; latency_us = 14.0; } );
ddp = { backend = "gloo"; gradient_as_bucket_view = $BV_CFG; zero_optimizer = $ZERO_CFG; };
simulation = { steps = 1; seed = 1; };
EOF
    "$DD" simulate "$OUT/$m-$opt.cfg" -o "$OUT/sim" -q
  done
done
if [ "$MEASURE" = 1 ] && [ -n "${TORCH_CSV:-}" ]; then
  cp "$OUT/torch.csv" "$TORCH_CSV"
fi
python3 - "$OUT" <<'EOF'
import csv, glob, os, statistics, sys
out = sys.argv[1]
torch = {(r["model"], int(r["batch"]), r["optimizer"]): r for r in csv.DictReader(open(out + "/torch.csv"))}
sim = {}
for path in glob.glob(out + "/sim/*.csv"):
    opt = os.path.basename(path)[:-4].rsplit("-", 1)[1]
    for r in csv.DictReader(open(path)):
        sim[(r["model"], int(r["batch"]), opt)] = float(r["mem_GB"])
missing = sorted(set(sim) - set(torch))
if missing:
    sys.exit("memfit-vs-pytorch: no PyTorch figures for %s (TORCH_CSV measured other points?)" % missing)
print("%-10s %5s %-12s %9s %9s %9s %9s %9s %7s" % ("model", "batch", "optimizer", "start_GB", "bwd_GB",
                                                   "step_GB", "peak_GB", "mem_GB", "error"))
errs = []
for key, r in torch.items():
    if key not in sim:
        continue
    peak = int(r["peak_bytes"]) / 1e9
    est = sim[key]
    err = (est - peak) / peak
    errs.append(err)
    print("%-10s %5d %-12s %9.3f %9.3f %9.3f %9.3f %9.3f %+6.1f%%" % (key[0], key[1], key[2],
          int(r["state_bytes"]) / 1e9, int(r["backward_peak_bytes"]) / 1e9,
          int(r["step_peak_bytes"]) / 1e9, peak, est, 100 * err))
print("%d points: mean absolute error %.1f%%, error from %+.1f%% to %+.1f%%" % (
    len(errs), 100 * statistics.mean(abs(e) for e in errs), 100 * min(errs), 100 * max(errs)))
EOF

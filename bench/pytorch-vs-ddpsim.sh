#!/usr/bin/env bash
# ddpsim's runtime vs PyTorch DDP (Gloo backend, CPU), the same MLP, batch,
# bucket cap and optimizer, on 2 testbed hosts at 1gbit, one rank each, one
# BLAS thread each. Prints both per-step breakdowns and the ratio of mean step
# times (goal: ddpsim / PyTorch <= 1.0). PyTorch runs twice: as users
# run it (its built-in allreduce, which cannot be timed per bucket), and with
# a Python hook that times each bucket's allreduce (pytorch-ddp-timed; the
# hook slows the step). Needs root; installs PyTorch into bench/.venv on
# first use (bench/pytorch/setup.sh).
#
#   bash bench/pytorch-vs-ddpsim.sh [BUILD_DIR] [STEPS] [MODEL]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
STEPS=${2:-25}
MODEL=${3:-scenarios/models/mlp.cfg}
PY=$(bash bench/pytorch/setup.sh)
NAME=benchpt
OUT=$(mktemp -d)
trap 'bash scripts/testbed.sh down --name $NAME >/dev/null 2>&1 || true; rm -rf "$OUT"' EXIT
bash scripts/testbed.sh up 2 --rate 1gbit --name $NAME >/dev/null
HOSTS=$NAME-h1,$NAME-h2
# --first-bucket-mb 25: PyTorch gives the first bucket the cap when
# bucket_cap_mb is passed, as ddp_mlp.py does (its 1 MiB first bucket is only
# for the default; torch 2.15, torch/nn/parallel/distributed.py), so both
# runtimes launch the same buckets.
"$BUILD/ddpsim" launch -q --nproc 2 --hosts $HOSTS -- \
  "$BUILD/ddpsim" train --model "$MODEL" --steps "$STEPS" --batch 32 --bucket-cap-mb 25 --first-bucket-mb 25 \
  --lr 0.01 --momentum 0.9 --threads 1 -o "$OUT/ddpsim" >/dev/null
torch_run() { # DIR [ddp_mlp.py options]
  local dir=$1; shift
  mkdir -p "$dir"
  "$BUILD/ddpsim" launch -q --nproc 2 --hosts $HOSTS -- \
    sh -c "exec '$PY' bench/pytorch/ddp_mlp.py --model '$MODEL' --steps $STEPS --batch 32 --bucket-cap-mb 25 \
           --lr 0.01 --momentum 0.9 $* --out \"$dir/rank-\$RANK.csv\""
  { head -1 "$dir/rank-0.csv"; tail -q -n +2 "$dir"/rank-*.csv; } > "$dir/steps.csv"
}
torch_run "$OUT/torch"
torch_run "$OUT/torch-timed" --time-comm
python3 bench/steps_summary.py --skip 3 "pytorch-ddp=$OUT/torch/steps.csv" "ddpsim-runtime=$OUT/ddpsim/steps.csv" \
  "pytorch-ddp-timed=$OUT/torch-timed/steps.csv"

#!/usr/bin/env bash
# The which-gpu study (scenarios/which-gpu.cfg) on every shipped GPU profile:
# one `ddpsim simulate --profile` per GPU, at fp32, tf32 and bf16 autocast
# (the V100, without TF32 or bf16: fp32 and fp16 autocast), ResNet-50 at 128
# images a GPU and BERT-large at 16 sequences kept, joined into
# OUT/which-gpu.csv with the network column naming the GPU, plotted with
# `ddpsim plot scaling` (OUT/which-gpu-MODEL-scaling.png: a curve per GPU and precision),
# and summarized: each GPU's throughput per GPU on one node and on sixteen,
# and the scaling efficiency there.
#
#   bash scripts/which-gpu.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-results}
DD=$BUILD/ddpsim
[ -x "$DD" ] || { echo "which-gpu: no $DD (build first: bash scripts/setup.sh $BUILD)" >&2; exit 2; }
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
gpus="V100:dgx1-v100 A100-40GB:dgx-a100-40gb A100-80GB:dgx-a100 H100:dgx-h100 H200:hgx-h200 B200:dgx-b200 L40S:l40s-8gpu"
for g in $gpus; do
  gpu=${g%%:*} prof=${g##*:}
  precs='["fp32", "tf32", "amp_bf16"]'
  [ "$gpu" = V100 ] && precs='["fp32", "amp_fp16"]'
  # the study with this GPU's precisions, its paths made absolute
  sed "s|^\(training = .*precision = \)\[[^]]*\]|\1$precs|; s|^name = .*|name = \"which-gpu-$gpu\";|;
       s|\"models/|\"$PWD/scenarios/models/|g; s|\"profiles/|\"$PWD/scenarios/profiles/|" \
    scenarios/which-gpu.cfg >"$W/which-gpu-$gpu.cfg"
  "$DD" simulate "$W/which-gpu-$gpu.cfg" --profile "scenarios/profiles/$prof.cfg" -o "$W" -q >/dev/null
done
python3 - "$W" "$OUT/which-gpu.csv" $gpus <<'PY'
import csv, os, sys
src, out, gpus = sys.argv[1], sys.argv[2], [g.split(":")[0] for g in sys.argv[3:]]
rows, fields = [], None
for gpu in gpus:
    with open(os.path.join(src, "which-gpu-%s.csv" % gpu)) as f:
        r = csv.DictReader(f)
        fields = r.fieldnames
        for row in r:
            if (row["model"], row["batch"]) not in (("resnet50", "128"), ("bert-large", "16")):
                continue
            row["network"] = gpu
            rows.append(row)
tmp = out + ".tmp"
with open(tmp, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    w.writerows(rows)
os.replace(tmp, out)
print("%-10s %-18s %12s %12s %10s" % ("model", "GPU/precision", "8 GPUs /GPU", "128 /GPU", "eff at 128"))
for model in dict.fromkeys(r["model"] for r in rows):
    for net, prec in dict.fromkeys((r["network"], r["precision"]) for r in rows):
        pts = {int(r["gpus"]): r for r in rows
               if r["model"] == model and r["network"] == net and r["precision"] == prec}
        a, b = pts[min(pts)], pts[max(pts)]
        print("%-10s %-18s %12.1f %12.1f %9.1f%%" % (model, net + "/" + prec, float(a["samples_per_s"]) / int(a["gpus"]),
              float(b["samples_per_s"]) / int(b["gpus"]), 100 * float(b["scaling_eff"])))
PY
"$DD" plot scaling "$OUT/which-gpu.csv" -o "$OUT" >/dev/null
echo "wrote $OUT/which-gpu.csv and $OUT/which-gpu-MODEL-scaling.png/.svg"

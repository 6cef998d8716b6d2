#!/usr/bin/env bash
# PyTorch DDP's real gradient buckets vs `ddpsim model`, for torchvision's
# ResNet-50 and VGG-16 and HuggingFace's BERT-large (BertForPreTraining):
# bench/pytorch/buckets.py records PyTorch's (CPU, Gloo, world size 1; a
# few minutes of CPU training steps) for bucket_cap_mb left unset (25 MiB
# after a 1 MiB first bucket), 25 and 1, in the first iteration, once the
# buckets are rebuilt, and with find_unused_parameters=True; each is
# compared with ddpsim's CSV for the same setting (members in order and
# bytes). Prints one line per case and exits 1 on any difference. Installs
# torch, torchvision and transformers into bench/.venv on first use
# (bench/pytorch/setup-models.sh).
#
#   bash bench/pytorch-buckets.sh [BUILD_DIR] [--save]
#
# --save copies PyTorch's lists to tests/data/buckets/, the expected lists of
# tests/unit/test_model_buckets.c.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
SAVE=0
for a in "$@"; do
  case $a in
  --save) SAVE=1 ;;
  *) BUILD=$a ;;
  esac
done
MODELS=${MODELS:-resnet50,vgg16,bert-large}
PY=$(bash bench/pytorch/setup-models.sh)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$PY" bench/pytorch/buckets.py --out "$OUT/torch" --models "$MODELS"
mkdir -p "$OUT/ddpsim"
bad=0
printf '%-11s %-8s %-8s %7s %7s  %s\n' model cap iteration torch ddpsim buckets
for m in ${MODELS//,/ }; do
  for cap in default 25 1; do
    for it in first rebuilt unused; do
      args=()
      [ "$cap" = default ] || args+=(--bucket-cap-mb "$cap")
      case $it in
      first) args+=(--iteration first) ;;
      unused) args+=(--find-unused-parameters) ;;
      esac
      t="$OUT/torch/$m-$cap-$it.csv"
      d="$OUT/ddpsim/$m-$cap-$it.csv"
      "$BUILD/ddpsim" model "scenarios/models/$m.cfg" "${args[@]}" -o "$d"
      if cmp -s "$t" "$d"; then r=equal; else r=DIFFERENT; bad=1; fi
      printf '%-11s %-8s %-8s %7d %7d  %s\n' "$m" "$cap" "$it" $(($(wc -l <"$t") - 1)) \
        $(($(wc -l <"$d") - 1)) "$r"
    done
  done
done
if [ "$SAVE" = 1 ]; then
  mkdir -p tests/data/buckets
  cp "$OUT"/torch/*.csv tests/data/buckets/
  echo "saved PyTorch's lists to tests/data/buckets/"
fi
exit $bad

#!/usr/bin/env bash
# Do two ddpsim binaries give the same bytes? Runs `ddpsim simulate` with each
# on every shipped scenario (scenarios/*.cfg) as it is, and again on a profile
# with interference (the DGX H100 profile at 1.05 both ways, or for a CPU
# study scenarios/profiles/example-2core.cfg), so that every study's steps
# run event by event too; and the Chrome trace of each study's point 0 (with
# one worker: with several, the points that share the traced point's step
# level may or may not reuse its traced result). Then `cmp`s every file the
# two wrote (CSVs, traces, stdout, stderr). Exit status 0 when all match.
# Usage: bash bench/same-bytes.sh BASE_DDPSIM NEW_DDPSIM [OUT_DIR]
#   e.g. keep a copy of the base commit's build/ddpsim, rebuild, and run
#   bash bench/same-bytes.sh /tmp/ddpsim-base build/ddpsim
set -uo pipefail
[ $# -ge 2 ] || {
  echo "usage: $0 BASE_DDPSIM NEW_DDPSIM [OUT_DIR]" >&2
  exit 2
}
base=$(realpath "$1")
new=$(realpath "$2")
src=$(cd "$(dirname "$0")/.." && pwd)
out=${3:-$(mktemp -d)}
mkdir -p "$out"
h100="$out/dgx-h100-coupled.cfg"
sed 's/interference = { compute_slowdown = 1.0; };/interference = { compute_slowdown = 1.05; comm_slowdown = 1.05; };/' \
  "$src/scenarios/profiles/dgx-h100.cfg" >"$h100"
grep -q 'comm_slowdown = 1.05' "$h100" || {
  echo "$0: cannot give dgx-h100.cfg interference" >&2
  exit 1
}

# SIDE VARIANT SCENARIO [ARGS...]: one run into $out/SIDE/VARIANT; the
# output directory is written as OUT in what it prints.
run() {
  local side=$1 variant=$2 scen=$3 bin=$base dir="$out/$1/$2" name
  shift 3
  [ "$side" = new ] && bin=$new
  name=$(basename "$scen" .cfg)
  mkdir -p "$dir"
  "$bin" simulate "$scen" -o "$dir" --progress off "$@" >"$dir/$name.stdout" 2>"$dir/$name.stderr"
  local rc=$?
  sed -i "s|$dir|OUT|g" "$dir/$name.stdout" "$dir/$name.stderr"
  echo "exit $rc" >>"$dir/$name.stdout"
  return $rc
}

for scen in "$src"/scenarios/*.cfg; do
  name=$(basename "$scen" .cfg)
  for side in base new; do
    run $side as-shipped "$scen"
    run $side trace "$scen" --jobs 1 --trace "$out/$side/trace/$name.json"
    run $side coupled "$scen" --profile "$h100" || run $side coupled "$scen" --profile "$src/scenarios/profiles/example-2core.cfg"
  done
done
status=0
for variant in as-shipped trace coupled; do
  n=0
  for f in "$out/base/$variant"/*; do
    g="$out/new/$variant/$(basename "$f")"
    n=$((n + 1))
    if ! cmp -s "$f" "$g"; then
      echo "differs: $variant/$(basename "$f")"
      status=1
    fi
  done
  [ "$(ls "$out/base/$variant" | wc -l)" = "$(ls "$out/new/$variant" | wc -l)" ] || {
    echo "$variant: the two wrote different files"
    status=1
  }
  echo "$variant: $n files compared ($(grep -l '^exit 0' "$out/base/$variant"/*.stdout | wc -l) runs succeeded)"
done
[ $status = 0 ] && echo "same bytes"
exit $status

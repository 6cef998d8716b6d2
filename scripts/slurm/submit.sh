#!/usr/bin/env bash
# Submit a ddpsim study to Slurm as N shards and a merge that waits for them:
#
#   bash scripts/slurm/submit.sh SCENARIO OUT_DIR N [SIMULATE OPTIONS...]
#
# queues `sbatch --array=0-(N-1) simulate-array.sbatch` and then
# `sbatch --dependency=afterok:ARRAY merge.sbatch`, and prints both
# job ids. The merge also draws the plots (MERGE_ARGS, default --plot; set it
# empty where the nodes lack gnuplot). Extra sbatch options (partition,
# account) go in SBATCH_ARGS, e.g. SBATCH_ARGS="--partition=cpu --account=me".
# OUT_DIR must be on a file system every node sees.
set -euo pipefail

if [ $# -lt 3 ]; then
  echo "usage: $0 SCENARIO OUT_DIR N [SIMULATE OPTIONS...]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
scenario=$1
out=$2
n=$3
shift 3
case $n in
  '' | *[!0-9]* | 0) echo "submit: N must be a positive integer, got '$n'" >&2; exit 2 ;;
esac
mkdir -p "$out"
# shellcheck disable=SC2086  # SBATCH_ARGS is a list of options
array=$(sbatch --parsable ${SBATCH_ARGS:-} --array="0-$((n - 1))" "$here/simulate-array.sbatch" "$scenario" "$out" "$@")
array=${array%%;*}
# The merge loads the profile the shards ran on (it checks their stamps against it).
profile=()
while [ $# -gt 0 ]; do
  case $1 in
    --profile) [ $# -ge 2 ] && profile=(--profile "$2") && shift ;;
    --profile=*) profile=("$1") ;;
  esac
  shift
done
# shellcheck disable=SC2086  # MERGE_ARGS too
merge=$(sbatch --parsable ${SBATCH_ARGS:-} --dependency="afterok:$array" "$here/merge.sbatch" "$scenario" "$out" "$n" \
  "${profile[@]}" ${MERGE_ARGS---plot})
merge=${merge%%;*}
echo "submitted shards as job array $array and the merge as job $merge; the study lands in $out"

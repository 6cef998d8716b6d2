#!/usr/bin/env bash
# Peak memory and wall time of reading PyTorch profiler traces of about 100 MB
# and 1 GB: the streaming reader alone (bench_kineto: the events it keeps) and
# the whole `ddpsim import torch-trace`, under GNU time (%M, %e).
#
#   bash bench/trace_memory.sh [BUILD_DIR] [--before REV] [--sizes "100 1000"]
#
# BUILD_DIR (default build) should be a Release build without sanitizers; the
# targets are built when missing. The traces are synthetic (bench/synth_trace.py:
# copies of a real training step with kernels, launches and flows) and written
# to a temporary directory that is removed at the end. With --before REV, REV's
# own ddpsim is built there (git archive REV, Release) and run on the same
# traces, except where its JSON DOM (about 11.5 times the file) would need more
# than 12 GB or half the memory available now. The real traces of
# ../shared/traces, where present, are read too.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=build
BEFORE=""
SIZES="100 1000"
while [ $# -gt 0 ]; do
  case "$1" in
    --before) BEFORE=$2; shift 2 ;;
    --sizes) SIZES=$2; shift 2 ;;
    -h|--help) sed -n 2,14p "$0"; exit 0 ;;
    *) BUILD=$1; shift ;;
  esac
done
[ -x /usr/bin/time ] || { echo "trace_memory: GNU time is missing (scripts/setup.sh installs the 'time' package)" >&2; exit 2; }
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
grep -q "DDPSIM_SANITIZE:BOOL=ON" "$BUILD/CMakeCache.txt" &&
  echo "trace_memory: warning: $BUILD is a sanitizer build; its memory figures are not the program's" >&2
cmake --build "$BUILD" -j2 --target ddpsim bench_kineto >/dev/null

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ddpsim-trace-memory.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

OLD=""
if [ -n "$BEFORE" ]; then
  echo "building $BEFORE's ddpsim in $TMP/before ..." >&2
  mkdir "$TMP/before"
  git archive "$BEFORE" | tar -x -C "$TMP/before"
  cmake -S "$TMP/before" -B "$TMP/before/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$TMP/before/build" -j2 --target ddpsim >/dev/null
  OLD="$TMP/before/build/ddpsim"
fi

# "peak_MiB wall_s" of a command (its output into $TMP/out.txt).
measure() {
  /usr/bin/time -f "%M %e" -o "$TMP/time.txt" "$@" >"$TMP/out.txt" 2>&1 || {
    echo "trace_memory: failed: $*" >&2; cat "$TMP/out.txt" >&2; return 1; }
  awk '{ printf "%.0f %.2f", $1 / 1024, $2 }' "$TMP/time.txt"
}

avail_mib=$(awk '/MemAvailable/ { print int($2 / 1024) }' /proc/meminfo)
printf "%-10s %9s %10s  %-34s %9s %8s\n" trace file_MB kept what peak_MiB wall_s
for mb in $SIZES; do
  trace="$TMP/synth-${mb}mb.json"
  python3 bench/synth_trace.py "$mb" "$trace" >&2
  file_mb=$(awk -v b="$(stat -c %s "$trace")" 'BEGIN { printf "%.0f", b / 1e6 }')
  read -r peak wall <<<"$(measure "$BUILD/bench/bench_kineto" "$trace")"
  kept=$(sed -n 's/.* bytes, \([0-9]*\) events kept.*/\1/p' "$TMP/out.txt")
  printf "%-10s %9s %10s  %-34s %9s %8s\n" "${mb}MB" "$file_mb" "$kept" "reader (bench_kineto)" "$peak" "$wall"
  read -r peak wall <<<"$(measure "$BUILD/ddpsim" import torch-trace --out "$TMP/m.cfg" "$trace")"
  printf "%-10s %9s %10s  %-34s %9s %8s\n" "" "" "" "ddpsim import torch-trace" "$peak" "$wall"
  if [ -n "$OLD" ]; then
    need=$((file_mb * 23 / 2))
    if [ "$need" -gt 12288 ] || [ "$need" -gt $((avail_mib / 2)) ]; then
      printf "%-10s %9s %10s  %-34s %9s %8s\n" "" "" "" "$BEFORE: skipped (needs ~${need} MiB)" - -
    else
      read -r peak wall <<<"$(measure "$OLD" import torch-trace --out "$TMP/old.cfg" "$trace")"
      printf "%-10s %9s %10s  %-34s %9s %8s\n" "" "" "" "ddpsim import torch-trace at $BEFORE" "$peak" "$wall"
      cmp -s <(tail -n +2 "$TMP/m.cfg" | sed 's/"old"/"m"/') <(tail -n +2 "$TMP/old.cfg" | sed 's/"old"/"m"/') ||
        echo "trace_memory: warning: the models imported before and after differ" >&2
    fi
  fi
  rm -f "$trace"
done
echo "baseline: '$BUILD/ddpsim --version' peaks at $(measure "$BUILD/ddpsim" --version | cut -d' ' -f1) MiB (the libraries it loads)"
# Real GPU traces, where the checkout sits beside them (development data).
for trace in ../shared/traces/*.json.gz; do
  [ -f "$trace" ] || continue
  read -r peak wall <<<"$(measure "$BUILD/bench/bench_kineto" "$trace")"
  echo "$(sed 's/ (.*//' "$TMP/out.txt"); reader peak $peak MiB, $wall s"
done

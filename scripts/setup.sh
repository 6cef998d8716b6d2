#!/usr/bin/env bash
# Install what ddpsim needs from Debian's packages, then configure and build.
#
#   bash scripts/setup.sh [BUILD_DIR] [extra cmake arguments...]
#
# Idempotent: packages already present are not reinstalled, and an existing
# build directory is reused. Needs root (or sudo) only when a package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Build: C toolchain, CMake, pkg-config. Libraries: GSL, libconfig, CUnit,
# Gloo, OpenBLAS, zlib (gzip'd traces), YAJL (PyTorch traces parsed as a stream, never held whole),
# libcsv (the CSVs ddpsim reads back: results to plot, measured runs to validate), jansson (the unit
# tests' edited traces). Run time: gnuplot (plots), iproute2 (network testbed),
# redis-server (RedisStore rendezvous tests), procps (pgrep/pkill in tests), python3 (the integration
# tests' and benchmarks' checks of CSVs, JSON and traces; the testbed test's TCP streams), time (GNU
# time: the trace benchmark's peak memory). TensorBoard event files: protobuf-c (libprotobuf-c-dev, and
# protobuf-c-compiler, which generates the Event/Summary code from core/tbevent.proto at build time),
# ISA-L (libisal-dev: its crc32_iscsi is the CRC-32C of the record format; Debian packages no libcrc32c);
# python3-venv (with pip: the tensorboard test installs the tensorboard package from PyPI into a
# venv in the build directory to read the files with TensorBoard's own reader). clang-format: the
# format test checks the sources against .clang-format.
PACKAGES=(build-essential cmake pkg-config libgsl-dev libconfig-dev libcunit1-dev libgloo-dev libhiredis-dev
          libopenblas-dev zlib1g-dev libyajl-dev libcsv-dev libjansson-dev gnuplot-nox iproute2 redis-server procps python3
          time libprotobuf-c-dev protobuf-c-compiler libisal-dev python3-venv clang-format)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

BUILD_DIR=${1:-build}
shift || true
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"

#!/usr/bin/env bash
# The GPU libraries load only for GPU work, OpenBLAS only for real steps
# and CPU sweeps: the binary names none of libcudart, libcublas, libnccl,
# libopenblas (no DT_NEEDED entry); `--version` and `simulate` load none of
# them (the dynamic loader's own log, LD_DEBUG=libs), while `calibrate
# --backend nccl` does load NCCL and `calibrate` OpenBLAS (so the check can
# see a load at all); and NCCL, the CUDA runtime or OpenBLAS missing is
# exit 5 at once, with a message naming the library and the variable that
# points at it, writing nothing. Gloo and the C++ runtime load only with the
# Gloo shim (runtime/gloo_api.c), ISA-L only for checksums (core/isal.c:
# TensorBoard records, shard stamps): no DT_NEEDED on them, and neither `--version` nor
# `simulate` loads them; ISA-L missing is exit 5 before any output.
#
#   test_gpu_libs.sh DDPSIM_BINARY SOURCE_DIR nccl|none|noruntime
#   (nccl: built with the NCCL backend; none: the runtime without it;
#   noruntime: no `calibrate` command at all)
set -u

bin=${1:?usage: test_gpu_libs.sh DDPSIM_BINARY SOURCE_DIR nccl|none|noruntime}
src=${2:?source dir}
mode=${3:?nccl, none or noruntime}
. "$src/tests/integration/lib.sh"
need_tools test_gpu_libs readelf grep
it_begin test_gpu_libs
it_watchdog=60
it_quiet=" 0 5 "

gpu_libs='lib(cudart|cublas|cublasLt|nccl|cuda|openblas)\.so'

needed=$(readelf -d "$bin" | grep NEEDED)
check "readelf lists the binary's libraries" [ -n "$needed" ]
check "no DT_NEEDED on CUDA, NCCL or OpenBLAS: $(echo "$needed" | grep -oE "$gpu_libs[^]]*" | paste -sd' ')" \
  bash -c "! grep -qE '$gpu_libs' <<< \"\$1\"" _ "$needed"

lazy_libs='lib(gloo|stdc\+\+|ddpsim-gloo|isal)\.so'
# A sanitizer's runtime (the checked build) brings the C++ runtime itself.
if grep -qE 'lib(ubsan|asan)\.so' <<< "$needed"; then
  lazy_libs='lib(gloo|ddpsim-gloo|isal)\.so'
fi
check "no DT_NEEDED on Gloo, the C++ runtime or ISA-L: $(echo "$needed" | grep -oE "$lazy_libs[^]]*" | paste -sd' ')" \
  bash -c "! grep -qE '$lazy_libs' <<< \"\$1\"" _ "$needed"

# NAME: the loader logged its work (it initializes every library it loads,
# dlopen'ed ones too), and no GPU library was among it.
loads_no_gpu_lib() {
  local err=$work/$1.err
  grep -q "calling init: " "$err" || return 1
  ! grep -E "calling init: .*$gpu_libs" "$err"
}
loads_no_lazy_lib() { ! grep -E "calling init: .*$lazy_libs" "$work/$1.err"; }

LD_DEBUG=libs run version --version
check "--version: exit 0" [ "$status" -eq 0 ]
check "--version loads no CUDA/NCCL/OpenBLAS library" loads_no_gpu_lib version
check "--version loads neither Gloo, the C++ runtime nor ISA-L" loads_no_lazy_lib version

LD_DEBUG=libs run simulate simulate "$src/scenarios/gigabit-vs-ib.cfg" -o "$work/sim" -q
check "simulate: exit 0" [ "$status" -eq 0 ]
check "simulate loads no CUDA/NCCL/OpenBLAS library" loads_no_gpu_lib simulate
check "simulate loads neither Gloo, the C++ runtime nor ISA-L" loads_no_lazy_lib simulate

empty() { [ -z "$(ls -A "$1")" ]; }

mkdir -p "$work/no_isal-out" "$work/no_isal-tb"
DDPSIM_ISAL=/nonexistent/libisal.so.2 run no_isal simulate "$src/scenarios/gigabit-vs-ib.cfg" -o "$work/no_isal-out" \
  -q --tensorboard "$work/no_isal-tb"
check "simulate --tensorboard without ISA-L: exit 5" [ "$status" -eq 5 ]
check "... the message names ISA-L and DDPSIM_ISAL" grep -q \
  "ISA-L not found: cannot load /nonexistent/libisal.so.2 (.*); install libisal2.* or set DDPSIM_ISAL=/path/libisal\.so\.2" \
  "$work/no_isal.err"
check "... nothing written" empty "$work/no_isal-out"
check "... no TensorBoard folder made" empty "$work/no_isal-tb"
mkdir -p "$work/no_isal-shard"
DDPSIM_ISAL=/nonexistent/libisal.so.2 run no_isal_shard simulate "$src/scenarios/gigabit-vs-ib.cfg" \
  -o "$work/no_isal-shard" -q --shard 0/2
check "simulate --shard without ISA-L: exit 5" [ "$status" -eq 5 ]
check "... the message names ISA-L" grep -q "ISA-L not found" "$work/no_isal_shard.err"
check "... nothing written" empty "$work/no_isal-shard"

if [ "$mode" != noruntime ]; then
  mkdir -p "$work/no_blas-out"
  DDPSIM_OPENBLAS=/nonexistent/libopenblas.so.0 run no_blas calibrate --quick --out "$work/no_blas-out/cpu.cfg"
  check "no OpenBLAS: exit 5" [ "$status" -eq 5 ]
  check "... the message names OpenBLAS and DDPSIM_OPENBLAS" grep -q \
    "OpenBLAS not found: cannot load /nonexistent/libopenblas.so.0 (.*); install libopenblas0.* or set DDPSIM_OPENBLAS=/path/libopenblas\.so\.0" \
    "$work/no_blas.err"
  check "... nothing written" empty "$work/no_blas-out"
fi

calibrate_nccl() { # NAME: calibrate --backend nccl into an empty folder
  mkdir -p "$work/$1-out"
  run "$1" calibrate --backend nccl --quick --out "$work/$1-out/gpu.cfg"
}

case $mode in
nccl)
  # NCCL loads (it is asked first), then the CUDA runtime cannot.
  DDPSIM_CUDART=/nonexistent/libcudart.so LD_DEBUG=libs calibrate_nccl no_cudart
  check "no CUDA runtime: exit 5" [ "$status" -eq 5 ]
  check "... NCCL was loaded on demand" grep -qE "calling init: .*libnccl\.so" "$work/no_cudart.err"
  check "... the message names the CUDA runtime and DDPSIM_CUDART" grep -q \
    "error: --backend nccl: CUDA runtime not found: cannot load /nonexistent/libcudart.so (.*DDPSIM_CUDART=/path/libcudart\.so" \
    "$work/no_cudart.err"
  check "... nothing written" empty "$work/no_cudart-out"

  DDPSIM_NCCL=/nonexistent/libnccl.so.2 LD_DEBUG=libs calibrate_nccl no_nccl
  check "no NCCL: exit 5" [ "$status" -eq 5 ]
  check "... the message names NCCL and DDPSIM_NCCL" grep -q \
    "error: --backend nccl: NCCL not found: cannot load /nonexistent/libnccl.so.2 (.*); install NCCL.* or set DDPSIM_NCCL=/path/libnccl\.so\.2" \
    "$work/no_nccl.err"
  check "... no GPU library loaded" loads_no_gpu_lib no_nccl
  check "... nothing written" empty "$work/no_nccl-out"
  ;;
none)
  DDPSIM_NCCL=/nonexistent/libnccl.so.2 calibrate_nccl no_nccl
  check "built without NCCL: exit 5" [ "$status" -eq 5 ]
  check "... saying so" grep -q "built without CUDA/NCCL" "$work/no_nccl.err"
  check "... nothing written" empty "$work/no_nccl-out"
  ;;
esac
it_end

#!/usr/bin/env bash
# gpu-check — the one prepared script for a lent GPU machine (e.g. one H200
# for 15 minutes): build the GPU runtime, run its tests, print a few figures.
#
#   bash scripts/gpu-check.sh
#
# 1. Reports the machine (nvidia-smi) and which prerequisites are present:
#    the CUDA Toolkit (cudart, cuBLAS), NCCL, and the Debian packages of the
#    full build (cmake, pkg-config, Gloo, libconfig, OpenBLAS, GSL, zlib,
#    libcsv, CUnit). Nothing is installed: no apt, no network.
# 2. Full build when everything is there: cmake -DDDPSIM_WITH_CUDA=ON, the
#    ddpsim binary and tests/runtime/test_rt_nccl. Otherwise a direct build
#    of just the GPU parts (core/err.c, runtime/comm.c, gpu.c, nccl.c) with
#    the same test file, a minimal CUnit stand-in and a file-based store in
#    place of Gloo's FileStore (both generated under the build directory).
#    Without the CUDA Toolkit nothing can be built: it says so and stops.
# 3. Runs test_rt_nccl (device checks, one-rank NCCL collectives, two
#    processes through a store, hang detection), then its "figures" suite:
#    cuBLAS GEMM TFLOP/s per precision at 1024/4096/8192, device and
#    host-device bandwidth, NCCL one-GPU allreduce times.
# 4. Last, with the full build: `ddpsim launch --nproc 1 -- ddpsim calibrate
#    --backend nccl --quick --out $OUT/gpu-profile.cfg` (every NCCL operation
#    checked on device buffers, cuBLAS GEMM rates per precision, bandwidths,
#    jitter, interference) and prints the profile's compute rates and fits.
# 5. Last and optional, when python3 imports torch (with CUDA), torchvision
#    and transformers: MEASURE=1 bash bench/gpu-traces.sh (at most 180 s):
#    ResNet-50, BERT-large and GPT-2 small profiled with torch.profiler,
#    without DDP and under DDP (one rank, NCCL), each trace self-replayed
#    and its pieces set against its measured spans. The traces, figures
#    and log go to $OUT/gpu-traces.tar (split into gpu-traces.tar.NN past
#    15 MiB), the figures also to $OUT/gpu-traces.csv; fetched, they go to
#    bench/data/traces (tar -xf gpu-traces.tar ./traces, see
#    bench/data/README.md). A lent machine gives back at most 8 files of
#    $OUT: the logs of steps 1-4 are up to 8 more, so pack them (e.g.
#    `tar -C $OUT -czf $OUT/gpu-check.tgz gpu-check && rm -r $OUT/gpu-check`
#    after this script) for the traces to come back too.
#
# A lent machine may hold the CUDA Toolkit but none of the Debian packages
# (Gloo, libconfig, GSL, OpenBLAS, CUnit). Then build here and carry the
# binaries with the libraries they need:
#
#   bash scripts/gpu-check.sh --bundle gpu-bundle      # here: build + copy
#   GPU_CHECK_PREBUILT=gpu-bundle bash scripts/gpu-check.sh   # there
#
# The bundle holds bin/ddpsim, bin/test_rt_nccl, the Gloo shim they open
# (bin/libddpsim-gloo.so) and lib/ (every library they load except glibc's, the compiler's runtime and CUDA's: cudart, cuBLAS and
# NCCL are the lent machine's own). If a bundled binary cannot load there,
# the script falls back to the builds below. NCCL is also looked for in the
# nvidia-nccl wheel of the machine's python3.
#
# Logs go to $OUT/gpu-check (or <build>/logs); the build directory is
# $GPU_CHECK_BUILD (default build-gpu). GPU_CHECK_FALLBACK=1 forces the
# direct build. Everything is bounded by timeouts (about 12 minutes in all;
# the calibration is about a minute on one GPU, at most 180 s, and so are
# the traces); the exit status is 0 only when the tests passed (and, with
# the full build, the calibration wrote its profile): the traces' step
# does not change it.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
BUILD=${GPU_CHECK_BUILD:-$ROOT/build-gpu}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac

have() { command -v "$1" > /dev/null 2>&1; }

# ---- where CUDA and NCCL are ------------------------------------------------------
CUDA_HOME=${CUDA_HOME:-}
if [ -z "$CUDA_HOME" ]; then
  if have nvcc; then CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
  else CUDA_HOME=/usr/local/cuda; fi
fi
LIBDIRS=("$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib"
  /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/lib /usr/lib)
INCDIRS=("$CUDA_HOME/include" "$CUDA_HOME/targets/x86_64-linux/include" /usr/include
  /usr/local/include)
find_in() { # find_in NAME DIRS...: first DIR/NAME that exists
  local n=$1; shift
  for d in "$@"; do [ -e "$d/$n" ] && { echo "$d"; return 0; }; done
  return 1
}
CUDA_INC=$(find_in cuda_runtime.h "${INCDIRS[@]}") || CUDA_INC=
CUDART_DIR=$(find_in libcudart.so "${LIBDIRS[@]}") || CUDART_DIR=
CUBLAS_INC=$(find_in cublas_v2.h "${INCDIRS[@]}") || CUBLAS_INC=
CUBLAS_DIR=$(find_in libcublas.so "${LIBDIRS[@]}") || CUBLAS_DIR=
NCCL_INC=$(find_in nccl.h "${INCDIRS[@]}") || NCCL_INC=
NCCL_DIR=$(find_in libnccl.so "${LIBDIRS[@]}") || NCCL_DIR=
[ -z "$NCCL_DIR" ] && { NCCL_DIR=$(find_in libnccl.so.2 "${LIBDIRS[@]}") || NCCL_DIR=; }
# Images built around PyTorch carry CUDA's libraries and NCCL in the
# nvidia-* wheels of their python3 (libraries only, some without headers).
wheel_lib() { # wheel_lib MODULE LIB: the wheel's lib folder when it holds LIB.so*
  local w
  w=$(python3 -c "import importlib.util as u; s = u.find_spec('nvidia.$1'); print(list(s.submodule_search_locations)[0])" 2>/dev/null) || return 1
  compgen -G "$w/lib/$2.so*" > /dev/null && echo "$w/lib"
}
[ -z "$CUDART_DIR" ] && { CUDART_DIR=$(wheel_lib cuda_runtime libcudart) || CUDART_DIR=; }
[ -z "$CUBLAS_DIR" ] && { CUBLAS_DIR=$(wheel_lib cublas libcublas) || CUBLAS_DIR=; }
if [ -z "$NCCL_INC" ] || [ -z "$NCCL_DIR" ]; then
  if NCCL_DIR=$(wheel_lib nccl libnccl); then
    NCCL_INC=$(find_in nccl.h "$NCCL_DIR/../include") || NCCL_INC=
  else
    NCCL_DIR=
  fi
fi
# cmake's NCCL hints, for both builds (the bundle's and the full one).
NCCL_ARGS=()
[ -n "$NCCL_INC" ] && NCCL_ARGS+=("-DNCCL_INCLUDE_DIR=$NCCL_INC")
if [ -e "$NCCL_DIR/libnccl.so" ]; then NCCL_ARGS+=("-DNCCL_LIBRARY=$NCCL_DIR/libnccl.so")
elif [ -n "$NCCL_DIR" ]; then NCCL_ARGS+=("-DNCCL_LIBRARY=$NCCL_DIR/libnccl.so.2"); fi

# ---- --bundle: build here, pack the binaries with their libraries ---------------
if [ "${1:-}" = --bundle ]; then
  DEST=${2:?usage: gpu-check.sh --bundle DIR}
  if [ -e "$DEST" ] && [ ! -e "$DEST/.gpu-check-bundle" ]; then
    echo "gpu-check --bundle: $DEST exists and is no bundle; name a new folder (or an old bundle to replace)" >&2
    exit 2
  fi
  mkdir -p "$BUILD"
  if ! { cmake -S "$ROOT" -B "$BUILD" -DDDPSIM_WITH_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
           -DCUDAToolkit_ROOT="$CUDA_HOME" "${NCCL_ARGS[@]}" &&
         cmake --build "$BUILD" -j"$(nproc)" --target ddpsim test_rt_nccl; } > "$BUILD/bundle.log" 2>&1; then
    echo "gpu-check --bundle: the CUDA build in $BUILD failed (CUDA Toolkit and NCCL are needed here); the end of $BUILD/bundle.log:" >&2
    tail -n 20 "$BUILD/bundle.log" >&2
    exit 3
  fi
  rm -rf "$DEST" && mkdir -p "$DEST/bin" "$DEST/lib" && touch "$DEST/.gpu-check-bundle" &&
    cp "$BUILD/ddpsim" "$BUILD/tests/runtime/test_rt_nccl" "$BUILD/libddpsim-gloo.so" "$DEST/bin/" || exit 3
  # The Gloo shim goes beside the binaries, where they look for it first.
  # Every library the binaries and the shim load but glibc's, the compiler
  # runtime's, zlib and CUDA's (cudart, cuBLAS and NCCL are the GPU machine's own). Built
  # on Debian 12, so the GPU machine needs glibc 2.34 and libstdc++ of GCC 12
  # (GLIBCXX_3.4.29) or newer.
  if ! LIBS=$(ldd "$DEST/bin/ddpsim" "$DEST/bin/test_rt_nccl" "$DEST/bin/libddpsim-gloo.so"); then
    echo "gpu-check --bundle: ldd could not list the binaries' libraries" >&2
    exit 3
  fi
  echo "$LIBS" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    { grep -vE '^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libz|libcudart|libcublas|libcublasLt|libnccl)\.so' || true; } |
    while read -r name path; do
      cp -L "$path" "$DEST/lib/$name" || { echo "gpu-check --bundle: cannot copy $path" >&2; exit 3; }
    done || exit 3
  echo "gpu-check --bundle: $DEST ($(du -sh "$DEST" | cut -f1)): $(ls "$DEST/lib" | tr '\n' ' ')"
  exit 0
fi

PREBUILT=${GPU_CHECK_PREBUILT:-}
[ -n "$PREBUILT" ] && case $PREBUILT in /*) ;; *) PREBUILT=$ROOT/$PREBUILT ;; esac
LOG=${OUT:+$OUT/gpu-check}
LOG=${LOG:-$BUILD/logs}
mkdir -p "$BUILD" "$LOG"
JOBS=$(nproc 2>/dev/null || echo 4)
T0=$(date +%s)
SUMMARY=$LOG/summary.txt
: > "$SUMMARY"

say() { echo "[gpu-check +$(( $(date +%s) - T0 ))s] $*" | tee -a "$SUMMARY"; }

# ---- 1. the machine and what is installed --------------------------------------
say "host $(hostname), $JOBS CPUs, logs in $LOG"
if have nvidia-smi; then
  nvidia-smi > "$LOG/nvidia-smi.txt" 2>&1
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap \
    --format=csv,noheader 2>&1 | sed 's/^/  GPU /' | tee -a "$SUMMARY"
else
  say "nvidia-smi not found (no driver utilities on PATH)"
fi

report() { # report WHAT VALUE-OR-EMPTY HINT
  if [ -n "$2" ]; then printf '  %-22s %s\n' "$1" "$2"; else printf '  %-22s MISSING (%s)\n' "$1" "$3"; fi
}
{
  echo "prerequisites:"
  report "CUDA Toolkit" "${CUDA_INC:+$CUDA_HOME $(have nvcc && nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')}" \
    "cuda_runtime.h not found; set CUDA_HOME"
  report "cudart" "$CUDART_DIR" "libcudart.so"
  report "cuBLAS" "${CUBLAS_INC:+$CUBLAS_DIR}" "cublas_v2.h / libcublas.so"
  NCCL_VER=
  [ -n "$NCCL_INC" ] && NCCL_VER=$(sed -n 's/^#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' \
    "$NCCL_INC/nccl.h" | paste -sd.)
  report "NCCL" "${NCCL_DIR:+${NCCL_VER:-?} $NCCL_INC $NCCL_DIR}" "nccl.h / libnccl.so (libnccl-dev)"
} | tee -a "$SUMMARY"

FULL=1
for c in cmake cc c++ pkg-config; do have $c || FULL=0; done
for m in libconfig openblas cunit; do (have pkg-config && pkg-config --exists $m) || FULL=0; done
for h in gsl/gsl_rng.h zlib.h csv.h gloo/rendezvous/context.h; do
  find_in $h /usr/include /usr/local/include > /dev/null || FULL=0
done
{
  echo "full build (Debian packages; the direct build needs none of them):"
  for c in cmake cc c++ pkg-config; do report "$c" "$(command -v $c)" "command not found"; done
  for m in libconfig openblas cunit; do
    v=$(have pkg-config && pkg-config --modversion $m 2>/dev/null) || v=
    report "$m" "$v" "pkg-config module $m"
  done
  for h in gsl/gsl_rng.h zlib.h csv.h gloo/rendezvous/context.h; do
    report "$h" "$(find_in $h /usr/include /usr/local/include)" "header not found"
  done
} | tee -a "$SUMMARY"
[ "${GPU_CHECK_FALLBACK:-0}" = 1 ] && FULL=0

if [ -n "$PREBUILT" ] && [ -n "$CUDART_DIR" ] && [ -n "$CUBLAS_DIR" ]; then
  : # the bundle's binaries need CUDA's libraries, not its headers
elif [ -z "$CUDA_INC" ] || [ -z "$CUDART_DIR" ] || [ -z "$CUBLAS_DIR" ] || [ -z "$CUBLAS_INC" ]; then
  say "FAIL: the CUDA Toolkit (headers, cudart, cuBLAS) is missing: nothing GPU can be built here"
  exit 2
fi
if [ -z "$NCCL_INC" ] || [ -z "$NCCL_DIR" ]; then
  say "NCCL is missing: GPU measurements only (the NCCL backend is the stub)"
fi

# ---- 2. build --------------------------------------------------------------------
TEST=
DDPSIM=$BUILD/ddpsim
if [ -n "$PREBUILT" ]; then
  LIBPATH=$PREBUILT/lib${NCCL_DIR:+:$NCCL_DIR}:$CUBLAS_DIR:$CUDART_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  MISSING=$(LD_LIBRARY_PATH=$LIBPATH ldd "$PREBUILT/bin/ddpsim" "$PREBUILT/bin/test_rt_nccl" \
    "$PREBUILT/bin/libddpsim-gloo.so" 2>&1 |
    grep -E "not found|No such file")
  if [ -z "$MISSING" ]; then
    export LD_LIBRARY_PATH=$LIBPATH
    TEST=$PREBUILT/bin/test_rt_nccl DDPSIM=$PREBUILT/bin/ddpsim FULL=2
    say "prebuilt binaries from $PREBUILT (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
  else
    say "prebuilt binaries in $PREBUILT cannot load here; building instead:"
    echo "$MISSING" | sed 's/^/  /' | tee -a "$SUMMARY"
  fi
fi
if [ -z "$TEST" ] && [ $FULL = 1 ]; then
  say "full build in $BUILD (cmake, DDPSIM_WITH_CUDA=ON, -j$JOBS)"
  if timeout 120 cmake -S "$ROOT" -B "$BUILD" -DDDPSIM_WITH_CUDA=ON -DDDPSIM_WERROR=ON \
       -DCUDAToolkit_ROOT="$CUDA_HOME" "${NCCL_ARGS[@]}" > "$LOG/cmake.log" 2>&1 &&
     timeout 300 cmake --build "$BUILD" -j"$JOBS" --target test_rt_nccl ddpsim \
       > "$LOG/build.log" 2>&1; then
    TEST=$BUILD/tests/runtime/test_rt_nccl
    grep "ddpsim:" "$LOG/cmake.log" | sed 's/^/  /' | tee -a "$SUMMARY"
    say "built: $TEST and $BUILD/ddpsim"
  else
    say "full build failed (tail of the logs below); trying the direct build"
    tail -n 15 "$LOG/cmake.log" "$LOG/build.log" 2>/dev/null | sed 's/^/  /' | tee -a "$SUMMARY"
  fi
fi

if [ -z "$TEST" ]; then
  # Direct build: the GPU sources and the same test, with stand-ins for
  # CUnit and Gloo's FileStore generated here.
  SHIM=$BUILD/shim
  mkdir -p "$SHIM/CUnit"
  cat > "$SHIM/CUnit/CUnit.h" <<'EOF'
/* Minimal stand-in for the parts of CUnit 2.1 that ddpsim's tests use. */
#ifndef MINI_CUNIT_H
#define MINI_CUNIT_H
typedef struct mcu_suite *CU_pSuite;
typedef void *CU_pTest;
typedef int (*CU_InitializeFunc)(void);
typedef int (*CU_CleanupFunc)(void);
typedef void (*CU_TestFunc)(void);
typedef enum { CUE_SUCCESS = 0, CUE_NOMEMORY = 1 } CU_ErrorCode;
typedef enum { CU_BRM_NORMAL = 0, CU_BRM_SILENT, CU_BRM_VERBOSE } CU_BasicRunMode;
typedef enum { CU_FALSE = 0, CU_TRUE = 1 } CU_BOOL;
CU_pSuite CU_add_suite(const char *name, CU_InitializeFunc init, CU_CleanupFunc clean);
CU_pTest CU_add_test(CU_pSuite s, const char *name, CU_TestFunc fn);
void mcu_assert(int ok, const char *expr, const char *file, int line, int fatal);
#define CU_ASSERT(v) mcu_assert(!!(v), #v, __FILE__, __LINE__, 0)
#define CU_ASSERT_FATAL(v) mcu_assert(!!(v), #v, __FILE__, __LINE__, 1)
#define CU_ASSERT_EQUAL(a, b) mcu_assert((a) == (b), #a " == " #b, __FILE__, __LINE__, 0)
#define CU_ASSERT_EQUAL_FATAL(a, b) mcu_assert((a) == (b), #a " == " #b, __FILE__, __LINE__, 1)
#define CU_ASSERT_PTR_NULL(p) mcu_assert((p) == 0, #p " == NULL", __FILE__, __LINE__, 0)
#define CU_ASSERT_PTR_NOT_NULL(p) mcu_assert((p) != 0, #p " != NULL", __FILE__, __LINE__, 0)
#define CU_ASSERT_STRING_EQUAL(a, b) mcu_assert(strcmp((a), (b)) == 0, #a " eq " #b, __FILE__, __LINE__, 0)
CU_ErrorCode CU_initialize_registry(void);
void CU_cleanup_registry(void);
CU_ErrorCode CU_get_error(void);
const char *CU_get_error_msg(void);
void CU_basic_set_mode(CU_BasicRunMode m);
CU_pSuite CU_get_suite(const char *name);
CU_ErrorCode CU_basic_run_suite(CU_pSuite s);
CU_ErrorCode CU_basic_run_tests(void);
CU_ErrorCode CU_set_suite_active(CU_pSuite s, CU_BOOL active);
void CU_set_fail_on_inactive(CU_BOOL fail);
unsigned CU_get_number_of_failures(void);
unsigned CU_get_number_of_tests_failed(void);
unsigned CU_get_number_of_tests_run(void);
unsigned CU_get_number_of_suites_failed(void);
#endif
EOF
  echo '#include <CUnit/CUnit.h>' > "$SHIM/CUnit/Basic.h"
  cat > "$SHIM/mini_cunit.c" <<'EOF'
#include <CUnit/CUnit.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
enum { MAX_SUITES = 16, MAX_TESTS = 64 };
struct mcu_suite {
  const char *name;
  CU_InitializeFunc init;
  CU_CleanupFunc clean;
  int n, inactive;
  const char *tname[MAX_TESTS];
  CU_TestFunc fn[MAX_TESTS];
};
static struct mcu_suite suites[MAX_SUITES];
static int nsuites;
static unsigned fails, tests_failed, tests_run, cur_fails, suites_failed;
static jmp_buf fatal_jb;
CU_ErrorCode CU_initialize_registry(void) { return CUE_SUCCESS; }
void CU_cleanup_registry(void) {}
CU_ErrorCode CU_get_error(void) { return CUE_SUCCESS; }
const char *CU_get_error_msg(void) { return "no error"; }
void CU_basic_set_mode(CU_BasicRunMode m) { (void)m; }
CU_pSuite CU_add_suite(const char *name, CU_InitializeFunc init, CU_CleanupFunc clean) {
  if (nsuites == MAX_SUITES) return NULL;
  struct mcu_suite *s = &suites[nsuites++];
  s->name = name, s->init = init, s->clean = clean;
  return s;
}
CU_pTest CU_add_test(CU_pSuite s, const char *name, CU_TestFunc fn) {
  if (!s || s->n == MAX_TESTS) return NULL;
  s->tname[s->n] = name, s->fn[s->n] = fn;
  return &s->fn[s->n++];
}
void mcu_assert(int ok, const char *expr, const char *file, int line, int fatal) {
  if (ok) return;
  fails++, cur_fails++;
  printf("\n    ASSERT FAILED %s:%d: %s\n", file, line, expr);
  if (fatal) longjmp(fatal_jb, 1);
}
CU_pSuite CU_get_suite(const char *name) {
  for (int i = 0; i < nsuites; i++)
    if (strcmp(suites[i].name, name) == 0) return &suites[i];
  return NULL;
}
CU_ErrorCode CU_basic_run_suite(CU_pSuite s) {
  printf("Suite: %s\n", s->name);
  if (s->init && s->init() != 0) {
    printf("  suite init failed\n");
    suites_failed++;
    return CUE_SUCCESS;
  }
  for (int i = 0; i < s->n; i++) {
    printf("  Test: %s ...", s->tname[i]);
    fflush(stdout);
    cur_fails = 0;
    tests_run++;
    if (setjmp(fatal_jb) == 0) s->fn[i]();
    if (cur_fails) tests_failed++;
    printf("%s\n", cur_fails ? "FAILED" : "passed");
  }
  if (s->clean) s->clean();
  return CUE_SUCCESS;
}
CU_ErrorCode CU_set_suite_active(CU_pSuite s, CU_BOOL active) { s->inactive = !active; return CUE_SUCCESS; }
void CU_set_fail_on_inactive(CU_BOOL fail) { (void)fail; }
CU_ErrorCode CU_basic_run_tests(void) {
  for (int i = 0; i < nsuites; i++)
    if (!suites[i].inactive) CU_basic_run_suite(&suites[i]);
  printf("\n%u tests run, %u failed, %u failed asserts\n", tests_run, tests_failed, fails);
  return CUE_SUCCESS;
}
unsigned CU_get_number_of_failures(void) { return fails; }
unsigned CU_get_number_of_tests_failed(void) { return tests_failed; }
unsigned CU_get_number_of_tests_run(void) { return tests_run; }
unsigned CU_get_number_of_suites_failed(void) { return suites_failed; }
EOF
  cat > "$SHIM/mini_store.c" <<'EOF'
/* A file-based stand-in for the store half of runtime/gloo_shim.h: keys are
 * files in a directory, set once (link(2) refuses an existing name). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/err.h"
#include "runtime/gloo_shim.h"
struct rt_store { char dir[4096]; char prefix[256]; char desc[4500]; };
int rt_store_open_file(const char *dir, const char *prefix, rt_store **out) {
  *out = NULL;
  if (!prefix || !*prefix) return core_err_set(CORE_EINVAL, "empty store prefix");
  if (access(dir, W_OK) != 0) return core_err_errno(errno, "store directory %s", dir);
  rt_store *s = calloc(1, sizeof *s);
  if (!s) return core_err_set(CORE_ENOMEM, "out of memory");
  snprintf(s->dir, sizeof s->dir, "%s", dir);
  snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
  snprintf(s->desc, sizeof s->desc, "file://%s (prefix %s)", dir, prefix);
  *out = s;
  return 0;
}
int rt_store_open_redis(const char *host, int port, const char *prefix, rt_store **out) {
  (void)host, (void)port, (void)prefix;
  *out = NULL;
  return core_err_set(CORE_EUNSUPPORTED, "redis-server stores need Gloo (gpu-check stand-in)");
}
void rt_store_close(rt_store *s) { free(s); }
const char *rt_store_describe(const rt_store *s) { return s->desc; }
static void path(const rt_store *s, const char *key, char *buf, size_t len) {
  snprintf(buf, len, "%s/%s%%%s", s->dir, s->prefix, key);
}
int rt_store_set(rt_store *s, const char *key, const void *val, size_t len) {
  if (len == 0) return core_err_set(CORE_EINVAL, "store key %s: empty value", key);
  char p[4500], tmp[4600];
  path(s, key, p, sizeof p);
  snprintf(tmp, sizeof tmp, "%s.tmp%d", p, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) return core_err_errno(errno, "writing %s", tmp);
  int ok = fwrite(val, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (!ok) { unlink(tmp); return core_err_errno(errno, "writing %s", tmp); }
  int rc = link(tmp, p) == 0 ? 0 : errno;
  unlink(tmp);
  if (rc == EEXIST)
    return core_err_set(CORE_EINVAL, "store key %s is already set in %s: use a fresh prefix", key, s->desc);
  return rc ? core_err_errno(rc, "store key %s", p) : 0;
}
int rt_store_get(rt_store *s, const char *key, int timeout_ms, void **val, size_t *len) {
  *val = NULL;
  char p[4500];
  path(s, key, p, sizeof p);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    FILE *f = fopen(p, "rb");
    if (f) {
      char *b = malloc(65536);
      size_t n = b ? fread(b, 1, 65536, f) : 0;
      fclose(f);
      if (!b) return core_err_set(CORE_ENOMEM, "out of memory");
      *val = b, *len = n;
      return 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
      return core_err_set(CORE_ETIMEDOUT, "key %s not set in %s within %d ms", key, s->desc, timeout_ms);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}
int rt_store_wait(rt_store *s, const char *const *keys, size_t nkeys, int timeout_ms) {
  for (size_t i = 0; i < nkeys; i++) {
    void *v = NULL;
    size_t n = 0;
    int rc = rt_store_get(s, keys[i], timeout_ms, &v, &n);
    free(v);
    if (rc) return rc;
  }
  return 0;
}
EOF
  CC=$(command -v cc || command -v gcc || echo cc)
  # CUDA and NCCL are opened at run time (core/dl.h), not linked: the
  # files found above become the loader's defaults, as CMake's build does.
  lib_file() { # lib_file DIR NAME: DIR/NAME.so.N (the shortest), else DIR/NAME.so
    local f
    f=$(compgen -G "$1/$2.so.*" | awk '{ print length, $0 }' | sort -n | head -n 1 | cut -d' ' -f2-)
    echo "${f:-$1/$2.so}"
  }
  NCCL_SRC=(runtime/nccl.c runtime/nccl_api.c)
  NCCL_FLAGS=(-DDDPSIM_HAVE_NCCL=1 -I"$NCCL_INC" "-DDDPSIM_NCCL_PATH=\"$(lib_file "$NCCL_DIR" libnccl)\"")
  if [ -z "$NCCL_INC" ] || [ -z "$NCCL_DIR" ]; then NCCL_SRC=(runtime/nccl_none.c); NCCL_FLAGS=(); fi
  say "direct build with $CC: GPU sources + test_rt_nccl + stand-ins (${NCCL_SRC[*]})"
  if timeout 120 "$CC" -std=c11 -O2 -g -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
       -DDDPSIM_HAVE_CUDA=1 -Wall -Wextra -I"$SHIM" -I"$ROOT" -I"$ROOT/tests" -I"$ROOT/tests/runtime" \
       -I"$CUDA_INC" -I"$CUBLAS_INC" \
       "-DDDPSIM_CUDART_PATH=\"$(lib_file "$CUDART_DIR" libcudart)\"" \
       "-DDDPSIM_CUBLAS_PATH=\"$(lib_file "$CUBLAS_DIR" libcublas)\"" \
       core/err.c core/path.c core/dl.c runtime/comm.c runtime/cuda_api.c runtime/gpu.c "${NCCL_SRC[@]}" \
       tests/runtime/test_rt_nccl.c tests/runtime/rtt.c tests/cunit_main.c \
       "$SHIM/mini_cunit.c" "$SHIM/mini_store.c" \
       -o "$BUILD/test_rt_nccl" "${NCCL_FLAGS[@]}" -ldl -lpthread -lm \
       > "$LOG/build-direct.log" 2>&1; then
    TEST=$BUILD/test_rt_nccl
    say "built: $TEST"
  else
    say "FAIL: the direct build failed:"
    tail -n 30 "$LOG/build-direct.log" | sed 's/^/  /' | tee -a "$SUMMARY"
    exit 3
  fi
fi
say "CUDA runtime, cuBLAS and NCCL are opened when first used (paths: DDPSIM_CUDART, DDPSIM_CUBLAS, DDPSIM_NCCL)"

# ---- 3. tests and figures -------------------------------------------------------
say "running $(basename "$TEST") (log: $LOG/test_rt_nccl.log)"
timeout 300 "$TEST" gpu > "$LOG/test_rt_nccl.log" 2>&1
TRC=$?
[ $TRC = 77 ] && TRC=0 && say "test_rt_nccl: some GPU checks were skipped here (see SKIPPED below)"
grep -E "CUDA device|Test:|passed|FAILED|failed|SKIPPED|check failed|device 0|GEMM|rank [0-9]|CORE_|asserts|tests run" \
  "$LOG/test_rt_nccl.log" | head -n 80 | sed 's/^/  /' | tee -a "$SUMMARY"
if [ $TRC = 0 ]; then say "test_rt_nccl PASSED"; else say "test_rt_nccl FAILED (exit $TRC; 124 = timeout)"; fi

say "figures (log: $LOG/figures.log)"
DDPSIM_GPU_FIGURES=1 timeout 150 "$TEST" figures > "$LOG/figures.log" 2>&1
FRC=$?
sed -n '/device 0:/,/^Run Summary\|tests run/p' "$LOG/figures.log" | grep -v "Run Summary\|tests run" \
  | sed 's/^/  /' | tee -a "$SUMMARY"
[ $FRC = 0 ] || say "figures run ended with exit $FRC (124 = timeout); see $LOG/figures.log"

# ---- 4. calibrate --backend nccl on this GPU --------------------------------------
CRC=0
if [ -x "$DDPSIM" ] && { [ "$FULL" = 2 ] || [ "$TEST" = "$BUILD/tests/runtime/test_rt_nccl" ]; }; then
  PROFILE=${OUT:+$OUT/gpu-profile.cfg}
  PROFILE=${PROFILE:-$LOG/gpu-profile.cfg}
  say "calibrate --backend nccl --quick on one GPU (log: $LOG/calibrate.log)"
  timeout 180 "$DDPSIM" launch --nproc 1 -- "$DDPSIM" calibrate --backend nccl --quick \
    --progress on --out "$PROFILE" > "$LOG/calibrate.log" 2>&1
  CRC=$?
  # Progress lines (sweep lines rewrite themselves with \r: keep their last).
  tr '\r' '\n' < "$LOG/calibrate.log" | grep -E "^\[|error|skipped|wrote" | head -n 60 \
    | sed 's/^/  /' | tee -a "$SUMMARY"
  if [ $CRC = 0 ] && [ -s "$PROFILE" ]; then
    say "profile $PROFILE: device, compute rates (TFLOP/s per GEMM of gemm_flops), fits"
    {
      sed -n '/^  device = /p; /^  host = /p' "$PROFILE"
      sed -n '/^  compute = (/,/^  );/p' "$PROFILE"
      sed -n '/^  collectives = (/,/^  );/p' "$PROFILE" | grep -E "backend = |min_bytes = "
      sed -n '/^  jitter = /p; /^  interference = /p; /^  restart = /p' "$PROFILE"
    } | sed 's/^/  /' | tee -a "$SUMMARY"
  else
    say "calibrate FAILED (exit $CRC; 124 = timeout); see $LOG/calibrate.log"
    tail -n 15 "$LOG/calibrate.log" | sed 's/^/  /' | tee -a "$SUMMARY"
  fi
else
  say "calibrate --backend nccl skipped: it needs the full build's ddpsim"
fi

# ---- 5. traces of real models (optional: python3 with PyTorch and CUDA) -------------
# bench/gpu-traces.sh: ResNet-50, BERT-large and GPT-2 small with and without
# DDP profiled with torch.profiler, then self-replayed. Its results go to
# gpu-traces.tar (the traces, the figures, the log) and gpu-traces.csv (the
# figures) beside the profile, as few files as a lent machine gives back.
if python3 -c "import torch, torchvision, transformers; assert torch.cuda.is_available()" 2>/dev/null; then
  TDIR=${OUT:-$LOG}
  TW=$BUILD/gpu-traces
  rm -rf "$TW" && mkdir -p "$TW"
  say "profiling real models (bench/gpu-traces.sh, at most 180 s; results in $TDIR/gpu-traces.tar)"
  TBUILD=$BUILD # where ddpsim is: the bundle's, the full build's, or none (the direct build)
  [ "$FULL" = 2 ] && TBUILD=$PREBUILT
  MEASURE=1 MEASURE_TIMEOUT=130 timeout 180 bash "$ROOT/bench/gpu-traces.sh" "$TBUILD" "$TW" \
    > "$TW/gpu-traces.log" 2>&1
  GRC=$?
  grep -E "^(ok|FAIL) |median .* replay|no ddpsim|gpu-traces:|goals:" "$TW/gpu-traces.log" | sed 's/^/  /' |
    tee -a "$SUMMARY"
  [ -s "$TW/figures.csv" ] && cp "$TW/figures.csv" "$TDIR/gpu-traces.csv"
  tar -C "$TW" -cf "$TDIR/gpu-traces.tar" . 2> /dev/null
  if [ "$(stat -c %s "$TDIR/gpu-traces.tar")" -gt $((15 * 1024 * 1024)) ]; then
    # What comes back from a lent machine: files of 16 MiB at most.
    split -b 15m -d "$TDIR/gpu-traces.tar" "$TDIR/gpu-traces.tar." && rm "$TDIR/gpu-traces.tar"
    say "traces in $TDIR/gpu-traces.tar.NN (cat them in order, then tar -x)"
  fi
  say "gpu-traces ended with exit $GRC (124 = timeout): $TDIR/gpu-traces.tar*, figures $TDIR/gpu-traces.csv"
else
  say "traces of real models skipped: python3 cannot import torch (with CUDA), torchvision and transformers"
fi

say "done in $(( $(date +%s) - T0 )) s; summary in $SUMMARY"
[ $TRC = 0 ] && [ $CRC != 0 ] && exit 4
exit $TRC

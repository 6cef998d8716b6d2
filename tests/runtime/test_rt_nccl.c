/* The GPU half of the runtime: runtime/gpu.h and the NCCL backend
 * (runtime/nccl.h). The suite first asks a child process how many CUDA
 * devices there are (a process that has used CUDA must not fork children
 * that use it, so this process never touches CUDA when there is one), then
 * runs one of two sets of checks:
 *
 *   no device (or a ddpsim built without CUDA): every gpu.h function and
 *   rt_nccl_connect return CORE_EUNSUPPORTED with a message, quickly, and
 *   rt_nccl_connect never waits on its store. This is what CI runs.
 *
 *   devices: real checks, each in forked children with a deadline — device
 *   buffers and data patterns, cuBLAS GEMM rates, bandwidths; a one-rank
 *   communicator's allreduce, allgather, reduce-scatter and broadcast on
 *   device buffers with guard elements; two processes meeting through a
 *   FileStore; and the hang detection: creation that never completes and a
 *   collective whose stream never drains both end in CORE_ETIMEDOUT within
 *   the timeout, with the communicator aborted.
 *
 * With DDPSIM_GPU_FIGURES=1 a "figures" suite also prints GEMM TFLOP/s,
 * bandwidths and one-GPU NCCL allreduce times (scripts/gpu-check.sh). */
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cunit_skip.h"
#include "core/err.h"
#include "runtime/comm.h"
#include "runtime/store.h"
#include "runtime/gpu.h"
#include "runtime/nccl.h"
#include "rtt.h"

#ifdef DDPSIM_HAVE_CUDA
#include "runtime/cuda_api.h"
#endif

/* Generous for CUDA and NCCL start-up on a shared machine; a hang still
 * ends at the deadline, not at ctest's timeout. */
#define RANK_DEADLINE_S 180.0
#define OP_TIMEOUT_S 60.0
#define QUICK_S 5.0

/* ---- what the probe found ------------------------------------------------- */

static int ndev = -1; /* CUDA devices: > 0, 0 for none, -1 when the probe failed */
static int probe_code;
static char probe_msg[768];

static int suite_init(void) {
  ndev = rtt_gpu_probe(RANK_DEADLINE_S, &probe_code, probe_msg, sizeof probe_msg); /* -1: test_probe reports it */
  if (ndev > 0)
    printf("\n  %d CUDA device(s): running the GPU checks\n", ndev);
  else if (ndev == 0)
    printf("\n  no usable CUDA device (%s): checking that every GPU function says so\n", probe_msg);
  return 0;
}

static void test_probe(void) {
  CU_ASSERT_FATAL(ndev >= 0 && "the device probe child reported nothing");
  if (ndev == 0) {
    CU_ASSERT_EQUAL(probe_code, CORE_EUNSUPPORTED);
    CU_ASSERT_PTR_NOT_NULL(strstr(probe_msg, "CUDA"));
  }
}

/* ---- no device -------------------------------------------------------------- */

#ifdef DDPSIM_HAVE_CUDA
enum { CUDA_BUILT = 1 };
#else
enum { CUDA_BUILT = 0 };
#endif
#ifdef DDPSIM_HAVE_NCCL
enum { NCCL_BUILT = 1 };
#else
enum { NCCL_BUILT = 0 };
#endif

/* What a missing device, or a part left out of the build, must say. */
static int says_unsupported(const char *msg, int built) {
  return strstr(msg, built ? "no CUDA device" : "built without CUDA") != NULL;
}

#define EXPECT_UNSUPPORTED_IN(call, built)                                                                             \
  do {                                                                                                                 \
    int rc_ = (call);                                                                                                  \
    int ok_ = rc_ == CORE_EUNSUPPORTED && says_unsupported(core_err_msg(), built);                                     \
    CU_ASSERT(ok_);                                                                                                    \
    if (!ok_)                                                                                                          \
      fprintf(stderr, "\n  %s gave %d: %s\n", #call, rc_, core_err_msg());                                             \
  } while (0)
#define EXPECT_UNSUPPORTED(call) EXPECT_UNSUPPORTED_IN(call, CUDA_BUILT)
#define EXPECT_NCCL_UNSUPPORTED(call) EXPECT_UNSUPPORTED_IN(call, NCCL_BUILT)

static void test_no_gpu_functions(void) {
  if (ndev != 0) {
    test_skip("%d CUDA device(s) here: the GPU suite runs instead", ndev);
    return;
  }
  double t0 = rtt_now();
  int n = 7;
  EXPECT_UNSUPPORTED(rt_gpu_count(&n));
  CU_ASSERT_EQUAL(n, 0);
  rt_gpu_info info;
  EXPECT_UNSUPPORTED(rt_gpu_get_info(0, &info));
  EXPECT_UNSUPPORTED(rt_gpu_set_device(0));
  char v[256];
  EXPECT_UNSUPPORTED(rt_gpu_versions(v, sizeof v));
  void *d = (void *)1, *h = (void *)1;
  EXPECT_UNSUPPORTED(rt_gpu_alloc(1024, &d));
  CU_ASSERT_PTR_NULL(d);
  EXPECT_UNSUPPORTED(rt_gpu_host_alloc(1024, &h));
  CU_ASSERT_PTR_NULL(h);
  rt_gpu_free(NULL);
  rt_gpu_host_free(NULL);
  float a[16] = {0}, b[16] = {0};
  EXPECT_UNSUPPORTED(rt_gpu_memset(a, 0, sizeof a));
  EXPECT_UNSUPPORTED(rt_gpu_copy_to_device(a, b, sizeof a));
  EXPECT_UNSUPPORTED(rt_gpu_copy_to_host(a, b, sizeof a));
  EXPECT_UNSUPPORTED(rt_gpu_copy_on_device(a, b, sizeof a));
  EXPECT_UNSUPPORTED(rt_gpu_sync());
  rt_gpu_pattern p = {1, 13, 0};
  size_t nbad = 99;
  EXPECT_UNSUPPORTED(rt_gpu_fill(a, 16, RT_FP32, &p));
  EXPECT_UNSUPPORTED(rt_gpu_check(a, 16, RT_FP32, &p, &nbad));
  CU_ASSERT_EQUAL(nbad, 0);
  double x = -1, y = -1;
  for (int m = 0; m < CORE_N_PREC; m++) {
    x = -1;
    EXPECT_UNSUPPORTED(rt_gpu_gemm_rate(0, (enum core_prec)m, 64, 64, 64, 1, 2, &x));
    CU_ASSERT_EQUAL(x, 0);
  }
  EXPECT_UNSUPPORTED(rt_gpu_dtod_bandwidth(0, 1 << 20, 1, 2, &x));
  EXPECT_UNSUPPORTED(rt_gpu_host_bandwidth(0, 1 << 20, 1, 2, &x, &y));
  CU_ASSERT(x == 0 && y == 0);
  CU_ASSERT(rtt_now() - t0 < QUICK_S);
}

/* Without a device, or in a build without NCCL (whose stub never touches
 * CUDA, so this process may call it even when there are devices). */
static void test_no_gpu_nccl(void) {
  if (ndev != 0 && NCCL_BUILT) {
    test_skip("%d CUDA device(s) here and NCCL built: the GPU suite runs instead", ndev);
    return;
  }
  char dir[512], prefix[128];
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(dir, sizeof dir), 0);
  rtt_prefix(prefix, sizeof prefix, "nccl-none");
  rt_store *s = NULL;
  CU_ASSERT_EQUAL_FATAL(rt_store_open_file(dir, prefix, &s), 0);

  /* Rank 1 would wait 30 s for rank 0's id if it reached the store. */
  double t0 = rtt_now();
  rt_comm *c = (rt_comm *)1;
  EXPECT_NCCL_UNSUPPORTED(rt_nccl_connect(s, 1, 2, 0, 30.0, &c));
  CU_ASSERT_PTR_NULL(c);
  c = (rt_comm *)1;
  EXPECT_NCCL_UNSUPPORTED(rt_nccl_connect(s, 0, 2, 0, 30.0, &c));
  CU_ASSERT_PTR_NULL(c);
  EXPECT_NCCL_UNSUPPORTED(rt_nccl_connect_algo(s, 0, 1, 0, 30.0, RT_ALGO_RING, &c));
  CU_ASSERT(rtt_now() - t0 < QUICK_S);
  /* Rank 0 published nothing. */
  void *v = NULL;
  size_t len = 0;
  CU_ASSERT_EQUAL(rt_store_get(s, "ddpsim_nccl_uid", 100, &v, &len), CORE_ETIMEDOUT);
  free(v);
  CU_ASSERT_PTR_NULL(rt_nccl_stream(NULL));

  int ver = -1;
#ifdef DDPSIM_HAVE_NCCL
  /* The library itself loads and answers without a device. */
  CU_ASSERT_EQUAL(rt_nccl_version(&ver), 0);
  CU_ASSERT(ver >= 21400);
  CU_ASSERT_EQUAL(rt_nccl_connect(NULL, 0, 1, 0, 1.0, &c), CORE_EINVAL);
  CU_ASSERT_EQUAL(rt_nccl_connect(s, 2, 2, 0, 1.0, &c), CORE_EINVAL);
  CU_ASSERT_EQUAL(rt_nccl_connect(s, 0, 1, 0, 0.0, &c), CORE_EINVAL);
  CU_ASSERT_EQUAL(rt_nccl_connect_algo(s, 0, 1, 0, 1.0, RT_ALGO_BCUBE, &c), CORE_EUNSUPPORTED);
  CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "Gloo"));
#else
  EXPECT_NCCL_UNSUPPORTED(rt_nccl_version(&ver));
  CU_ASSERT_EQUAL(ver, 0);
#endif
  rt_store_close(s);
  rtt_rmdir(dir);
}

/* ---- checks inside GPU children ----------------------------------------------- */

#define CHECK_OK(call)                                                                                                 \
  do {                                                                                                                 \
    int rc_ = (call);                                                                                                  \
    RTT_CHECK(rc_ == 0, "%s gave %d: %s", #call, rc_, core_err_msg());                                                 \
  } while (0)

typedef struct job {
  char dir[512];
  char prefix[128];
} job;

static void job_init(job *j, const char *name) {
  memset(j, 0, sizeof *j);
  if (rtt_mkdtemp(j->dir, sizeof j->dir) != 0)
    j->dir[0] = '\0';
  rtt_prefix(j->prefix, sizeof j->prefix, name);
}

/* Run fn in size children (ranks 0..size-1) and expect them all to pass. */
static void run_children(int size, rtt_rank_fn fn, const char *name) {
  job j;
  job_init(&j, name);
  CU_ASSERT_FATAL(j.dir[0] != '\0');
  CU_ASSERT(rtt_run(size, fn, &j, RANK_DEADLINE_S));
  rtt_rmdir(j.dir);
}

static const enum rt_dtype dtypes[] = {RT_FP32, RT_FP16, RT_BF16};
enum { N_DTYPES = 3, GUARD = 8 };

/* Guard elements after a buffer: a value no collective here produces. */
static const rt_gpu_pattern guard_pat = {-7, 1, 0};

/* A device buffer of n elements plus GUARD guard elements. */
static void *alloc_guarded(size_t n, enum rt_dtype t) {
  void *d = NULL;
  size_t es = rt_dtype_size(t);
  if (rt_gpu_alloc((n + GUARD) * es, &d) != 0) {
    RTT_CHECK(0, "rt_gpu_alloc: %s", core_err_msg());
    return NULL;
  }
  CHECK_OK(rt_gpu_fill((char *)d + n * es, GUARD, t, &guard_pat));
  return d;
}

static int guard_intact(const void *d, size_t n, enum rt_dtype t) {
  return rt_gpu_check((const char *)d + n * rt_dtype_size(t), GUARD, t, &guard_pat, NULL) == 0;
}

static void check_data(const void *d, size_t n, enum rt_dtype t, const rt_gpu_pattern *p, const char *what, int rank) {
  int rc = rt_gpu_check(d, n, t, p, NULL);
  RTT_CHECK(rc == 0, "rank %d: %s (%s, %zu elements): %s", rank, what, rt_dtype_name(t), n, core_err_msg());
  RTT_CHECK(
      guard_intact(d, n, t), "rank %d: %s (%s, %zu elements) wrote past its buffer", rank, what, rt_dtype_name(t), n);
}

static const size_t coll_counts[] = {1, 7, 1000, (1u << 20) + 3};

/* Every collective on every dtype and count; rank r contributes scale r+1,
 * so sums have scale p(p+1)/2 (exact: at most 3 · 13 for 2 ranks). */
static void coll_checks(rt_comm *c, int rank, int size) {
  const double sum = size * (size + 1) / 2.0;
  for (int ti = 0; ti < N_DTYPES; ti++) {
    enum rt_dtype t = dtypes[ti];
    size_t es = rt_dtype_size(t);
    for (size_t k = 0; k < sizeof coll_counts / sizeof coll_counts[0]; k++) {
      size_t n = coll_counts[k];
      rt_gpu_pattern mine = {rank + 1, 13, 0};

      void *d = alloc_guarded(n, t);
      if (!d)
        return;
      CHECK_OK(rt_gpu_fill(d, n, t, &mine));
      CHECK_OK(rt_allreduce(c, d, n, t, RT_ALGO_DEFAULT));
      rt_gpu_pattern ar = {sum, 13, 0};
      check_data(d, n, t, &ar, "allreduce", rank);
      rt_gpu_free(d);

      void *send = alloc_guarded(n, t), *recv = alloc_guarded(n * (size_t)size, t);
      if (send && recv) {
        CHECK_OK(rt_gpu_fill(send, n, t, &mine));
        CHECK_OK(rt_gpu_memset(recv, 0, n * (size_t)size * es));
        CHECK_OK(rt_allgather(c, send, recv, n, t));
        for (int r = 0; r < size; r++) {
          rt_gpu_pattern theirs = {r + 1, 13, 0};
          RTT_CHECK(rt_gpu_check((char *)recv + (size_t)r * n * es, n, t, &theirs, NULL) == 0,
              "rank %d: allgather block %d (%s, %zu): %s", rank, r, rt_dtype_name(t), n, core_err_msg());
        }
        RTT_CHECK(guard_intact(recv, n * (size_t)size, t), "allgather wrote past its buffer");
        RTT_CHECK(guard_intact(send, n, t), "allgather wrote past its send buffer");
      }
      rt_gpu_free(send);
      rt_gpu_free(recv);

      send = alloc_guarded(n * (size_t)size, t);
      recv = alloc_guarded(n, t);
      if (send && recv) {
        CHECK_OK(rt_gpu_fill(send, n * (size_t)size, t, &mine));
        CHECK_OK(rt_gpu_memset(recv, 0, n * es));
        CHECK_OK(rt_reduce_scatter(c, send, recv, n, t));
        rt_gpu_pattern rs = {sum, 13, (size_t)rank * n};
        check_data(recv, n, t, &rs, "reduce-scatter", rank);
      }
      rt_gpu_free(send);
      rt_gpu_free(recv);

      d = alloc_guarded(n, t);
      if (!d)
        return;
      rt_gpu_pattern bc = {5, 11, 2};
      int root = size - 1;
      if (rank == root)
        CHECK_OK(rt_gpu_fill(d, n, t, &bc));
      else
        CHECK_OK(rt_gpu_memset(d, 0, n * es));
      CHECK_OK(rt_broadcast(c, d, n, t, root));
      check_data(d, n, t, &bc, "broadcast", rank);
      rt_gpu_free(d);
    }
  }
  CHECK_OK(rt_barrier(c));
}

static rt_store *open_store(const job *j, const char *suffix) {
  char prefix[192];
  snprintf(prefix, sizeof prefix, "%s%s", j->prefix, suffix);
  rt_store *s = NULL;
  int rc = rt_store_open_file(j->dir, prefix, &s);
  RTT_CHECK(rc == 0, "rt_store_open_file: %s", core_err_msg());
  return s;
}

/* ---- GPU: devices, buffers, patterns, measurements ---------------------------- */

static int gpu_basics_child(int rank, int size, void *arg) {
  (void)rank, (void)size, (void)arg;
  rtt_fails = 0;
  int n = 0;
  CHECK_OK(rt_gpu_count(&n));
  RTT_CHECK(n > 0, "%d devices", n);
  rt_gpu_info info;
  CHECK_OK(rt_gpu_get_info(0, &info));
  RTT_CHECK(
      info.name[0] && info.total_mem > 0 && info.free_mem <= info.total_mem && info.cc_major >= 3 && info.sm_count > 0,
      "device info: %s cc %d.%d, %d SMs, %zu of %zu bytes free", info.name, info.cc_major, info.cc_minor, info.sm_count,
      info.free_mem, info.total_mem);
  char v[256];
  CHECK_OK(rt_gpu_versions(v, sizeof v));
  printf("  device 0: %s (%s), cc %d.%d, %d SMs, %.1f GiB (%.1f free); %s\n", info.name, info.pci_bus_id, info.cc_major,
      info.cc_minor, info.sm_count, (double)info.total_mem / (1 << 30), (double)info.free_mem / (1 << 30), v);
  RTT_CHECK(rt_gpu_get_info(n, &info) == CORE_EINVAL, "device %d out of range: %s", n, core_err_msg());
  RTT_CHECK(rt_gpu_set_device(-1) == CORE_EINVAL, "device -1: %s", core_err_msg());
  CHECK_OK(rt_gpu_set_device(0));

  for (int ti = 0; ti < N_DTYPES; ti++) {
    enum rt_dtype t = dtypes[ti];
    size_t es = rt_dtype_size(t);
    /* More than two 8 MiB staging chunks, and not a multiple of one. */
    size_t cnt = (size_t)(20 << 20) / es + 5;
    void *d = NULL, *d2 = NULL;
    if (rt_gpu_alloc(cnt * es, &d) || rt_gpu_alloc(cnt * es, &d2)) {
      RTT_CHECK(0, "rt_gpu_alloc: %s", core_err_msg());
      rt_gpu_free(d);
      break;
    }
    rt_gpu_pattern p = {2, 13, 5};
    size_t nbad = 99;
    CHECK_OK(rt_gpu_fill(d, cnt, t, &p));
    CHECK_OK(rt_gpu_check(d, cnt, t, &p, &nbad));
    RTT_CHECK(nbad == 0, "%zu bad", nbad);
    CHECK_OK(rt_gpu_copy_on_device(d2, d, cnt * es));
    CHECK_OK(rt_gpu_check(d2, cnt, t, &p, NULL));

    /* One wrong element, in the last chunk: found, named, counted. */
    size_t at = cnt - 3;
    unsigned char one[4] = {0, 0, 0, 0};
    CHECK_OK(rt_gpu_copy_to_device((char *)d + at * es, one, es));
    int rc = rt_gpu_check(d, cnt, t, &p, &nbad);
    char idx[32];
    snprintf(idx, sizeof idx, "element %zu ", at);
    RTT_CHECK(rc == CORE_ECORRUPT && nbad == 1 && strstr(core_err_msg(), idx),
        "%s: corrupted element %zu: rc %d, %zu bad: %s", rt_dtype_name(t), at, rc, nbad, core_err_msg());
    unsigned char back[4] = {1, 1, 1, 1};
    CHECK_OK(rt_gpu_copy_to_host(back, (char *)d + at * es, es));
    RTT_CHECK(memcmp(back, one, es) == 0, "copy back differs");

    CHECK_OK(rt_gpu_memset(d, 0, cnt * es));
    rc = rt_gpu_check(d, cnt, t, &p, &nbad);
    RTT_CHECK(rc == CORE_ECORRUPT && nbad == cnt, "zeroed: rc %d, %zu of %zu bad", rc, nbad, cnt);
    rt_gpu_free(d);
    rt_gpu_free(d2);
  }
  rt_gpu_pattern bad = {1, 0, 0};
  RTT_CHECK(rt_gpu_fill(NULL, 0, RT_FP32, &bad) == CORE_EINVAL, "period 0 accepted");
  CHECK_OK(rt_gpu_sync());

  for (int m = 0; m < CORE_N_PREC; m++) {
    double f = 0;
    int rc = rt_gpu_gemm_rate(0, (enum core_prec)m, 1024, 1024, 1024, 2, 5, &f);
    if (rc == CORE_EUNSUPPORTED && info.cc_major < 8) {
      printf("  GEMM %s: not on cc %d.%d\n", core_prec_name((enum core_prec)m), info.cc_major, info.cc_minor);
      continue;
    }
    RTT_CHECK(
        rc == 0 && f > 0, "GEMM %s: rc %d, %g FLOP/s: %s", core_prec_name((enum core_prec)m), rc, f, core_err_msg());
    printf("  GEMM %s 1024^3: %.1f TFLOP/s\n", core_prec_name((enum core_prec)m), f / 1e12);
  }
  double f = 1;
  RTT_CHECK(rt_gpu_gemm_rate(0, CORE_PREC_FP32, 0, 8, 8, 1, 1, &f) == CORE_EINVAL && f == 0, "empty GEMM accepted");
  double bw = 0, h2d = 0, d2h = 0;
  CHECK_OK(rt_gpu_dtod_bandwidth(0, 64 << 20, 2, 10, &bw));
  CHECK_OK(rt_gpu_host_bandwidth(0, 64 << 20, 2, 10, &h2d, &d2h));
  RTT_CHECK(bw > 0 && h2d > 0 && d2h > 0, "bandwidths %g %g %g", bw, h2d, d2h);
  printf("  device memory %.0f GB/s, host to device %.1f GB/s, device to host %.1f GB/s\n", bw / 1e9, h2d / 1e9,
      d2h / 1e9);
  return rtt_fails ? 3 : 0;
}

/* The GPU suite's tests skip, saying why, where they cannot run. */
static int gpu_here(int need_nccl, int need_devices) {
  if (ndev < need_devices) {
    test_skip("needs %d CUDA device(s), this machine has %d (%s)", need_devices, ndev, ndev ? "one" : probe_msg);
    return 0;
  }
  if (need_nccl && !NCCL_BUILT) {
    test_skip("this build has no NCCL");
    return 0;
  }
  return 1;
}

static void test_gpu_basics(void) {
  if (gpu_here(0, 1))
    run_children(1, gpu_basics_child, "gpu");
}

/* ---- GPU: one-rank communicators ------------------------------------------- */

static int nccl_one_child(int rank, int size, void *arg) {
  (void)rank, (void)size;
  const job *j = arg;
  rtt_fails = 0;
  const char *algo_before = getenv("NCCL_ALGO");
  char before[256];
  snprintf(before, sizeof before, "%s", algo_before ? algo_before : "(unset)");

  rt_store *s = open_store(j, "-default");
  rt_comm *c = NULL;
  int rc = s ? rt_nccl_connect(s, 0, 1, 0, OP_TIMEOUT_S, &c) : -1;
  RTT_CHECK(rc == 0, "connect: %s", core_err_msg());
  if (rc == 0) {
    RTT_CHECK(strcmp(c->ops->name, "nccl") == 0 && c->rank == 0 && c->size == 1, "comm is %s rank %d of %d",
        c->ops->name, c->rank, c->size);
    RTT_CHECK(rt_nccl_stream(c) != NULL, "no stream");
    coll_checks(c, 0, 1);
    void *d = alloc_guarded(16, RT_FP32);
    rc = rt_allreduce(c, d, 16, RT_FP32, RT_ALGO_RING);
    RTT_CHECK(rc == CORE_EUNSUPPORTED && strstr(core_err_msg(), "rt_nccl_connect_algo"),
        "ring on a default communicator: %d: %s", rc, core_err_msg());
    rc = rt_allreduce(c, d, 16, RT_FP32, RT_ALGO_HALVING_DOUBLING);
    RTT_CHECK(
        rc == CORE_EUNSUPPORTED && strstr(core_err_msg(), "Gloo"), "halving_doubling: %d: %s", rc, core_err_msg());
    /* Rejections are local: the communicator still works. */
    CHECK_OK(rt_allreduce(c, d, 16, RT_FP32, RT_ALGO_DEFAULT));
    CHECK_OK(rt_allreduce(c, d, 0, RT_FP16, RT_ALGO_DEFAULT));
    RTT_CHECK(rt_broadcast(c, d, 16, RT_FP32, 1) == CORE_EINVAL, "root 1 of 1 accepted");
    rt_gpu_free(d);
    rt_comm_destroy(c);
  }
  /* The same prefix cannot serve a second communicator. */
  c = NULL;
  rc = s ? rt_nccl_connect(s, 0, 1, 0, OP_TIMEOUT_S, &c) : -1;
  RTT_CHECK(rc == CORE_EINVAL && strstr(core_err_msg(), "prefix") && !c, "reused prefix: %d: %s", rc, core_err_msg());
  rt_store_close(s);

  /* Abort is local and immediate on a healthy communicator. */
  s = open_store(j, "-abort");
  c = NULL;
  rc = s ? rt_nccl_connect(s, 0, 1, 0, OP_TIMEOUT_S, &c) : -1;
  rt_store_close(s);
  RTT_CHECK(rc == 0, "connect: %s", core_err_msg());
  if (rc == 0) {
    double t0 = rtt_now();
    rt_comm_abort(c);
    RTT_CHECK(rtt_now() - t0 < QUICK_S, "abort took %.1f s", rtt_now() - t0);
  }

  static const enum rt_algo forced[] = {RT_ALGO_RING, RT_ALGO_TREE};
  for (int i = 0; i < 2; i++) {
    s = open_store(j, forced[i] == RT_ALGO_RING ? "-ring" : "-tree");
    c = NULL;
    rc = s ? rt_nccl_connect_algo(s, 0, 1, 0, OP_TIMEOUT_S, forced[i], &c) : -1;
    rt_store_close(s);
    RTT_CHECK(rc == 0, "connect with %s: %s", rt_algo_name(forced[i]), core_err_msg());
    const char *after = getenv("NCCL_ALGO");
    RTT_CHECK(strcmp(before, after ? after : "(unset)") == 0, "NCCL_ALGO left as %s, was %s", after ? after : "(unset)",
        before);
    if (rc)
      continue;
    void *d = alloc_guarded(1000, RT_BF16);
    rt_gpu_pattern p = {3, 13, 0};
    CHECK_OK(rt_gpu_fill(d, 1000, RT_BF16, &p));
    CHECK_OK(rt_allreduce(c, d, 1000, RT_BF16, forced[i]));
    CHECK_OK(rt_allreduce(c, d, 1000, RT_BF16, RT_ALGO_DEFAULT));
    check_data(d, 1000, RT_BF16, &p, rt_algo_name(forced[i]), 0);
    rc = rt_allreduce(c, d, 1000, RT_BF16, forced[1 - i]);
    RTT_CHECK(rc == CORE_EUNSUPPORTED, "%s on a %s communicator: %d", rt_algo_name(forced[1 - i]),
        rt_algo_name(forced[i]), rc);
    rt_gpu_free(d);
    rt_comm_destroy(c);
  }
  return rtt_fails ? 3 : 0;
}

static void test_nccl_one_rank(void) {
  if (gpu_here(1, 1))
    run_children(1, nccl_one_child, "nccl1");
}

/* ---- GPU: two processes through a FileStore ---------------------------------- */

static int nccl_two_child(int rank, int size, void *arg) {
  const job *j = arg;
  rtt_fails = 0;
  int n = 0;
  CHECK_OK(rt_gpu_count(&n));
  int device = n >= 2 ? rank : 0;
  /* NCCL documents two ranks on one device as unsupported ("may lead to
   * hangs"): keep that case's timeout short. */
  double timeout = n >= 2 ? OP_TIMEOUT_S : 15.0;
  rt_store *s = open_store(j, "");
  rt_comm *c = NULL;
  double t0 = rtt_now();
  int rc = s ? rt_nccl_connect(s, rank, size, device, timeout, &c) : -1;
  double took = rtt_now() - t0;
  rt_store_close(s);
  if (n >= 2) {
    RTT_CHECK(rc == 0, "rank %d: connect: %s", rank, core_err_msg());
  } else if (rc != 0) {
    /* One GPU: NCCL refuses two ranks on one device ("Duplicate GPU
     * detected") or hangs. The id went through the store and NCCL's
     * bootstrap ran; either way the end must be a clean error in bounded
     * time (a hang is the timeout path). */
    RTT_CHECK(rc == CORE_ECOMM || rc == CORE_EPEER || rc == CORE_ETIMEDOUT, "rank %d: connect gave %d: %s", rank, rc,
        core_err_msg());
    RTT_CHECK(strstr(core_err_msg(), "NCCL") != NULL, "message: %s", core_err_msg());
    RTT_CHECK(took < timeout + 30.0, "took %.1f s", took);
    printf("  rank %d: two ranks on one GPU refused in %.1f s (%s): %.200s\n", rank, took, core_err_name(rc),
        core_err_msg());
    return rtt_fails ? 3 : 0;
  }
  if (rc == 0) {
    if (n < 2)
      printf("  rank %d: NCCL accepted two ranks on one GPU\n", rank);
    coll_checks(c, rank, size);
    rt_comm_destroy(c);
  }
  return rtt_fails ? 3 : 0;
}

static void test_nccl_two_processes(void) {
  if (gpu_here(1, 1))
    run_children(2, nccl_two_child, "nccl2");
}

/* ---- GPU: hang detection ------------------------------------------------------- */

static int init_timeout_child(int rank, int size, void *arg) {
  (void)rank, (void)size;
  const job *j = arg;
  rtt_fails = 0;
  /* Rank 0 of 2 alone: the id is published, nobody joins, creation never
   * completes. */
  rt_store *s = open_store(j, "-r0");
  rt_comm *c = NULL;
  double t0 = rtt_now();
  int rc = s ? rt_nccl_connect(s, 0, 2, 0, 3.0, &c) : -1;
  double took = rtt_now() - t0;
  rt_store_close(s);
  RTT_CHECK(rc == CORE_ETIMEDOUT && !c, "rank 0 alone: %d: %s", rc, core_err_msg());
  const char *m = core_err_msg();
  RTT_CHECK(strstr(m, "communicator creation") && strstr(m, "rank 0 of 2") && strstr(m, "3 s"), "message: %s", m);
  RTT_CHECK(took >= 2.9 && took < 3.0 + 30.0, "took %.1f s for a 3 s timeout", took);
  printf("  creation alone: CORE_ETIMEDOUT after %.1f s (timeout 3 s)\n", took);

  /* Rank 1 of 2 alone: rank 0's id never comes. */
  s = open_store(j, "-r1");
  t0 = rtt_now();
  rc = s ? rt_nccl_connect(s, 1, 2, 0, 1.0, &c) : -1;
  took = rtt_now() - t0;
  rt_store_close(s);
  RTT_CHECK(rc == CORE_ETIMEDOUT && strstr(core_err_msg(), "unique id"), "rank 1 alone: %d: %s", rc, core_err_msg());
  RTT_CHECK(took >= 0.9 && took < 1.0 + 10.0, "took %.1f s for a 1 s timeout", took);
  return rtt_fails ? 3 : 0;
}

static void test_init_timeout(void) {
  if (gpu_here(1, 1))
    run_children(1, init_timeout_child, "ncclinit");
}

#ifdef DDPSIM_HAVE_NCCL
/* Blocks the communicator's stream as a hung peer would. */
static void CUDART_CB stall_stream(void *arg) {
  (void)arg;
  struct timespec ts = {4, 0};
  nanosleep(&ts, NULL);
}
#endif

static int hung_collective_child(int rank, int size, void *arg) {
  (void)rank, (void)size;
  const job *j = arg;
  rtt_fails = 0;
#ifdef DDPSIM_HAVE_NCCL
  rt_store *s = open_store(j, "");
  rt_comm *c = NULL;
  int rc = s ? rt_nccl_connect(s, 0, 1, 0, 1.0, &c) : -1;
  rt_store_close(s);
  RTT_CHECK(rc == 0, "connect: %s", core_err_msg());
  if (rc)
    return 3;
  void *d = alloc_guarded(1024, RT_FP32);
  const rt_cudart *cu = NULL;
  rc = rt_cudart_load(&cu);
  RTT_CHECK(rc == 0, "loading the CUDA runtime: %s", core_err_msg());
  if (rc)
    return 3;
  cudaError_t e = cu->cudaLaunchHostFunc((cudaStream_t)rt_nccl_stream(c), stall_stream, NULL);
  RTT_CHECK(e == cudaSuccess, "cudaLaunchHostFunc: %s", cu->cudaGetErrorString(e));
  double t0 = rtt_now();
  rc = rt_allreduce(c, d, 1024, RT_FP32, RT_ALGO_DEFAULT);
  double took = rtt_now() - t0;
  const char *m = core_err_msg();
  RTT_CHECK(rc == CORE_ETIMEDOUT && strstr(m, "allreduce") && strstr(m, "rank 0 of 1") && strstr(m, "1 s") &&
                strstr(m, "aborted"),
      "stalled allreduce: %d: %s", rc, m);
  RTT_CHECK(took >= 0.9 && took < 1.0 + 20.0, "took %.1f s for a 1 s timeout", took);
  printf("  stalled allreduce: CORE_ETIMEDOUT after %.1f s (timeout 1 s)\n", took);
  /* Every later call gives the first failure. */
  rc = rt_barrier(c);
  RTT_CHECK(rc == CORE_ETIMEDOUT && strstr(core_err_msg(), "earlier failure"), "after: %d: %s", rc, core_err_msg());
  t0 = rtt_now();
  rt_comm_destroy(c);
  RTT_CHECK(rtt_now() - t0 < 20.0, "destroy after a failure took %.1f s", rtt_now() - t0);
  rt_gpu_free(d);
#else
  (void)j;
#endif
  return rtt_fails ? 3 : 0;
}

static void test_hung_collective(void) {
  if (gpu_here(1, 1))
    run_children(1, hung_collective_child, "nccl-hang");
}

/* Two devices: rank 1 joins the communicator but never calls the
 * collective; rank 0 times out. */
static int absent_peer_child(int rank, int size, void *arg) {
  const job *j = arg;
  rtt_fails = 0;
  rt_store *s = open_store(j, "");
  rt_comm *c = NULL;
  int rc = s ? rt_nccl_connect(s, rank, size, rank, 2.0, &c) : -1;
  rt_store_close(s);
  RTT_CHECK(rc == 0, "rank %d: connect: %s", rank, core_err_msg());
  if (rc)
    return 3;
  void *d = alloc_guarded(1 << 20, RT_FP32);
  if (rank == 0) {
    double t0 = rtt_now();
    rc = rt_allreduce(c, d, 1 << 20, RT_FP32, RT_ALGO_DEFAULT);
    double took = rtt_now() - t0;
    RTT_CHECK(rc == CORE_ETIMEDOUT || rc == CORE_EPEER, "rank 0: %d: %s", rc, core_err_msg());
    RTT_CHECK(took < 2.0 + 20.0, "took %.1f s", took);
  } else {
    struct timespec ts = {5, 0};
    nanosleep(&ts, NULL);
  }
  rt_comm_destroy(c);
  rt_gpu_free(d);
  return rtt_fails ? 3 : 0;
}

static void test_absent_peer(void) {
  if (gpu_here(1, 2))
    run_children(2, absent_peer_child, "nccl-absent");
}

/* ---- figures (DDPSIM_GPU_FIGURES=1) ------------------------------------------ */

static int figures_child(int rank, int size, void *arg) {
  (void)rank, (void)size;
  const job *j = arg;
  rtt_fails = 0;
  rt_gpu_info info;
  CHECK_OK(rt_gpu_get_info(0, &info));
  printf("\n  device 0: %s, cc %d.%d, %d SMs, %.0f GiB\n", info.name, info.cc_major, info.cc_minor, info.sm_count,
      (double)info.total_mem / (1 << 30));
  printf("  %-6s %8s %12s\n", "GEMM", "m=n=k", "TFLOP/s");
  static const int sizes[] = {1024, 4096, 8192};
  for (int m = 0; m < CORE_N_PREC; m++)
    for (int k = 0; k < 3; k++) {
      double f = 0;
      int rc = rt_gpu_gemm_rate(0, (enum core_prec)m, sizes[k], sizes[k], sizes[k], 3, 10, &f);
      if (rc)
        printf("  %-6s %8d %12s  (%s)\n", core_prec_name((enum core_prec)m), sizes[k], "-", core_err_msg());
      else
        printf("  %-6s %8d %12.1f\n", core_prec_name((enum core_prec)m), sizes[k], f / 1e12);
    }
  double bw = 0, h2d = 0, d2h = 0;
  CHECK_OK(rt_gpu_dtod_bandwidth(0, 256 << 20, 3, 20, &bw));
  CHECK_OK(rt_gpu_host_bandwidth(0, 256 << 20, 2, 10, &h2d, &d2h));
  printf("  device memory (read+write) %.0f GB/s; pinned host->device %.1f GB/s, "
         "device->host %.1f GB/s\n",
      bw / 1e9, h2d / 1e9, d2h / 1e9);

  if (!NCCL_BUILT) {
    printf("  NCCL backend not built: no allreduce figures\n");
    return rtt_fails ? 3 : 0;
  }
  rt_store *s = open_store(j, "");
  rt_comm *c = NULL;
  int rc = s ? rt_nccl_connect(s, 0, 1, 0, OP_TIMEOUT_S, &c) : -1;
  rt_store_close(s);
  RTT_CHECK(rc == 0, "connect: %s", core_err_msg());
  if (rc)
    return 3;
  int ver = 0;
  rt_nccl_version(&ver);
  /* busbw = algbw · 2(p-1)/p, which is 0 for one rank (nccl-tests prints
   * the same); the time is NCCL's one-rank launch and copy cost. */
  printf("  NCCL %d allreduce, 1 rank (fp32, in place; busbw factor 2(p-1)/p = 0)\n", ver);
  printf("  %12s %10s %10s %10s\n", "bytes", "time us", "algbw GB/s", "busbw GB/s");
  void *d = NULL;
  size_t maxb = (size_t)256 << 20;
  CHECK_OK(rt_gpu_alloc(maxb, &d));
  CHECK_OK(rt_gpu_memset(d, 0, maxb));
  static const size_t bytes[] = {8, 128, 2048, 32768, 1 << 19, 8 << 20, 64 << 20, 256 << 20};
  for (size_t k = 0; d && k < sizeof bytes / sizeof bytes[0]; k++) {
    size_t b = bytes[k], cnt = b / 4;
    int iters = b >= ((size_t)16 << 20) ? 20 : 100;
    for (int i = 0; i < 5; i++)
      CHECK_OK(rt_allreduce(c, d, cnt, RT_FP32, RT_ALGO_DEFAULT));
    double t0 = rtt_now();
    for (int i = 0; i < iters; i++)
      CHECK_OK(rt_allreduce(c, d, cnt, RT_FP32, RT_ALGO_DEFAULT));
    double t = (rtt_now() - t0) / iters;
    printf("  %12zu %10.1f %10.2f %10.2f\n", b, t * 1e6, (double)b / t / 1e9, 0.0);
  }
  rt_gpu_free(d);
  rt_comm_destroy(c);
  return rtt_fails ? 3 : 0;
}

static void test_figures(void) {
  if (gpu_here(0, 1))
    run_children(1, figures_child, "figures");
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("nccl", suite_init, NULL);
  CU_add_test(s, "device probe (in a child)", test_probe);
  s = CU_add_suite("no device", suite_init, NULL);
  CU_add_test(s, "no GPU: every gpu.h function is CORE_EUNSUPPORTED", test_no_gpu_functions);
  CU_add_test(s, "no GPU: rt_nccl_connect is CORE_EUNSUPPORTED, quickly", test_no_gpu_nccl);
  s = CU_add_suite("gpu", suite_init, NULL);
  CU_add_test(s, "GPU: devices, buffers, patterns, GEMMs, bandwidth", test_gpu_basics);
  CU_add_test(s, "GPU: one-rank NCCL collectives and algorithms", test_nccl_one_rank);
  CU_add_test(s, "GPU: two processes through a FileStore", test_nccl_two_processes);
  CU_add_test(s, "GPU: creation nobody joins times out and aborts", test_init_timeout);
  CU_add_test(s, "GPU: a stalled collective times out and aborts", test_hung_collective);
  CU_add_test(s, "GPU: a peer that skips the collective (2 devices)", test_absent_peer);
  const char *fig = getenv("DDPSIM_GPU_FIGURES");
  if (fig && strcmp(fig, "1") == 0) {
    CU_pSuite f = CU_add_suite("figures", suite_init, NULL);
    CU_add_test(f, "GEMM TFLOP/s, bandwidths, NCCL one-GPU allreduce", test_figures);
  }
}

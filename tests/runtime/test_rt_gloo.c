/* The Gloo backend's collectives, run by real ranks: forked processes that
 * rendezvous through a FileStore in a fresh directory and talk over loopback
 * TCP. Values are small integers, exact in fp16, so every sum is checked
 * for equality. Each rank checks its own results and reports failures
 * through its exit status. */
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "runtime/comm.h"
#include "runtime/gloo.h"
#include "runtime/pg.h"
#include "rtt.h"

/* Long enough for the ASan build on a loaded 2-core machine; a hang still
 * ends here instead of at ctest's timeout. */
#define RANK_DEADLINE_S 60.0
#define OP_TIMEOUT_S 30.0

typedef struct job {
  char dir[512];
  char prefix[128];
  int (*body)(rt_comm *c, int rank, int size, const struct job *j);
  int64_t t0_ns;
} job;

/* Each rank: connect through the process group, run the body, disconnect. */
static int rank_main(int rank, int size, void *arg) {
  const job *j = arg;
  rt_pg_info in = rtt_pg_local(rank, size);
  rt_comm *c = NULL;
  int rc = rt_pg_connect(&in, j->dir, NULL, OP_TIMEOUT_S, j->prefix, &c);
  if (rc) {
    fprintf(stderr, "rank %d: connect: %s\n", rank, core_err_msg());
    return 2;
  }
  rtt_fails = 0;
  RTT_CHECK(strcmp(c->ops->name, "gloo") == 0, "backend name %s", c->ops->name);
  RTT_CHECK(c->rank == rank && c->size == size, "comm says rank %d of %d", c->rank, c->size);
  int body = j->body(c, rank, size, j);
  rt_comm_destroy(c);
  return body ? body : (rtt_fails ? 3 : 0);
}

static void run_job(int size, int (*body)(rt_comm *, int, int, const job *)) {
  job j;
  memset(&j, 0, sizeof j);
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(j.dir, sizeof j.dir), 0);
  rtt_prefix(j.prefix, sizeof j.prefix, "coll");
  j.body = body;
  j.t0_ns = rtt_now_ns();
  CU_ASSERT(rtt_run(size, rank_main, &j, RANK_DEADLINE_S));
  rtt_rmdir(j.dir);
}

/* ---- values ------------------------------------------------------------ */

static void put(void *buf, enum rt_dtype t, size_t i, int v) {
  if (t == RT_FP32)
    ((float *)buf)[i] = (float)v;
  else
    ((uint16_t *)buf)[i] = rtt_half(v); /* bf16 only moves bytes in these tests */
}

static double get(const void *buf, enum rt_dtype t, size_t i) {
  if (t == RT_FP32)
    return ((const float *)buf)[i];
  return rtt_half_value(((const uint16_t *)buf)[i]);
}

/* A buffer of n elements followed by guard elements the collective must
 * leave alone. */
enum { GUARD = 8, GUARD_VALUE = -77 };

static void *alloc_guarded(size_t n, enum rt_dtype t) {
  void *b = calloc(n + GUARD, rt_dtype_size(t));
  if (b)
    for (size_t i = 0; i < GUARD; i++)
      put(b, t, n + i, GUARD_VALUE);
  return b;
}

static int guard_intact(const void *b, size_t n, enum rt_dtype t) {
  for (size_t i = 0; i < GUARD; i++)
    if (get(b, t, n + i) != GUARD_VALUE)
      return 0;
  return 1;
}

/* ---- allreduce --------------------------------------------------------- */

static const size_t ar_counts[] = {1, 2, 3, 5, 7, 1000, 1023, 300007};

/* Rank r contributes (r+1) * (i%13 + 1): the sum is S * (i%13 + 1) with
 * S = size(size+1)/2, at most 10 * 13 = 130 for 4 ranks, exact in fp16. */
static int allreduce_body(rt_comm *c, int rank, int size, const job *j) {
  (void)j;
  const int s = size * (size + 1) / 2;
  for (int a = RT_ALGO_DEFAULT; a <= RT_ALGO_BCUBE; a++) {
    for (int t = RT_FP32; t <= RT_FP16; t++) {
      for (size_t k = 0; k < sizeof ar_counts / sizeof ar_counts[0]; k++) {
        size_t n = ar_counts[k];
        void *b = alloc_guarded(n, (enum rt_dtype)t);
        if (!b)
          return 4;
        for (size_t i = 0; i < n; i++)
          put(b, (enum rt_dtype)t, i, (rank + 1) * (int)(i % 13 + 1));
        int rc = rt_allreduce(c, b, n, (enum rt_dtype)t, (enum rt_algo)a);
        const char *an = rt_algo_name((enum rt_algo)a), *tn = rt_dtype_name((enum rt_dtype)t);
        if (a == RT_ALGO_BCUBE && size > 1 && size % 2 != 0) {
          /* Gloo's AllreduceBcube needs a world size divisible by its base
           * (2) and returns wrong sums otherwise: refused. */
          RTT_CHECK(rc == CORE_EUNSUPPORTED, "bcube on %d ranks gave %d: %s", size, rc, core_err_msg());
          RTT_CHECK(strstr(core_err_msg(), "bcube") != NULL, "message: %s", core_err_msg());
          free(b);
          continue;
        }
        RTT_CHECK(rc == 0, "allreduce %s %s n=%zu: %s", an, tn, n, core_err_msg());
        if (rc) {
          free(b);
          return 5; /* the communicator is unusable now */
        }
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++) {
          if (get(b, (enum rt_dtype)t, i) != (double)(s * (int)(i % 13 + 1))) {
            if (!bad++)
              first = i;
          }
        }
        RTT_CHECK(bad == 0, "allreduce %s %s n=%zu: %zu wrong, first [%zu] = %g, want %d", an, tn, n, bad, first,
            get(b, (enum rt_dtype)t, first), s * (int)(first % 13 + 1));
        RTT_CHECK(guard_intact(b, n, (enum rt_dtype)t), "allreduce %s %s n=%zu wrote past the end", an, tn, n);
        free(b);
      }
    }
  }
  /* count 0 is a no-op; unsupported requests fail the same on every rank
   * without communicating, and leave the communicator usable. */
  float x = (float)(rank + 1);
  RTT_CHECK(rt_allreduce(c, &x, 0, RT_FP32, RT_ALGO_RING) == 0, "count 0: %s", core_err_msg());
  RTT_CHECK(rt_allreduce(c, &x, 1, RT_FP32, RT_ALGO_TREE) == CORE_EUNSUPPORTED, "tree accepted");
  RTT_CHECK(strstr(core_err_msg(), "tree") && strstr(core_err_msg(), "NCCL"), "tree msg: %s", core_err_msg());
  uint16_t h = 0;
  /* bf16 reduces with the default algorithm only (test_rt_compress checks its sums). */
  RTT_CHECK(rt_allreduce(c, &h, 1, RT_BF16, RT_ALGO_RING) == CORE_EUNSUPPORTED, "bf16 ring accepted");
  RTT_CHECK(strstr(core_err_msg(), "bf16") != NULL, "bf16 msg: %s", core_err_msg());
  RTT_CHECK(rt_allreduce(c, &x, 1, RT_FP32, RT_ALGO_DEFAULT) == 0, "after rejects: %s", core_err_msg());
  RTT_CHECK(x == (float)s, "after rejects: %g", x);
  return 0;
}

/* ---- allgather, reduce-scatter, broadcast, barrier ---------------------- */

static int allgather_body(rt_comm *c, int rank, int size, const job *j) {
  (void)j;
  static const size_t counts[] = {1, 5, 1000};
  for (int t = RT_FP32; t <= RT_BF16; t++) {
    for (size_t k = 0; k < 3; k++) {
      size_t n = counts[k], total = n * (size_t)size;
      void *send = alloc_guarded(n, (enum rt_dtype)t);
      void *recv = alloc_guarded(total, (enum rt_dtype)t);
      if (!send || !recv)
        return 4;
      for (size_t i = 0; i < n; i++)
        put(send, (enum rt_dtype)t, i, rank * 100 + (int)(i % 100));
      int rc = rt_allgather(c, send, recv, n, (enum rt_dtype)t);
      RTT_CHECK(rc == 0, "allgather %s n=%zu: %s", rt_dtype_name((enum rt_dtype)t), n, core_err_msg());
      if (rc)
        return 5;
      for (int r = 0; r < size; r++)
        for (size_t i = 0; i < n; i++) {
          double got = get(recv, (enum rt_dtype)t, (size_t)r * n + i);
          RTT_CHECK(got == r * 100 + (int)(i % 100), "allgather %s n=%zu: [%d][%zu] = %g",
              rt_dtype_name((enum rt_dtype)t), n, r, i, got);
        }
      RTT_CHECK(guard_intact(recv, total, (enum rt_dtype)t), "allgather wrote past the end");

      /* In place: send is this rank's block of recv. */
      size_t es = rt_dtype_size((enum rt_dtype)t);
      memset(recv, 0, total * es);
      memcpy((char *)recv + (size_t)rank * n * es, send, n * es);
      rc = rt_allgather(c, (char *)recv + (size_t)rank * n * es, recv, n, (enum rt_dtype)t);
      RTT_CHECK(rc == 0, "in-place allgather %s n=%zu: %s", rt_dtype_name((enum rt_dtype)t), n, core_err_msg());
      if (rc)
        return 5;
      for (int r = 0; r < size; r++)
        for (size_t i = 0; i < n; i++) {
          double got = get(recv, (enum rt_dtype)t, (size_t)r * n + i);
          RTT_CHECK(got == r * 100 + (int)(i % 100), "in-place allgather %s n=%zu: [%d][%zu] = %g",
              rt_dtype_name((enum rt_dtype)t), n, r, i, got);
        }
      free(send);
      free(recv);
    }
  }
  return 0;
}

/* Rank q's block b, element i: (q+1)(b+1) + i%5. Rank r receives
 * sum_q ((q+1)(r+1) + i%5) = S(r+1) + size*(i%5). */
static int reduce_scatter_body(rt_comm *c, int rank, int size, const job *j) {
  (void)j;
  static const size_t counts[] = {1, 3, 1000};
  const int s = size * (size + 1) / 2;
  for (int t = RT_FP32; t <= RT_FP16; t++) {
    for (size_t k = 0; k < 3; k++) {
      size_t n = counts[k], total = n * (size_t)size;
      void *send = alloc_guarded(total, (enum rt_dtype)t);
      void *recv = alloc_guarded(n, (enum rt_dtype)t);
      if (!send || !recv)
        return 4;
      for (int b = 0; b < size; b++)
        for (size_t i = 0; i < n; i++)
          put(send, (enum rt_dtype)t, (size_t)b * n + i, (rank + 1) * (b + 1) + (int)(i % 5));
      int rc = rt_reduce_scatter(c, send, recv, n, (enum rt_dtype)t);
      RTT_CHECK(rc == 0, "reduce_scatter %s n=%zu: %s", rt_dtype_name((enum rt_dtype)t), n, core_err_msg());
      if (rc)
        return 5;
      for (size_t i = 0; i < n; i++) {
        double got = get(recv, (enum rt_dtype)t, i);
        double want = s * (rank + 1) + size * (int)(i % 5);
        RTT_CHECK(got == want, "reduce_scatter %s n=%zu: [%zu] = %g, want %g", rt_dtype_name((enum rt_dtype)t), n, i,
            got, want);
      }
      /* send is input only. */
      RTT_CHECK(get(send, (enum rt_dtype)t, 0) == rank + 1, "reduce_scatter changed send");
      RTT_CHECK(guard_intact(recv, n, (enum rt_dtype)t), "reduce_scatter wrote past the end");
      free(send);
      free(recv);
    }
  }
  uint16_t h[RTT_MAX_RANKS] = {0};
  RTT_CHECK(rt_reduce_scatter(c, h, h, 1, RT_BF16) == CORE_EUNSUPPORTED, "bf16 reduce_scatter");
  return 0;
}

static int broadcast_body(rt_comm *c, int rank, int size, const job *j) {
  (void)j;
  const int roots[] = {size - 1, 1 % size};
  static const size_t counts[] = {1, 1000};
  for (int ri = 0; ri < 2; ri++) {
    int root = roots[ri];
    for (int t = RT_FP32; t <= RT_FP16; t++) {
      for (size_t k = 0; k < 2; k++) {
        size_t n = counts[k];
        void *b = alloc_guarded(n, (enum rt_dtype)t);
        if (!b)
          return 4;
        for (size_t i = 0; i < n; i++)
          put(b, (enum rt_dtype)t, i, rank == root ? root * 10 + (int)(i % 50) : -1);
        int rc = rt_broadcast(c, b, n, (enum rt_dtype)t, root);
        RTT_CHECK(rc == 0, "broadcast from %d %s n=%zu: %s", root, rt_dtype_name((enum rt_dtype)t), n, core_err_msg());
        if (rc)
          return 5;
        for (size_t i = 0; i < n; i++) {
          double got = get(b, (enum rt_dtype)t, i);
          RTT_CHECK(got == root * 10 + (int)(i % 50), "broadcast from %d: [%zu] = %g", root, i, got);
        }
        RTT_CHECK(guard_intact(b, n, (enum rt_dtype)t), "broadcast wrote past the end");
        free(b);
      }
    }
  }
  float x = 0;
  RTT_CHECK(rt_broadcast(c, &x, 1, RT_FP32, size) == CORE_EINVAL, "root %d accepted", size);
  RTT_CHECK(rt_broadcast(c, &x, 1, RT_FP32, -1) == CORE_EINVAL, "root -1 accepted");
  return 0;
}

/* Rank r arrives r * STEP late; nobody may leave before the last arrived. */
#define BARRIER_STEP_MS 150
static int barrier_body(rt_comm *c, int rank, int size, const job *j) {
  (void)j;
  int rc = rt_barrier(c);
  RTT_CHECK(rc == 0, "first barrier: %s", core_err_msg());
  if (rc)
    return 5;
  int64_t t1 = rtt_now_ns();
  struct timespec ts = {0, (long)rank * BARRIER_STEP_MS * 1000000L};
  nanosleep(&ts, NULL);
  rc = rt_barrier(c);
  RTT_CHECK(rc == 0, "second barrier: %s", core_err_msg());
  double waited_ms = (double)(rtt_now_ns() - t1) / 1e6;
  /* Ranks leave the first barrier a little apart; allow 50 ms of that. */
  RTT_CHECK(waited_ms >= (size - 1) * BARRIER_STEP_MS - 50,
      "rank %d left the barrier after %.0f "
      "ms, before the last rank (%d ms late) arrived",
      rank, waited_ms, (size - 1) * BARRIER_STEP_MS);
  return 0;
}

/* ---- tests ------------------------------------------------------------- */

static void test_allreduce_1(void) { run_job(1, allreduce_body); }
static void test_allreduce_2(void) { run_job(2, allreduce_body); }
static void test_allreduce_3(void) { run_job(3, allreduce_body); }
static void test_allreduce_4(void) { run_job(4, allreduce_body); }
static void test_allgather_2(void) { run_job(2, allgather_body); }
static void test_allgather_3(void) { run_job(3, allgather_body); }
static void test_allgather_4(void) { run_job(4, allgather_body); }
static void test_reduce_scatter_2(void) { run_job(2, reduce_scatter_body); }
static void test_reduce_scatter_3(void) { run_job(3, reduce_scatter_body); }
static void test_reduce_scatter_4(void) { run_job(4, reduce_scatter_body); }
static void test_broadcast_2(void) { run_job(2, broadcast_body); }
static void test_broadcast_3(void) { run_job(3, broadcast_body); }
static void test_broadcast_4(void) { run_job(4, broadcast_body); }
static void test_barrier_2(void) { run_job(2, barrier_body); }
static void test_barrier_3(void) { run_job(3, barrier_body); }
static void test_barrier_4(void) { run_job(4, barrier_body); }

void test_register(void) {
  CU_pSuite s = CU_add_suite("allreduce", NULL, NULL);
  CU_add_test(s, "every algorithm x fp32/fp16, 1 rank", test_allreduce_1);
  CU_add_test(s, "every algorithm x fp32/fp16, 2 ranks", test_allreduce_2);
  CU_add_test(s, "every algorithm x fp32/fp16, 3 ranks", test_allreduce_3);
  CU_add_test(s, "every algorithm x fp32/fp16, 4 ranks", test_allreduce_4);
  s = CU_add_suite("allgather", NULL, NULL);
  CU_add_test(s, "fp32/fp16/bf16, 2 ranks", test_allgather_2);
  CU_add_test(s, "fp32/fp16/bf16, 3 ranks", test_allgather_3);
  CU_add_test(s, "fp32/fp16/bf16, 4 ranks", test_allgather_4);
  s = CU_add_suite("reduce_scatter", NULL, NULL);
  CU_add_test(s, "fp32/fp16, 2 ranks", test_reduce_scatter_2);
  CU_add_test(s, "fp32/fp16, 3 ranks", test_reduce_scatter_3);
  CU_add_test(s, "fp32/fp16, 4 ranks", test_reduce_scatter_4);
  s = CU_add_suite("broadcast", NULL, NULL);
  CU_add_test(s, "from non-zero roots, 2 ranks", test_broadcast_2);
  CU_add_test(s, "from non-zero roots, 3 ranks", test_broadcast_3);
  CU_add_test(s, "from non-zero roots, 4 ranks", test_broadcast_4);
  s = CU_add_suite("barrier", NULL, NULL);
  CU_add_test(s, "waits for the last rank, 2 ranks", test_barrier_2);
  CU_add_test(s, "waits for the last rank, 3 ranks", test_barrier_3);
  CU_add_test(s, "waits for the last rank, 4 ranks", test_barrier_4);
}

/* calibrate's NCCL path and the generalized sweep loop (calibrate/sweep.h).
 *
 *   sweep: the host buffer table writes and checks exactly the values the
 *   loop always used (rank r's element i is r + 1 + i % 7), so the Gloo
 *   path's data and results are unchanged: two forked ranks over Gloo run
 *   every operation through the table the backend picks and through
 *   cal_host_bufs named explicitly, with the same sizes, point counts and
 *   iteration bounds, data checked every iteration; a communicator that
 *   corrupts results is caught with the loop's message; a size whose first
 *   pass stalls keeps its second pass's time; control values (allgather,
 *   broadcast, max over ranks) cross ranks intact. The device
 *   table without a device fails cleanly (CORE_EUNSUPPORTED) on every rank,
 *   before any collective, so no rank waits on another.
 *
 *   cli: `ddpsim calibrate --backend nccl` without a device (or in a build
 *   without CUDA/NCCL) exits 5 at once with a clear message and writes
 *   nothing; with a device it runs --quick on one GPU and writes a profile
 *   with GPU compute rates, bandwidths and a jitter fit; each rank's
 *   calibration gradient is its first training step's.
 *
 * CUDA is only ever touched in children (a process that has used CUDA must
 * not fork children that use it; runtime/gpu.h). */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cunit_skip.h"
#include "calibrate/compute.h"
#include "calibrate/sweep.h"
#include "core/err.h"
#include "core/model.h"
#include "core/profile.h"
#include "runtime/comm.h"
#include "runtime/gpu.h"
#include "runtime/mlp.h"
#include "runtime/pg.h"
#include "rtt.h"

/* Long enough for the ASan build on a loaded 2-core machine; a hang still
 * ends here instead of at ctest's timeout. */
#define RANK_DEADLINE_S 120.0
#define OP_TIMEOUT_S 30.0
/* "At once": CUDA's start-up without a driver takes well under a second. */
#define NO_DEVICE_DEADLINE_S 30.0
/* One GPU, --quick (sweeps to 32 MiB, GEMMs, jitter, interference). */
#define GPU_RUN_DEADLINE_S 300.0

/* The loop's values before the buffer tables existed (calibrate/sweep.c). */
static float legacy_value(int rank, size_t i) { return (float)(rank + 1 + (int)(i % 7)); }

/* ---- the device probe -------------------------------------------------------- */

static int ndev = -1; /* > 0 devices, 0 none, -1 the probe failed */
static char probe_msg[768];

static int suite_init(void) {
  int code;
  if (ndev < 0)
    ndev = rtt_gpu_probe(RANK_DEADLINE_S, &code, probe_msg, sizeof probe_msg);
  return 0;
}

/* ---- the host table ------------------------------------------------------------ */

static void test_host_table_values(void) {
  const cal_buf_ops *h = &cal_host_bufs;
  enum { N = 1000, P = 3 };
  float *b = NULL;
  CU_ASSERT_EQUAL_FATAL(h->alloc(sizeof(float) * (N + 64), (void **)&b), 0);
  CU_ASSERT_STRING_EQUAL(h->name, "host");
  CU_ASSERT(h->host_visible);

  /* One rank's contribution, from element 0 and from a later element. */
  for (int r = 0; r < P; r++) {
    cal_data d = {.kind = CAL_DATA_RANK, .rank = r};
    CU_ASSERT_EQUAL(h->fill(b, N, &d), 0);
    int same = 1;
    for (size_t i = 0; i < N; i++)
      same &= b[i] == legacy_value(r, i);
    CU_ASSERT(same);
    CU_ASSERT_EQUAL(h->check(b, N, &d), 0);
  }
  cal_data late = {.kind = CAL_DATA_RANK, .rank = 1, .first = 12345};
  CU_ASSERT_EQUAL(h->fill(b, N, &late), 0);
  CU_ASSERT(b[0] == legacy_value(1, 12345) && b[N - 1] == legacy_value(1, 12345 + N - 1));

  /* The sum over P ranks, as the old allreduce and reduce-scatter checks
   * computed it (in double, then rounded). */
  for (size_t i = 0; i < N; i++) {
    double s = 0;
    for (int r = 0; r < P; r++)
      s += legacy_value(r, 500 + i);
    b[i] = (float)s;
  }
  cal_data sum = {.kind = CAL_DATA_SUM, .ranks = P, .first = 500};
  CU_ASSERT_EQUAL(h->check(b, N, &sum), 0);

  /* A wrong element: CORE_ECORRUPT, phrased as the old message's tail. */
  b[17] += 1.0f;
  CU_ASSERT_EQUAL(h->check(b, N, &sum), CORE_ECORRUPT);
  char want[128];
  snprintf(want, sizeof want, "at element 17 (%g, expected %g)", b[17], b[17] - 1.0f);
  CU_ASSERT_STRING_EQUAL(core_err_msg(), want);

  /* An allgather's output: block r is rank r's contribution from 0. */
  cal_data blocks = {.kind = CAL_DATA_BLOCKS, .ranks = 4, .block = 250};
  CU_ASSERT_EQUAL(h->fill(b, N, &blocks), 0);
  int same = 1;
  for (size_t i = 0; i < N; i++)
    same &= b[i] == legacy_value((int)(i / 250), i % 250);
  CU_ASSERT(same);
  CU_ASSERT_EQUAL(h->check(b, N, &blocks), 0);

  /* Constants: a broadcast's non-root (-1), a cleared output (0). */
  cal_data minus = {.kind = CAL_DATA_CONST, .value = -1.0f}, zero = {.kind = CAL_DATA_CONST};
  CU_ASSERT_EQUAL(h->fill(b, N, &minus), 0);
  CU_ASSERT(b[0] == -1.0f && b[N - 1] == -1.0f);
  CU_ASSERT_EQUAL(h->check(b, N, &minus), 0);
  CU_ASSERT_EQUAL(h->fill(b, N, &zero), 0);
  CU_ASSERT(b[0] == 0.0f && b[N - 1] == 0.0f);

  /* Offsets move by fp32 elements; control copies are plain. */
  CU_ASSERT_PTR_EQUAL(h->offset(b, 16), b + 16);
  double x = 3.25, y = 0;
  CU_ASSERT_EQUAL(h->put(b, &x, sizeof x), 0);
  CU_ASSERT_EQUAL(h->get(&y, b, sizeof y), 0);
  CU_ASSERT(y == 3.25);
  h->free(b);
  h->free(NULL);
}

/* An rt_comm whose ops only carry a name: which table a backend gets. */
static void test_table_choice(void) {
  static const rt_comm_ops gloo_like = {.name = "gloo"}, nccl_like = {.name = "nccl"};
  rt_comm g = {.ops = &gloo_like}, n = {.ops = &nccl_like};
  CU_ASSERT_PTR_EQUAL(cal_bufs_for(&g), &cal_host_bufs);
  CU_ASSERT_PTR_EQUAL(cal_bufs_for(&n), &cal_device_bufs);
  CU_ASSERT_PTR_EQUAL(cal_bufs_for(NULL), &cal_host_bufs);
  CU_ASSERT_STRING_EQUAL(cal_device_bufs.name, "device");
  CU_ASSERT(!cal_device_bufs.host_visible);
}

/* ---- two ranks over Gloo ----------------------------------------------------------- */

typedef struct job {
  char dir[512];
  char prefix[128];
  int (*body)(rt_comm *c, int rank, int size);
} job;

static const job *cur_job; /* the running job, for bodies that connect again */

static int rank_main(int rank, int size, void *arg) {
  const job *j = arg;
  cur_job = j;
  rt_pg_info in = rtt_pg_local(rank, size);
  rt_comm *c = NULL;
  if (rt_pg_connect(&in, j->dir, NULL, OP_TIMEOUT_S, j->prefix, &c) != 0) {
    fprintf(stderr, "rank %d: connect: %s\n", rank, core_err_msg());
    return 2;
  }
  rtt_fails = 0;
  int body = j->body(c, rank, size);
  if (body || rtt_fails)
    rt_comm_abort(c);
  else
    rt_comm_destroy(c);
  return body ? body : (rtt_fails ? 3 : 0);
}

static void run_job(int size, int (*body)(rt_comm *, int, int)) {
  job j;
  memset(&j, 0, sizeof j);
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(j.dir, sizeof j.dir), 0);
  rtt_prefix(j.prefix, sizeof j.prefix, "calsweep");
  j.body = body;
  CU_ASSERT(rtt_run(size, rank_main, &j, RANK_DEADLINE_S));
  rtt_rmdir(j.dir);
}

/* nccl-tests' S of a point, as the loop has always counted it. */
static double legacy_bytes(enum core_coll op, double bytes, int p) {
  size_t n = (size_t)(bytes / sizeof(float));
  if (n < (size_t)p)
    n = (size_t)p;
  if (op == CORE_COLL_ALLGATHER || op == CORE_COLL_REDUCESCATTER)
    n = n / (size_t)p * (size_t)p;
  return (double)n * sizeof(float);
}

static void check_points(
    enum core_coll op, const cal_sweep_opts *o, const cal_point *pts, int n, int p, const char *what) {
  int want = 0;
  for (double b = o->min_bytes; b <= o->max_bytes * 1.0000001; b *= o->factor)
    want++;
  RTT_CHECK(n == want, "%s %s: %d points, expected %d", what, core_coll_name(op), n, want);
  double b = o->min_bytes;
  for (int k = 0; k < n && k < want; k++, b *= o->factor) {
    const cal_point *t = &pts[k];
    RTT_CHECK(t->bytes == legacy_bytes(op, b, p), "%s %s point %d: %g bytes, expected %g", what, core_coll_name(op), k,
        t->bytes, legacy_bytes(op, b, p));
    RTT_CHECK(t->iters >= o->min_iters && t->iters <= o->max_iters, "%s %s point %d: %d iterations", what,
        core_coll_name(op), k, t->iters);
    RTT_CHECK(t->t_min_s > 0 && t->t_min_s <= t->t_p50_s && t->t_p50_s <= t->t_max_s, "%s %s point %d: times %g %g %g",
        what, core_coll_name(op), k, t->t_min_s, t->t_p50_s, t->t_max_s);
    RTT_CHECK(t->t_se_s >= 0, "%s: negative standard error", what);
    RTT_CHECK(
        fabs(t->algbw_GBps - t->bytes / t->t_p50_s / 1e9) <= 1e-9 * t->algbw_GBps, "%s: algbw is not S / t", what);
    RTT_CHECK(fabs(t->busbw_GBps - t->algbw_GBps * core_coll_busbw_factor(op, p)) <= 1e-9 * t->algbw_GBps,
        "%s: busbw is not algbw times nccl-tests' factor", what);
  }
}

static int sweep_body(rt_comm *c, int rank, int size) {
  (void)rank;
  RTT_CHECK(cal_bufs_for(c) == &cal_host_bufs, "Gloo got the %s table", cal_bufs_for(c)->name);
  /* To 1 MiB: past 128 KiB, where Gloo's own reduce-scatter went wrong
   * (runtime/gloo_shim.cc no longer uses it). */
  cal_sweep_opts o = {
      .min_bytes = 8, .max_bytes = 1 << 20, .factor = 2, .warmup = 1, .min_iters = 2, .max_iters = 4, .budget_s = 0};
  for (int op = 0; op < CORE_N_COLLS; op++) {
    for (int named = 0; named < 2; named++) {
      cal_sweep_opts s = o;
      s.bufs = named ? &cal_host_bufs : NULL;
      cal_point *pts = NULL;
      int n = 0;
      int rc = cal_sweep_run(c, (enum core_coll)op, RT_ALGO_DEFAULT, &s, &pts, &n);
      RTT_CHECK(rc == 0, "%s sweep (%s table): %s", core_coll_name((enum core_coll)op),
          named ? "named host" : "backend's", core_err_msg());
      if (rc == 0)
        check_points((enum core_coll)op, &s, pts, n, size, named ? "named host table" : "backend's table");
      free(pts);
      if (rc)
        return 4;
    }
  }
  /* The benchmark's entry point: the same loop, one size. */
  cal_point pt;
  int rc = cal_sweep_one(c, CORE_COLL_ALLREDUCE, RT_ALGO_RING, 4096, 1, 3, &pt);
  RTT_CHECK(rc == 0 && pt.iters == 3 && pt.bytes == 4096, "cal_sweep_one: rc %d, %d iterations, %g bytes", rc, pt.iters,
      pt.bytes);

  /* Data, by hand, through the table: an allreduce of every rank's
   * contribution is the legacy sum. */
  enum { N = 777 };
  float *b = NULL;
  if (cal_host_bufs.alloc(sizeof(float) * N, (void **)&b) != 0)
    return 5;
  cal_data mine = {.kind = CAL_DATA_RANK, .rank = c->rank}, sum = {.kind = CAL_DATA_SUM, .ranks = size};
  RTT_CHECK(cal_host_bufs.fill(b, N, &mine) == 0, "fill");
  RTT_CHECK(rt_allreduce(c, b, N, RT_FP32, RT_ALGO_DEFAULT) == 0, "allreduce: %s", core_err_msg());
  RTT_CHECK(cal_host_bufs.check(b, N, &sum) == 0, "sum check: %s", core_err_msg());
  int same = 1;
  for (size_t i = 0; i < N; i++) {
    double s = 0;
    for (int r = 0; r < size; r++)
      s += legacy_value(r, i);
    same &= b[i] == (float)s;
  }
  RTT_CHECK(same, "the allreduced buffer differs from the legacy sum");
  cal_host_bufs.free(b);
  return 0;
}

static void test_host_sweeps(void) { run_job(2, sweep_body); }

/* A communicator that delegates to another and counts what it is asked;
 * it sleeps stall_s before each of the first stall_left allreduces of
 * stall_n elements. */
typedef struct counted {
  rt_comm *in;
  int allreduce, allgather, broadcast, barrier;
  size_t stall_n;
  int stall_left;
  double stall_s;
} counted;
static counted *cnt(rt_comm *c) { return c->impl; }
static int cnt_allreduce(rt_comm *c, void *buf, size_t n, enum rt_dtype t, enum rt_algo a) {
  cnt(c)->allreduce++;
  if (n == cnt(c)->stall_n && cnt(c)->stall_left > 0) {
    cnt(c)->stall_left--;
    struct timespec ts = {0, (long)(cnt(c)->stall_s * 1e9)};
    nanosleep(&ts, NULL);
  }
  return rt_allreduce(cnt(c)->in, buf, n, t, a);
}
static int cnt_allgather(rt_comm *c, const void *s, void *r, size_t n, enum rt_dtype t) {
  cnt(c)->allgather++;
  return rt_allgather(cnt(c)->in, s, r, n, t);
}
static int cnt_reduce_scatter(rt_comm *c, const void *s, void *r, size_t n, enum rt_dtype t) {
  return rt_reduce_scatter(cnt(c)->in, s, r, n, t);
}
static int cnt_broadcast(rt_comm *c, void *buf, size_t n, enum rt_dtype t, int root) {
  cnt(c)->broadcast++;
  return rt_broadcast(cnt(c)->in, buf, n, t, root);
}
static int cnt_barrier(rt_comm *c) {
  cnt(c)->barrier++;
  return rt_barrier(cnt(c)->in);
}
static void cnt_keep(rt_comm *c) { (void)c; }
static const rt_comm_ops counting = {.name = "gloo-counting",
    .allreduce = cnt_allreduce,
    .allgather = cnt_allgather,
    .reduce_scatter = cnt_reduce_scatter,
    .broadcast = cnt_broadcast,
    .barrier = cnt_barrier,
    .destroy = cnt_keep};

/* Control values over a second communicator of the same ranks: the
 * measured one sees only the barriers and the allreduces it measures. */
static int control_comm_body(rt_comm *c, int rank, int size) {
  rt_pg_info in = rtt_pg_local(rank, size);
  char prefix[200];
  snprintf(prefix, sizeof prefix, "%s-ctl", cur_job->prefix);
  rt_comm *c2 = NULL;
  if (rt_pg_connect(&in, cur_job->dir, NULL, OP_TIMEOUT_S, prefix, &c2) != 0) {
    fprintf(stderr, "rank %d: second connect: %s\n", rank, core_err_msg());
    return 2;
  }
  counted mc = {.in = c}, cc = {.in = c2};
  rt_comm m = {.ops = &counting, .rank = c->rank, .size = c->size, .timeout_s = c->timeout_s, .impl = &mc};
  rt_comm k = {.ops = &counting, .rank = c2->rank, .size = c2->size, .timeout_s = c2->timeout_s, .impl = &cc};
  cal_sweep_opts o = {
      .min_bytes = 8, .max_bytes = 1024, .factor = 2, .warmup = 1, .min_iters = 2, .max_iters = 3, .control = &k};
  cal_point *pts = NULL;
  int n = 0;
  int rc = cal_sweep_run(&m, CORE_COLL_ALLREDUCE, RT_ALGO_DEFAULT, &o, &pts, &n);
  RTT_CHECK(rc == 0 && n == 8, "sweep with a control communicator: %d (%s), %d points", rc, core_err_msg(), n);
  if (rc == 0)
    check_points(CORE_COLL_ALLREDUCE, &o, pts, n, size, "control communicator");
  free(pts);
  RTT_CHECK(mc.broadcast == 0 && mc.allgather == 0, "the measured communicator carried %d broadcasts, %d allgathers",
      mc.broadcast, mc.allgather);
  RTT_CHECK(mc.barrier > 0 && mc.allreduce > 0, "the measured communicator ran %d barriers, %d allreduces", mc.barrier,
      mc.allreduce);
  RTT_CHECK(cc.broadcast > 0 && cc.allgather == 8 && cc.allreduce == 0 && cc.barrier == 0,
      "the control communicator carried %d broadcasts, %d allgathers, %d allreduces, %d barriers", cc.broadcast,
      cc.allgather, cc.allreduce, cc.barrier);
  /* A control communicator of other ranks is refused before any collective. */
  rt_comm wrong = k;
  wrong.rank = (k.rank + 1) % size;
  rc = cal_sweep_run(&m, CORE_COLL_ALLREDUCE, RT_ALGO_DEFAULT,
      &(cal_sweep_opts){.min_bytes = 8, .max_bytes = 8, .factor = 2, .control = &wrong}, &pts, &n);
  RTT_CHECK(rc == CORE_EINVAL && pts == NULL && n == 0, "a mismatched control communicator gave %d", rc);
  rt_comm_destroy(c2);
  return 0;
}

static void test_control_comm(void) { run_job(2, control_comm_body); }

/* A communicator that delegates to Gloo and then corrupts the last element
 * of every result, on every rank (so every rank fails in the same
 * iteration and none waits on another). */
static rt_comm *inner(rt_comm *c) { return c->impl; }
static void spoil(void *buf, size_t n) {
  if (n)
    ((float *)buf)[n - 1] += 1.0f;
}
static int bad_allreduce(rt_comm *c, void *buf, size_t n, enum rt_dtype t, enum rt_algo a) {
  int rc = rt_allreduce(inner(c), buf, n, t, a);
  if (!rc)
    spoil(buf, n);
  return rc;
}
static int bad_allgather(rt_comm *c, const void *s, void *r, size_t n, enum rt_dtype t) {
  int rc = rt_allgather(inner(c), s, r, n, t);
  if (!rc)
    spoil(r, n * (size_t)c->size);
  return rc;
}
static int pass_reduce_scatter(rt_comm *c, const void *s, void *r, size_t n, enum rt_dtype t) {
  return rt_reduce_scatter(inner(c), s, r, n, t);
}
static int pass_broadcast(rt_comm *c, void *buf, size_t n, enum rt_dtype t, int root) {
  return rt_broadcast(inner(c), buf, n, t, root);
}
static int pass_barrier(rt_comm *c) { return rt_barrier(inner(c)); }
static void keep(rt_comm *c) { (void)c; }
static const rt_comm_ops spoiling = {.name = "gloo-spoiling",
    .allreduce = bad_allreduce,
    .allgather = bad_allgather,
    .reduce_scatter = pass_reduce_scatter,
    .broadcast = pass_broadcast,
    .barrier = pass_barrier,
    .destroy = keep};

static int corrupt_body(rt_comm *c, int rank, int size) {
  rt_comm w = {.ops = &spoiling, .rank = c->rank, .size = c->size, .timeout_s = c->timeout_s, .impl = c};
  RTT_CHECK(cal_bufs_for(&w) == &cal_host_bufs, "a Gloo wrapper got the device table");
  cal_sweep_opts o = {.min_bytes = 64, .max_bytes = 64, .factor = 2, .warmup = 0, .min_iters = 1, .max_iters = 1};
  cal_point *pts = NULL;
  int n = 0;
  int rc = cal_sweep_run(&w, CORE_COLL_ALLREDUCE, RT_ALGO_DEFAULT, &o, &pts, &n);
  char want[256];
  snprintf(want, sizeof want,
      "allreduce of 64 bytes: wrong result on rank %d at element 15 (%g, expected %g); the backend or the network "
      "corrupts data",
      rank, (double)(size * (size + 1) / 2 + size * 1) + 1.0, (double)(size * (size + 1) / 2 + size * 1));
  RTT_CHECK(rc == CORE_ECOMM, "a corrupted allreduce gave %d", rc);
  RTT_CHECK(strstr(core_err_msg(), want) != NULL, "message '%s' lacks '%s'", core_err_msg(), want);
  RTT_CHECK(pts == NULL && n == 0, "a failed sweep left points");
  /* An allgather's block of the last rank. */
  rc = cal_sweep_run(&w, CORE_COLL_ALLGATHER, RT_ALGO_DEFAULT, &o, &pts, &n);
  RTT_CHECK(rc == CORE_ECOMM && strstr(core_err_msg(), "allgather of 64 bytes: wrong result on rank"),
      "a corrupted allgather gave %d: %s", rc, core_err_msg());
  /* The wrapped communicator itself is still healthy. */
  RTT_CHECK(rt_barrier(c) == 0, "barrier after the failures: %s", core_err_msg());
  return 0;
}

static void test_corruption(void) { run_job(2, corrupt_body); }

/* Sizes swept twice keep the faster pass: a size whose every iteration of
 * the first pass stalls (as a machine's seconds-long stalls catch a stretch
 * of a sweep) comes out at its unstalled time with the second pass and at
 * the stall's without it. */
static int repass_body(rt_comm *c, int rank, int size) {
  (void)rank;
  const double stall_s = 0.03;
  cal_sweep_opts o = {.min_bytes = 64,
      .max_bytes = 4096,
      .factor = 2,
      .warmup = 1,
      .min_iters = 3,
      .max_iters = 3,
      .budget_s = 0,
      .repass_max_bytes = 1024};
  int k512 = 3; /* 64, 128, 256, 512 */
  for (int repass = 1; repass >= 0; repass--) {
    /* The first pass's warm-up and timed iterations of 512 bytes stall. */
    counted st = {.in = c, .stall_n = 128, .stall_left = o.warmup + o.max_iters, .stall_s = stall_s};
    rt_comm w = {.ops = &counting, .rank = c->rank, .size = c->size, .timeout_s = c->timeout_s, .impl = &st};
    cal_sweep_opts s = o;
    s.repass_max_bytes = repass ? o.repass_max_bytes : 0;
    cal_point *pts = NULL;
    int n = 0;
    int rc = cal_sweep_run(&w, CORE_COLL_ALLREDUCE, RT_ALGO_DEFAULT, &s, &pts, &n);
    RTT_CHECK(rc == 0, "sweep (second pass %s): %s", repass ? "on" : "off", core_err_msg());
    if (rc)
      return 4;
    check_points(CORE_COLL_ALLREDUCE, &s, pts, n, size, repass ? "two passes" : "one pass");
    RTT_CHECK(pts[k512].bytes == st.stall_n * sizeof(float), "point %d is %g bytes", k512, pts[k512].bytes);
    RTT_CHECK(st.stall_left == 0, "%d stalls left unused", st.stall_left);
    if (repass)
      RTT_CHECK(pts[k512].t_p50_s < stall_s / 2, "with a second pass the stalled size took %g s (stall %g s)",
          pts[k512].t_p50_s, stall_s);
    else
      RTT_CHECK(pts[k512].t_p50_s >= stall_s, "in one pass the stalled size took %g s, under the %g s stall",
          pts[k512].t_p50_s, stall_s);
    free(pts);
  }
  return 0;
}

static void test_repass(void) { run_job(2, repass_body); }

static int control_body(rt_comm *c, int rank, int size) {
  const cal_buf_ops *h = &cal_host_bufs;
  double mine[3] = {rank + 0.5, -rank, 1e300 * (rank + 1)}, all[3 * RTT_MAX_RANKS];
  RTT_CHECK(cal_allgather_host(c, h, mine, all, sizeof mine) == 0, "allgather: %s", core_err_msg());
  for (int r = 0; r < size; r++)
    RTT_CHECK(all[3 * r] == r + 0.5 && all[3 * r + 1] == -r && all[3 * r + 2] == 1e300 * (r + 1),
        "rank %d's doubles arrived changed", r);
  double v[2] = {rank == 1 ? 7.0 : 1.0, -(double)rank};
  RTT_CHECK(cal_max_over_ranks(c, h, v, 2) == 0 && v[0] == 7.0 && v[1] == 0.0, "max over ranks: %g %g", v[0], v[1]);
  double m[2] = {rank == 1 ? 7.0 : 1.0, (double)rank};
  RTT_CHECK(size == 2 && cal_mean_over_ranks(c, h, m, 2) == 0 && m[0] == 4.0 && m[1] == 0.5, "mean over ranks: %g %g",
      m[0], m[1]);
  double odd3[3] = {3, 1, 2}, even4[4] = {4, 1, 3, 2};
  RTT_CHECK(cal_median(odd3, 3) == 2.0 && cal_median(even4, 4) == 2.5, "medians of 3 and 4 values");
  float stop = rank == 0 ? 1.0f : 0.0f;
  RTT_CHECK(cal_broadcast_host(c, h, &stop, sizeof stop, 0) == 0 && stop == 1.0f, "broadcast");
  char odd[6] = "abcde";
  RTT_CHECK(cal_allgather_host(c, h, odd, all, 5) == CORE_EINVAL, "5 bytes are not fp32 elements");
  RTT_CHECK(cal_broadcast_host(c, h, odd, 6, 0) == CORE_EINVAL, "6 bytes are not fp32 elements");
  return 0;
}

static void test_control_values(void) { run_job(2, control_body); }

/* The device table over Gloo without a device: every rank's first
 * allocation fails the same way, before any collective. */
static int device_body(rt_comm *c, int rank, int size) {
  (void)rank, (void)size;
  void *p = NULL;
  int rc = cal_device_bufs.alloc(4096, &p);
  RTT_CHECK(rc == CORE_EUNSUPPORTED && p == NULL && strstr(core_err_msg(), "CUDA"),
      "device alloc without a device: %d (%s)", rc, core_err_msg());
  cal_device_bufs.free(NULL);
  cal_sweep_opts o = {.min_bytes = 8,
      .max_bytes = 1024,
      .factor = 2,
      .warmup = 1,
      .min_iters = 1,
      .max_iters = 2,
      .bufs = &cal_device_bufs};
  cal_point *pts = NULL;
  int n = -1;
  double t0 = rtt_now();
  rc = cal_sweep_run(c, CORE_COLL_ALLREDUCE, RT_ALGO_DEFAULT, &o, &pts, &n);
  RTT_CHECK(
      rc == CORE_EUNSUPPORTED && pts == NULL && n == 0, "device sweep without a device: %d (%s)", rc, core_err_msg());
  RTT_CHECK(strstr(core_err_msg(), "device buffers") != NULL, "message '%s' does not name the buffers", core_err_msg());
  RTT_CHECK(rtt_now() - t0 < OP_TIMEOUT_S / 2, "the failure took %.1f s", rtt_now() - t0);
  double v = 1;
  RTT_CHECK(cal_max_over_ranks(c, &cal_device_bufs, &v, 1) == CORE_EUNSUPPORTED, "staged max without a device");
  RTT_CHECK(rt_barrier(c) == 0, "the communicator is still healthy: %s", core_err_msg());
  return 0;
}

static void test_device_table_without_device(void) {
  CU_ASSERT_FATAL(ndev >= 0 && "the device probe child reported nothing");
  if (ndev > 0) {
    test_skip("a CUDA device is present: the no-device checks do not apply");
    return;
  }
  run_job(2, device_body);
}

/* ---- the command line ---------------------------------------------------------- */

typedef struct cli_run {
  const char *const *argv;
  char log[600];
} cli_run;

static int exec_child(int rank, int size, void *arg) {
  (void)rank, (void)size;
  const cli_run *cr = arg;
  int fd = open(cr->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return 126;
  dup2(fd, 1);
  dup2(fd, 2);
  close(fd);
  /* One process, as a user runs it: no launcher's variables. */
  unsetenv("RANK"), unsetenv("WORLD_SIZE"), unsetenv("LOCAL_RANK"), unsetenv("LOCAL_WORLD_SIZE");
  unsetenv("DDPSIM_RDZV");
  execv(cr->argv[0], (char *const *)cr->argv);
  return 127;
}

/* Run ddpsim with argv (argv[0] is replaced by the built binary) and a
 * deadline; the exit status (or -1 on a signal or the deadline), its
 * output in *out (malloc'd), and the seconds it took. */
static int run_ddpsim(const char **argv, const char *logdir, double deadline_s, char **out, double *secs) {
  static char bin[1024];
  snprintf(bin, sizeof bin, "%s/ddpsim", DDPSIM_BINARY_DIR);
  argv[0] = bin;
  cli_run cr = {.argv = argv};
  snprintf(cr.log, sizeof cr.log, "%s/ddpsim.log", logdir);
  double t0 = rtt_now();
  rtt_group g;
  if (rtt_spawn(&g, 0, 1, 1, exec_child, &cr) != 0)
    return -2;
  int in_time = rtt_wait(&g, deadline_s);
  *secs = rtt_now() - t0;
  *out = NULL;
  FILE *f = fopen(cr.log, "r");
  if (f) {
    char *buf = calloc(1, 65536);
    if (buf && fread(buf, 1, 65535, f) == 0)
      buf[0] = '\0';
    fclose(f);
    *out = buf;
  }
  unlink(cr.log);
  if (!in_time || !WIFEXITED(g.status[0]))
    return -1;
  return WEXITSTATUS(g.status[0]);
}

static int dir_is_empty(const char *dir) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", dir);
  return system(cmd) == 0;
}

static void test_cli_no_device(void) {
  CU_ASSERT_FATAL(ndev >= 0 && "the device probe child reported nothing");
  if (ndev > 0) {
    test_skip("a CUDA device is present: the GPU suite runs instead");
    return;
  }
  char outdir[512], logdir[512], prof[700];
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(outdir, sizeof outdir), 0);
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(logdir, sizeof logdir), 0);
  /* A profile in a directory that does not exist yet: not even that
   * directory may appear. */
  snprintf(prof, sizeof prof, "%s/new/gpu.cfg", outdir);
  const char *argv[] = {"ddpsim", "calibrate", "--backend", "nccl", "--quick", "--out", prof, NULL};
  char *out = NULL;
  double secs = 0;
  int st = run_ddpsim(argv, logdir, NO_DEVICE_DEADLINE_S, &out, &secs);
  CU_ASSERT_EQUAL(st, 5); /* CLI_EXIT_UNSUPPORTED */
  CU_ASSERT(secs < NO_DEVICE_DEADLINE_S);
#ifdef DDPSIM_HAVE_NCCL
  const char *why = "no CUDA device";
#else
  const char *why = "built without CUDA/NCCL";
#endif
  int clear = out && strstr(out, "ddpsim calibrate: error: --backend nccl: ") && strstr(out, why);
  CU_ASSERT(clear);
  if (!clear || st != 5)
    fprintf(stderr, "\n  exit %d after %.2f s: %s\n", st, secs, out ? out : "(no output)");
  CU_ASSERT(dir_is_empty(outdir));
  free(out);
  rtt_rmdir(outdir);
  rtt_rmdir(logdir);
}

static void test_cli_gpu(void) {
  CU_ASSERT_FATAL(ndev >= 0 && "the device probe child reported nothing");
  if (ndev == 0) {
    test_skip("no CUDA device: %s", probe_msg);
    return;
  }
  char outdir[512], logdir[512], prof[700];
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(outdir, sizeof outdir), 0);
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(logdir, sizeof logdir), 0);
  snprintf(prof, sizeof prof, "%s/gpu.cfg", outdir);
  const char *argv[] = {"ddpsim", "calibrate", "--backend", "nccl", "--quick", "--progress", "on", "--out", prof, NULL};
  char *out = NULL;
  double secs = 0;
  int st = run_ddpsim(argv, logdir, GPU_RUN_DEADLINE_S, &out, &secs);
  CU_ASSERT_EQUAL(st, 0);
  printf("\n  calibrate --backend nccl --quick on one GPU: exit %d in %.1f s\n%s\n", st, secs, out ? out : "");
  core_profile *p = NULL;
  if (st == 0 && core_profile_load(prof, &p) == 0) {
    CU_ASSERT_STRING_EQUAL(p->backend, "nccl");
    CU_ASSERT_STRING_EQUAL(p->device_kind, "gpu");
    CU_ASSERT(p->device_name[0] != '\0');
    CU_ASSERT(p->rate[CORE_PREC_FP32].present && p->rate[CORE_PREC_FP32].n == 3);
    CU_ASSERT(p->rate[CORE_PREC_FP16].present);
    CU_ASSERT(p->memory_GBps > 0 && p->host_link_GBps > 0 && p->reduce_GBps > 0);
    CU_ASSERT(p->jitter != CORE_JITTER_NONE && p->n_jitter_samples == 10);
    CU_ASSERT(p->compute_slowdown >= 1.0 && p->comm_slowdown >= 1.0);
    CU_ASSERT_EQUAL(p->n_colls, 0); /* one rank: checked, not recorded */
  } else {
    CU_FAIL("no loadable profile");
    fprintf(stderr, "\n  %s\n", core_err_msg());
  }
  core_profile_free(p);
  free(out);
  rtt_rmdir(outdir);
  rtt_rmdir(logdir);
}

/* The hooks' costs are timed on each rank's own first-step gradient
 * (cal_model_gradient), as training's hooks see it: ranks 0 and 1 of 2 have
 * different ones, and their mean is what `ddpsim train` on 2 ranks applies
 * in its first step (SGD, learning rate 1, no momentum: parameters minus
 * the mean gradient). */
static void test_model_gradient(void) {
  char model[700], outdir[512], logdir[512], params[700], run[700];
  snprintf(model, sizeof model, "%s/scenarios/models/mlp-small.cfg", DDPSIM_SOURCE_DIR);
  core_model *m = NULL;
  CU_ASSERT_EQUAL_FATAL(core_model_load(model, &m), 0);
  float *g[2] = {NULL, NULL};
  int64_t n[2] = {0, 0};
  rt_mlp *net = NULL;
  /* Removed with the run's folder by the suite's cleanup. */
  CU_ASSERT_EQUAL_FATAL(rtt_scratch_dir(outdir, sizeof outdir), 0);
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(logdir, sizeof logdir), 0);
  for (int r = 0; r < 2; r++)
    CU_ASSERT_EQUAL(cal_model_gradient(m, 32, r, 2, &g[r], &n[r]), 0);
  CU_ASSERT_EQUAL(rt_mlp_create(m, 32, 1, &net), 0);
  if (!g[0] || !g[1] || !net || n[0] != net->n_params || n[1] != n[0]) {
    CU_FAIL("no gradients or initial parameters");
    goto out;
  }
  int64_t differ = 0;
  for (int64_t i = 0; i < n[0]; i++)
    differ += g[0][i] != g[1][i];
  CU_ASSERT(differ > n[0] / 2);

  snprintf(params, sizeof params, "%s/params.bin", outdir);
  snprintf(run, sizeof run, "%s/run", outdir);
  static char bin[1024];
  snprintf(bin, sizeof bin, "%s/ddpsim", DDPSIM_BINARY_DIR);
  const char *argv[] = {"ddpsim", "launch", "-q", "--nproc", "2", "--", bin, "train", "--model", model, "--steps", "1",
      "--lr", "1", "--momentum", "0", "-o", run, "--params-out", params, NULL};
  char *out = NULL;
  double secs = 0;
  int st = run_ddpsim(argv, logdir, 120, &out, &secs);
  CU_ASSERT_EQUAL(st, 0);
  if (st)
    fprintf(stderr, "\n  train exit %d: %s\n", st, out ? out : "(no output)");
  free(out);
  FILE *f = fopen(params, "rb");
  CU_ASSERT_PTR_NOT_NULL(f);
  if (f) {
    int64_t bad = 0, i = 0;
    float p;
    for (; i < n[0] && fread(&p, sizeof p, 1, f) == 1; i++) {
      float want = net->params[i] - (g[0][i] / 2 + g[1][i] / 2);
      if (fabsf(p - want) > 1e-6f * (1.0f + fabsf(want)))
        bad++;
    }
    fclose(f);
    CU_ASSERT_EQUAL(i, n[0]);
    CU_ASSERT_EQUAL(bad, 0);
    if (bad)
      fprintf(stderr, "\n  %lld of %lld parameters are not the initial ones minus the mean gradient\n", (long long)bad,
          (long long)n[0]);
  }
out:
  rt_mlp_free(net);
  free(g[0]);
  free(g[1]);
  core_model_free(m);
  rtt_rmdir(logdir);
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("sweep", suite_init, NULL);
  CU_add_test(s, "host table writes and checks the loop's values", test_host_table_values);
  CU_add_test(s, "the backend picks the table", test_table_choice);
  CU_add_test(s, "Gloo sweeps through the host table, 2 ranks", test_host_sweeps);
  CU_add_test(s, "corrupted results are caught with the loop's message", test_corruption);
  CU_add_test(s, "a stall that one pass sits in does not reach the points", test_repass);
  CU_add_test(s, "control values through the table", test_control_values);
  CU_add_test(s, "control values over a control communicator", test_control_comm);
  CU_pSuite c = CU_add_suite("cli", suite_init, rtt_scratch_cleanup);
  CU_add_test(c, "each rank's calibration gradient is its first training step's", test_model_gradient);
  CU_pSuite n = CU_add_suite("no device", suite_init, rtt_scratch_cleanup);
  CU_add_test(n, "device table without a device fails cleanly", test_device_table_without_device);
  CU_add_test(n, "calibrate --backend nccl without a device: exit 5, nothing written", test_cli_no_device);
  CU_pSuite g = CU_add_suite("gpu", suite_init, rtt_scratch_cleanup);
  CU_add_test(g, "calibrate --backend nccl --quick on a GPU", test_cli_gpu);
}

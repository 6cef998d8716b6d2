/* The communication hooks (runtime/compress.h) and the Gloo bf16 allreduce,
 * run by real ranks: forked processes that rendezvous through a FileStore
 * and allreduce over loopback TCP with Gloo, on 2 and 3 ranks. What each
 * test asserts is what the feature promises:
 *
 *  - the parser and PyTorch's compression rule (_should_compress with the
 *    rank clamped to min(n, m)) on hand-computed shapes, and the decision
 *    the compressor takes for each tensor of a model;
 *  - Gloo's bf16 sum rounds to nearest, ties to even, as c10::BFloat16;
 *  - the fp16 and bf16 hooks give the fp32 mean within the rounding bound
 *    derived below (fp16_bound), identically on every rank;
 *  - PowerSGD at full rank (rank >= min(n, m) for every tensor) gives the
 *    exact mean within the fp32 bound derived below (full_rank_bound), with
 *    the uncompressed (1-D) tensors allreduced alongside, and sends exactly
 *    the P and Q elements the shapes say;
 *  - with error feedback, what the applied (approximate) updates still owe
 *    the true mean gradients, sum over steps of (true - applied), equals the
 *    sum over ranks of the error buffers and stays bounded over 50 steps;
 *    without error feedback the same gap grows with the steps;
 *  - before start_powerSGD_iter the hook is a plain allreduce, bit for bit;
 *  - training through rt_ddp with powersgd:2 (and fp16, bf16) leaves the
 *    ranks' parameters bitwise identical after every step.
 *
 * Ranks check their own results (RTT_CHECK prints what failed) and report
 * through their exit status; every rank runs under rtt's deadline. */
#include <CUnit/CUnit.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bucket.h"
#include "core/err.h"
#include "core/model.h"
#include "runtime/blas.h"
#include "runtime/comm.h"
#include "runtime/compress.h"
#include "runtime/data.h"
#include "runtime/ddp.h"
#include "runtime/mlp.h"
#include "runtime/pg.h"
#include "rtt.h"

/* Long enough for the ASan build on a loaded 2-core machine; a hang still
 * ends here instead of at ctest's timeout. */
#define RANK_DEADLINE_S 120.0
#define OP_TIMEOUT_S 30.0
#define U32 0x1p-24 /* unit roundoff of fp32 */
#define U16 0x1p-11 /* of fp16 */
#define UBF 0x1p-8  /* of bf16 */

#define CHECK_OK(expr)                                                                                                 \
  do {                                                                                                                 \
    int rc_ = (expr);                                                                                                  \
    RTT_CHECK(rc_ == 0, "%s: %d %s", #expr, rc_, core_err_msg());                                                      \
    if (rc_)                                                                                                           \
      return 5;                                                                                                        \
  } while (0)

/* ---- ranks ----------------------------------------------------------------- */

typedef struct job {
  char dir[512];
  char prefix[128];
  int (*body)(rt_comm *c, int rank, int size, const struct job *j);
  int param; /* test-specific */
} job;

static int rank_main(int rank, int size, void *arg) {
  const job *j = arg;
  rt_blas_threads(1);
  rt_pg_info in = rtt_pg_local(rank, size);
  rt_comm *c = NULL;
  int rc = rt_pg_connect(&in, j->dir, "127.0.0.1", OP_TIMEOUT_S, j->prefix, &c);
  if (rc) {
    fprintf(stderr, "rank %d: connect: %s\n", rank, core_err_msg());
    return 2;
  }
  rtt_fails = 0;
  int body = j->body(c, rank, size, j);
  rt_comm_finish(c, body);
  return body ? body : (rtt_fails ? 3 : 0);
}

static void run_job(int size, int (*body)(rt_comm *, int, int, const job *), int param, const char *name) {
  job j;
  memset(&j, 0, sizeof j);
  CU_ASSERT_EQUAL_FATAL(rtt_mkdtemp(j.dir, sizeof j.dir), 0);
  rtt_prefix(j.prefix, sizeof j.prefix, name);
  j.body = body;
  j.param = param;
  double t0 = rtt_now();
  CU_ASSERT(rtt_run(size, rank_main, &j, RANK_DEADLINE_S));
  fprintf(stderr, " [%s, %d ranks: %.2f s]", name, size, rtt_now() - t0);
  rtt_rmdir(j.dir);
}

/* 1 when buf (n floats) is bit for bit rank 0's on every rank; collective. */
static int same_everywhere(rt_comm *c, const float *buf, size_t n) {
  float *r0 = malloc(sizeof *r0 * (n ? n : 1));
  if (!r0)
    return 0;
  memcpy(r0, buf, sizeof *r0 * n);
  int ok = rt_broadcast(c, r0, n, RT_FP32, 0) == 0 && memcmp(r0, buf, sizeof *r0 * n) == 0;
  float v = ok ? 0.0f : 1.0f; /* everyone learns whether anyone differs */
  if (rt_allreduce(c, &v, 1, RT_FP32, RT_ALGO_DEFAULT) != 0)
    ok = 0;
  free(r0);
  return ok && v == 0.0f;
}

/* ---- a model of given shapes, without a file -------------------------------- */

enum { MAX_T = 8 };

typedef struct tmodel {
  core_model m;
  int64_t elems[MAX_T], rows[MAX_T], off[MAX_T];
  int layer[MAX_T];
  core_buckets bk;
} tmodel;

/* Tensors t of rows[t] x cols[t] (cols 1 = a vector), parameter order;
 * buckets as DDP assigns them with caps in bytes (0: one bucket). */
static int tmodel_init(tmodel *t, int nt, const int64_t *rows, const int64_t *cols, size_t first_cap, size_t cap) {
  memset(t, 0, sizeof *t);
  snprintf(t->m.name, sizeof t->m.name, "test");
  t->m.n_tensors = nt;
  t->m.tensor_elems = t->elems;
  t->m.tensor_rows = t->rows;
  t->m.tensor_layer = t->layer;
  for (int i = 0; i < nt; i++) {
    t->elems[i] = rows[i] * cols[i];
    t->rows[i] = rows[i];
    t->layer[i] = i / 2;
    t->off[i] = t->m.n_params;
    t->m.n_params += t->elems[i];
  }
  if (!cap)
    cap = first_cap = (size_t)t->m.n_params * 4 + 4;
  return core_bucket_assign(t->elems, nt, NULL, sizeof(float), first_cap, cap, CORE_BUCKET_REBUILT, &t->bk);
}

/* Parameter layout <-> bucket b. */
static void pack(const tmodel *t, int b, const float *flat, float *buf) {
  for (int i = t->bk.bucket_first[b]; i < t->bk.bucket_first[b + 1]; i++) {
    int ti = t->bk.bucket_tensors[i];
    memcpy(buf + t->bk.tensor_offset[ti], flat + t->off[ti], sizeof *buf * (size_t)t->elems[ti]);
  }
}

static void unpack(const tmodel *t, int b, const float *buf, float *flat) {
  for (int i = t->bk.bucket_first[b]; i < t->bk.bucket_first[b + 1]; i++) {
    int ti = t->bk.bucket_tensors[i];
    memcpy(flat + t->off[ti], buf + t->bk.tensor_offset[ti], sizeof *buf * (size_t)t->elems[ti]);
  }
}

/* Run the hook over every bucket of t in order: flat (parameter layout) in,
 * the hook's result out. */
static int hook_all(rt_compressor *h, rt_comm *c, const tmodel *t, float *flat, long step, rt_compress_stats *st) {
  for (int b = 0; b < t->bk.n_buckets; b++) {
    float *buf = malloc(sizeof *buf * (size_t)t->bk.bucket_elems[b]);
    if (!buf)
      return CORE_ENOMEM;
    pack(t, b, flat, buf);
    int rc = rt_compress_bucket(h, c, b, buf, step, st);
    unpack(t, b, buf, flat);
    free(buf);
    if (rc)
      return rc;
  }
  return 0;
}

/* Rank r's gradients at step s, every rank able to make every rank's:
 * g = base + noise * N(0, 1) per element, then divided by world in fp32 as
 * the DDP engine does before the hook. base may be NULL. */
static void gradients(int r, int size, long s, uint64_t seed, const float *base, double noise, float *g, int64_t n) {
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, (unsigned long)(seed * 1000003u + (uint64_t)s * 101u + (uint64_t)r + 1u));
  float inv = 1.0f / (float)size;
  for (int64_t i = 0; i < n; i++) {
    float v = (float)((base ? base[i] : 0.0) + noise * gsl_ran_gaussian_ziggurat(rng, 1.0));
    g[i] = v * inv;
  }
  gsl_rng_free(rng);
}

/* ---- parse and the compression rule (no ranks) ------------------------------ */

static void test_parse(void) {
  rt_compress_opts o;
  rt_compress_opts_default(&o);
  CU_ASSERT_EQUAL(o.kind, CORE_COMPRESS_NONE);
  CU_ASSERT_EQUAL(o.rank, 1);
  CU_ASSERT_EQUAL(o.start_iter, 1000);
  CU_ASSERT_DOUBLE_EQUAL(o.min_rate, 2.0, 0);
  CU_ASSERT(o.error_feedback && o.warm_start);
  CU_ASSERT_EQUAL(o.seed, 0);
  CU_ASSERT_EQUAL(rt_compress_parse("fp16", &o), 0);
  CU_ASSERT_EQUAL(o.kind, CORE_COMPRESS_FP16);
  CU_ASSERT_EQUAL(rt_compress_parse("bf16", &o), 0);
  CU_ASSERT_EQUAL(o.kind, CORE_COMPRESS_BF16);
  CU_ASSERT_EQUAL(rt_compress_parse("powersgd:4", &o), 0);
  CU_ASSERT(o.kind == CORE_COMPRESS_POWERSGD && o.rank == 4);
  CU_ASSERT_EQUAL(rt_compress_parse("powersgd", &o), 0);
  CU_ASSERT(o.kind == CORE_COMPRESS_POWERSGD && o.rank == 1);
  CU_ASSERT_EQUAL(rt_compress_parse("none", &o), 0);
  CU_ASSERT_EQUAL(o.kind, CORE_COMPRESS_NONE);
  static const char *const bad[] = {
      "powersgd:0", "powersgd:", "powersgd:-1", "powersgd:2x", "powersgd: 2", "zip", "", "FP16", "powersgd:1.5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rt_compress_opts_default(&o);
    CU_ASSERT_EQUAL(rt_compress_parse(bad[i], &o), CORE_EINVAL);
    CU_ASSERT_EQUAL(o.kind, CORE_COMPRESS_NONE); /* untouched */
    CU_ASSERT_PTR_NOT_NULL(strstr(core_err_msg(), "powersgd"));
  }
  CU_ASSERT_STRING_EQUAL(core_compress_kind_name(CORE_COMPRESS_POWERSGD), "powersgd");
}

static void test_rule(void) {
  /* (n, m, R, min_rate) -> compressed?, rank used; by hand:
   * (n + m) * r * rate < n * m with r = min(n, m, R). */
  static const struct {
    int64_t n, m;
    int R;
    double rate;
    int want, r;
  } c[] = {
      {1024, 512, 1, 2, 1, 1},      /* 1536 * 2 = 3072 < 524288 */
      {1024, 1, 1, 2, 0, 1},        /* a bias: 1025 * 2 = 2050 >= 1024 */
      {1024, 1, 4, 2, 0, 1},        /* rank clamped to 1 */
      {4, 4, 1, 2, 0, 1},           /* 8 * 2 = 16, not < 16 */
      {5, 5, 1, 2, 1, 1},           /* 10 * 2 = 20 < 25 */
      {4, 4, 4, 2, 0, 4},           /* 8 * 4 * 2 = 64 >= 16 */
      {3, 100, 8, 2, 0, 3},         /* clamped to 3: 103 * 3 * 2 = 618 >= 300 */
      {3, 100, 8, 0.9, 1, 3},       /* 103 * 3 * 0.9 = 278.1 < 300 */
      {16, 1, 1, 0.5, 1, 1},        /* rate < 1 compresses vectors too: 8.5 < 16 */
      {2048, 2048, 4, 2, 1, 4},     /* 4096 * 4 * 2 = 32768 < 4194304 */
      {2048, 2048, 512, 2, 0, 512}, /* 4096 * 512 * 2 = 4194304, not < */
      {2048, 2048, 511, 2, 1, 511}, /* 4096 * 511 * 2 = 4186112 < */
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    int r = -1;
    int got = rt_compress_should(c[i].n, c[i].m, c[i].R, c[i].rate, &r);
    if (got != c[i].want || r != c[i].r)
      fprintf(stderr, "\n  case %zu: %lld x %lld R %d rate %g: got %d rank %d\n", i, (long long)c[i].n,
          (long long)c[i].m, c[i].R, c[i].rate, got, r);
    CU_ASSERT_EQUAL(got, c[i].want);
    CU_ASSERT_EQUAL(r, c[i].r);
  }

  /* The compressor's decision per tensor of a model: mlp.cfg's shapes
   * (weights 2048x1024, 2048x2048, 2048x2048, 1024x2048 and their biases)
   * at rank 4, rate 2: every weight compressed, no bias. */
  core_model *m = NULL;
  CU_ASSERT_EQUAL_FATAL(core_model_load(DDPSIM_SOURCE_DIR "/scenarios/models/mlp.cfg", &m), 0);
  core_buckets bk;
  CU_ASSERT_EQUAL_FATAL(
      core_bucket_assign(m->tensor_elems, m->n_tensors, m->ready_order, 4, 1 << 20, 25 << 20, CORE_BUCKET_REBUILT, &bk),
      0);
  rt_compress_opts o;
  rt_compress_opts_default(&o);
  CU_ASSERT_EQUAL(rt_compress_parse("powersgd:4", &o), 0);
  rt_compressor *h = NULL;
  CU_ASSERT_EQUAL_FATAL(rt_compress_create(&o, m, &bk, &h), 0);
  CU_ASSERT_EQUAL(m->n_tensors, 8);
  for (int t = 0; t < m->n_tensors; t++)
    CU_ASSERT_EQUAL(rt_compress_tensor_rank(h, t), t % 2 == 0 ? 4 : 0);
  rt_compress_free(h);
  /* Rate 0.5 (PyTorch's docstring example) compresses the biases as n x 1
   * matrices of rank 1: (2048 + 1) * 1 * 0.5 < 2048. */
  o.min_rate = 0.5;
  CU_ASSERT_EQUAL_FATAL(rt_compress_create(&o, m, &bk, &h), 0);
  for (int t = 0; t < m->n_tensors; t++)
    CU_ASSERT_EQUAL(rt_compress_tensor_rank(h, t), t % 2 == 0 ? 4 : 1);
  rt_compress_free(h);
  /* Bad options are refused. */
  o.rank = 0;
  CU_ASSERT_EQUAL(rt_compress_create(&o, m, &bk, &h), CORE_EINVAL);
  o.rank = 1;
  o.min_rate = -1;
  CU_ASSERT_EQUAL(rt_compress_create(&o, m, &bk, &h), CORE_EINVAL);
  o.min_rate = NAN;
  CU_ASSERT_EQUAL(rt_compress_create(&o, m, &bk, &h), CORE_EINVAL);
  o.min_rate = 2;
  o.start_iter = -1;
  CU_ASSERT_EQUAL(rt_compress_create(&o, m, &bk, &h), CORE_EINVAL);
  CU_ASSERT_PTR_NULL(h);
  core_bucket_free(&bk);
  core_model_free(m);
}

/* ---- Gloo's bf16 sum: round to nearest, ties to even ------------------------ */

static uint16_t bf16_bits(float f) { /* exact for the values below */
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  return (uint16_t)(x >> 16);
}

static int bf16_body(rt_comm *c, int rank, int size, const job *j) {
  (void)size;
  (void)j;
  /* Rank 0 holds 1.0, rank 1 the addend, the others 0 (exact to add):
   * 1 + 2^-8 is halfway between 1 and 1 + 2^-7 -> the even 1;
   * 1 + 3 * 2^-8 halfway between 1 + 2^-7 and 1 + 2^-6 -> the even 1 + 2^-6;
   * 1 + 2^-8 + 2^-15 is above halfway -> 1 + 2^-7. */
  static const float add[3] = {0x1p-8f, 0x3p-8f, 0x1p-8f + 0x1p-15f};
  static const float want[3] = {1.0f, 1.0f + 0x1p-6f, 1.0f + 0x1p-7f};
  enum { N = 3000 };
  uint16_t *h = calloc(N, sizeof *h);
  if (!h)
    return 4;
  for (int i = 0; i < N; i++)
    h[i] = rank == 0 ? bf16_bits(1.0f) : rank == 1 ? bf16_bits(add[i % 3]) : 0;
  CHECK_OK(rt_allreduce(c, h, N, RT_BF16, RT_ALGO_DEFAULT));
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += h[i] != bf16_bits(want[i % 3]);
  RTT_CHECK(bad == 0, "bf16 sums: %d wrong, [0..2] = %04x %04x %04x", bad, h[0], h[1], h[2]);
  /* Only the default algorithm has bf16 arithmetic. */
  RTT_CHECK(
      rt_allreduce(c, h, N, RT_BF16, RT_ALGO_HALVING_DOUBLING) == CORE_EUNSUPPORTED, "bf16 halving_doubling accepted");
  RTT_CHECK(strstr(core_err_msg(), "default") != NULL, "message: %s", core_err_msg());
  free(h);
  return 0;
}

static void test_bf16_allreduce(void) {
  run_job(2, bf16_body, 0, "bf16");
  run_job(3, bf16_body, 0, "bf16");
}

/* ---- fp16 and bf16 hooks ------------------------------------------------------ */

/* The hook's error per element against the exact sum of the fp32 inputs
 * x_r (already divided by world), u the unit roundoff of the half type
 * (2^-11 fp16, 2^-8 bf16). Each x_r is rounded once by the cast
 * (|h_r - x_r| <= u |x_r|); each of the W - 1 additions of the allreduce
 * (Gloo's float16 "+", or the bf16 sum, in float then rounded) rounds a
 * partial sum of magnitude at most sum |h_r| (1 + u)^k <= sum |x_r|
 * (1 + u)^W. So |hook - sum x_r| <= W u (1 + u)^W sum_r |x_r| while the
 * results stay in the normal range; a subnormal fp16 result rounds with an
 * absolute error of at most 2^-25 (half its spacing 2^-24) instead, at most
 * W times. Casting back to fp32 is exact. */
static double half_bound(int bf, int world, double sum_abs) {
  double u = bf ? UBF : U16;
  return world * u * pow(1 + u, world) * sum_abs + (bf ? 0.0 : world * 0x1p-25);
}

static int half_body(rt_comm *c, int rank, int size, const job *j) {
  const int bf = j->param;
  enum { N = 20011 };
  int64_t rows[1] = {N}, cols[1] = {1};
  tmodel t;
  CHECK_OK(tmodel_init(&t, 1, rows, cols, 0, 0));
  rt_compress_opts o;
  rt_compress_opts_default(&o);
  o.kind = bf ? CORE_COMPRESS_BF16 : CORE_COMPRESS_FP16;
  rt_compressor *h = NULL;
  CHECK_OK(rt_compress_create(&o, &t.m, &t.bk, &h));
  float *x = malloc(sizeof *x * N), *mine = malloc(sizeof *mine * N);
  double *sum = calloc(N, sizeof *sum), *abs_sum = calloc(N, sizeof *abs_sum);
  if (!x || !mine || !sum || !abs_sum)
    return 4;
  /* Magnitudes spread over 2^-7 .. 2^4 (normal in fp16 after / world), both
   * signs: plenty of rounding, no overflow (sums stay far below 65504). */
  for (int r = 0; r < size; r++) {
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 17u + (unsigned long)r);
    for (int i = 0; i < N; i++) {
      double mag = ldexp(1.0, -7 + (int)gsl_rng_uniform_int(rng, 11)) * (1 + gsl_rng_uniform(rng));
      float v = (float)(gsl_rng_uniform(rng) < 0.5 ? -mag : mag) / (float)size;
      x[i] = v;
      sum[i] += v;
      abs_sum[i] += fabs(v);
    }
    gsl_rng_free(rng);
    if (r == rank)
      memcpy(mine, x, sizeof *x * N);
  }
  rt_compress_stats st;
  memset(&st, 0, sizeof st);
  CHECK_OK(rt_compress_bucket(h, c, 0, mine, 0, &st));
  double worst = 0;
  int over = 0, differ = 0;
  for (int i = 0; i < N; i++) {
    double e = fabs((double)mine[i] - sum[i]), b = half_bound(bf, size, abs_sum[i]);
    if (e / b > worst)
      worst = e / b;
    over += !(e <= b);
    differ += (double)mine[i] != (double)(float)sum[i];
  }
  RTT_CHECK(over == 0, "%s hook: %d of %d elements beyond the bound (worst %.3g x bound)", bf ? "bf16" : "fp16", over,
      N, worst);
  /* The cast did happen: most results are not the fp32 sum. */
  RTT_CHECK(differ > N / 2, "%s hook: only %d of %d results differ from the fp32 sum", bf ? "bf16" : "fp16", differ, N);
  RTT_CHECK(same_everywhere(c, mine, N), "%s hook: ranks differ", bf ? "bf16" : "fp16");
  RTT_CHECK(st.bytes[RT_PHASE_BUCKET] == 2 * N && st.allreduces[RT_PHASE_BUCKET] == 1 &&
                rt_compress_stats_bytes(&st) == 2 * N && st.buckets == 1 && st.cast_s > 0 && st.comm_s > 0,
      "stats: %lld bytes, %lld allreduces, cast %g s", (long long)st.bytes[0], (long long)st.allreduces[0], st.cast_s);
  if (rank == 0)
    fprintf(stderr, " [%s on %d ranks: worst error %.3f x bound]", bf ? "bf16" : "fp16", size, worst);
  free(x);
  free(mine);
  free(sum);
  free(abs_sum);
  rt_compress_free(h);
  core_bucket_free(&t.bk);
  return 0;
}

static void test_fp16_hook(void) {
  run_job(2, half_body, 0, "fp16");
  run_job(3, half_body, 0, "fp16");
}

static void test_bf16_hook(void) {
  run_job(2, half_body, 1, "bf16h");
  run_job(3, half_body, 1, "bf16h");
}

/* ---- PowerSGD at full rank: the exact mean ------------------------------------ */

/* Shapes: W1 8 x 200, b1 8, W2 4 x 8, b2 4 (n <= m for every matrix). */
static const int64_t FR_ROWS[4] = {8, 8, 4, 4}, FR_COLS[4] = {200, 1, 8, 1};

/* Frobenius bound for a compressed n x m tensor at rank r = n (<= m), per
 * step, in fp32 with unit roundoff u. With A the exact mean of the inputs
 * M_w (w over ranks), P^ the orthonormalized P (Householder QR in double,
 * rounded to fp32: ||P^ P^T - I|| <= 2 u sqrt(r) to first order; at rank n
 * its span is all of R^n, so whatever the P allreduce rounded does not
 * matter), Q = sum_w M_w^T P^ (each of its elements a sum of n products per
 * rank and W ranks: Higham's gamma_k bound, k = n + W) and M = P^ Q^T (sums
 * of r products):
 *   ||M - A||_F <= u [2 sqrt(r) ||A||_F + (n + W) sqrt(r) sum_w ||M_w||_F
 *                    + r sqrt(r) ||A||_F]
 * to first order; twice that covers the rest. Error feedback re-sends the
 * previous step's residual, bounded the same way, so a step's result is
 * compared with its own bound plus the previous step's. */
static double full_rank_bound(int n, int r, int world, double norm_a, double sum_norm_m) {
  double sr = sqrt((double)r);
  return 2 * U32 * (2 * sr * norm_a + (n + world) * sr * sum_norm_m + r * sr * norm_a);
}

static int full_rank_body(rt_comm *c, int rank, int size, const job *j) {
  const double rate = j->param ? 0.0 : 0.9;
  tmodel t;
  CHECK_OK(tmodel_init(&t, 4, FR_ROWS, FR_COLS, 0, 0));
  rt_compress_opts o;
  rt_compress_opts_default(&o);
  o.kind = CORE_COMPRESS_POWERSGD;
  o.rank = 64; /* clamped to min(n, m) per tensor: full rank */
  o.start_iter = 0;
  o.min_rate = rate;
  rt_compressor *h = NULL;
  CHECK_OK(rt_compress_create(&o, &t.m, &t.bk, &h));
  /* Which tensors are compressed, and at what rank. Rate 0.9:
   * W1 (208 * 8 * 0.9 = 1497.6 < 1600) only; b1 (9 * 0.9 = 8.1 >= 8),
   * W2 (12 * 4 * 0.9 = 43.2 >= 32), b2 (5 * 0.9 = 4.5 >= 4) are not.
   * Rate 0: all, the vectors as n x 1 at rank 1. */
  static const int want09[4] = {8, 0, 0, 0}, want0[4] = {8, 1, 4, 1};
  const int *want = j->param ? want0 : want09;
  int64_t p_el = 0, q_el = 0, unc_el = 0;
  for (int i = 0; i < 4; i++) {
    RTT_CHECK(rt_compress_tensor_rank(h, i) == want[i], "tensor %d: rank %d, want %d", i, rt_compress_tensor_rank(h, i),
        want[i]);
    p_el += FR_ROWS[i] * want[i];
    q_el += FR_COLS[i] * want[i];
    unc_el += want[i] ? 0 : t.elems[i];
  }
  const int64_t np = t.m.n_params;
  float *g = malloc(sizeof *g * (size_t)np), *mine = malloc(sizeof *mine * (size_t)np);
  double *a = malloc(sizeof *a * (size_t)np);
  if (!g || !mine || !a)
    return 4;
  double prev_bound[4] = {0};
  for (long s = 0; s < 3; s++) {
    double sum_norm[4] = {0}, norm_a[4] = {0};
    memset(a, 0, sizeof *a * (size_t)np);
    for (int r = 0; r < size; r++) {
      gradients(r, size, s, 5, NULL, 1.0, g, np);
      for (int ti = 0; ti < 4; ti++) {
        double nn = 0;
        for (int64_t i = t.off[ti]; i < t.off[ti] + t.elems[ti]; i++) {
          a[i] += g[i];
          nn += (double)g[i] * g[i];
        }
        sum_norm[ti] += sqrt(nn);
      }
      if (r == rank)
        memcpy(mine, g, sizeof *g * (size_t)np);
    }
    rt_compress_stats st;
    memset(&st, 0, sizeof st);
    CHECK_OK(hook_all(h, c, &t, mine, s, &st));
    for (int ti = 0; ti < 4; ti++) {
      double d2 = 0, a2 = 0;
      for (int64_t i = t.off[ti]; i < t.off[ti] + t.elems[ti]; i++) {
        d2 += ((double)mine[i] - a[i]) * ((double)mine[i] - a[i]);
        a2 += a[i] * a[i];
      }
      norm_a[ti] = sqrt(a2);
      double b = want[ti] ? full_rank_bound((int)FR_ROWS[ti], want[ti], size, norm_a[ti], sum_norm[ti])
                          : 2 * (size - 1) * U32 * sum_norm[ti]; /* a plain fp32 sum of W terms */
      RTT_CHECK(sqrt(d2) <= b + prev_bound[ti], "step %ld tensor %d (rank %d): |result - mean| = %.3g > bound %.3g", s,
          ti, want[ti], sqrt(d2), b + prev_bound[ti]);
      if (rank == 0 && s == 2 && ti == 0)
        fprintf(stderr, " [W1 8x200 at rank 8: error %.2g, bound %.2g]", sqrt(d2), b + prev_bound[ti]);
      prev_bound[ti] = b;
    }
    /* One allreduce each of the uncompressed tensors, all P, all Q. */
    RTT_CHECK(st.vanilla == 0 && st.bytes[RT_PHASE_BUCKET] == 0, "vanilla phase at step %ld", s);
    RTT_CHECK(st.bytes[RT_PHASE_P] == 4 * p_el && st.bytes[RT_PHASE_Q] == 4 * q_el &&
                  st.bytes[RT_PHASE_UNCOMPRESSED] == 4 * unc_el,
        "bytes P %lld (want %lld), Q %lld (want %lld), uncompressed %lld (want %lld)", (long long)st.bytes[RT_PHASE_P],
        (long long)(4 * p_el), (long long)st.bytes[RT_PHASE_Q], (long long)(4 * q_el),
        (long long)st.bytes[RT_PHASE_UNCOMPRESSED], (long long)(4 * unc_el));
    RTT_CHECK(st.allreduces[RT_PHASE_P] == 1 && st.allreduces[RT_PHASE_Q] == 1 &&
                  st.allreduces[RT_PHASE_UNCOMPRESSED] == (unc_el ? 1 : 0),
        "allreduces: %lld uncompressed, %lld P, %lld Q", (long long)st.allreduces[RT_PHASE_UNCOMPRESSED],
        (long long)st.allreduces[RT_PHASE_P], (long long)st.allreduces[RT_PHASE_Q]);
    RTT_CHECK(st.gemm_s > 0 && st.ortho_s > 0, "no compute recorded");
    RTT_CHECK(same_everywhere(c, mine, (size_t)np), "step %ld: ranks differ", s);
  }
  free(g);
  free(mine);
  free(a);
  rt_compress_free(h);
  core_bucket_free(&t.bk);
  return 0;
}

static void test_powersgd_full_rank(void) {
  run_job(2, full_rank_body, 0, "fullrank");
  run_job(3, full_rank_body, 0, "fullrank");
  run_job(2, full_rank_body, 1, "fullrank0");
  run_job(3, full_rank_body, 1, "fullrank0");
}

/* ---- error feedback --------------------------------------------------------------- */

/* Two layers, W1 16 x 24, b1 16, W2 6 x 16, b2 6, in two buckets (the
 * first one 256 bytes: b2 and W2 land in it); rank 1, rate 2: both weights
 * compressed, the biases not. Every rank's gradient is G + 0.3 N(0, 1), G a
 * fixed matrix of full rank, so the rank-1 approximation keeps missing the
 * same directions. */
static const int64_t EF_ROWS[4] = {16, 16, 6, 6}, EF_COLS[4] = {24, 1, 16, 1};
enum { EF_STEPS = 100 };

/* Returns 0 and the gap norms after each step in gap_norm[], and checks the
 * identity gap == sum over ranks of the error buffers after every step. */
static int ef_run(rt_comm *c, int rank, int size, int ef, double *gap_norm, double *g_norm) {
  tmodel t;
  CHECK_OK(tmodel_init(&t, 4, EF_ROWS, EF_COLS, 256, 4096));
  RTT_CHECK(t.bk.n_buckets == 2, "%d buckets", t.bk.n_buckets);
  rt_compress_opts o;
  rt_compress_opts_default(&o);
  o.kind = CORE_COMPRESS_POWERSGD;
  o.start_iter = 0;
  o.error_feedback = ef;
  rt_compressor *h = NULL;
  CHECK_OK(rt_compress_create(&o, &t.m, &t.bk, &h));
  RTT_CHECK(rt_compress_tensor_rank(h, 0) == 1 && rt_compress_tensor_rank(h, 1) == 0 &&
                rt_compress_tensor_rank(h, 2) == 1 && rt_compress_tensor_rank(h, 3) == 0,
      "compression decision");
  const int64_t np = t.m.n_params;
  float *base = malloc(sizeof *base * (size_t)np), *g = malloc(sizeof *g * (size_t)np);
  float *mine = malloc(sizeof *mine * (size_t)np), *errsum = malloc(sizeof *errsum * (size_t)np);
  double *gap = calloc((size_t)np, sizeof *gap), *truth = malloc(sizeof *truth * (size_t)np);
  if (!base || !g || !mine || !errsum || !gap || !truth)
    return 4;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, 99);
  double gn = 0;
  for (int64_t i = 0; i < np; i++) {
    base[i] = (float)gsl_ran_gaussian_ziggurat(rng, 1.0);
    gn += (double)base[i] * base[i];
  }
  *g_norm = sqrt(gn);
  gsl_rng_free(rng);
  double scale = 0; /* the largest sum |input| + |output| seen, for the rounding tolerance */
  for (long s = 0; s < EF_STEPS; s++) {
    memset(truth, 0, sizeof *truth * (size_t)np);
    for (int r = 0; r < size; r++) {
      gradients(r, size, s, 7, base, 0.3, g, np);
      for (int64_t i = 0; i < np; i++)
        truth[i] += g[i];
      if (r == rank)
        memcpy(mine, g, sizeof *g * (size_t)np);
    }
    CHECK_OK(hook_all(h, c, &t, mine, s, NULL));
    double n2 = 0, sc = 0;
    for (int64_t i = 0; i < np; i++) {
      gap[i] += truth[i] - (double)mine[i];
      n2 += gap[i] * gap[i];
      sc += (fabs(truth[i]) + fabs(mine[i])) * (fabs(truth[i]) + fabs(mine[i]));
    }
    gap_norm[s] = sqrt(n2);
    if (sqrt(sc) > scale)
      scale = sqrt(sc);
    if (!ef) {
      RTT_CHECK(
          rt_compress_error(h, 0) == NULL && rt_compress_error(h, 1) == NULL, "error buffers without error feedback");
      continue;
    }
    /* Sum over ranks of the error buffers (parameter layout). */
    for (int b = 0; b < t.bk.n_buckets; b++) {
      const float *e = rt_compress_error(h, b);
      RTT_CHECK(e != NULL, "no error buffer for bucket %d at step %ld", b, s);
      if (!e)
        return 6;
      unpack(&t, b, e, errsum);
    }
    CHECK_OK(rt_allreduce(c, errsum, (size_t)np, RT_FP32, RT_ALGO_DEFAULT));
    double d2 = 0;
    for (int64_t i = 0; i < np; i++)
      d2 += (gap[i] - errsum[i]) * (gap[i] - errsum[i]);
    /* Exact in real arithmetic (sum_r e_r,t = sum_t (true_t - out_t)); the
     * fp32 rounding of each step's error (input + error, input - output /
     * W, and this allreduce) adds at most a few u per element and step:
     * 4 (s + 1) W u times the largest input + output norm. */
    double tol = 4.0 * (double)(s + 1) * size * U32 * scale;
    RTT_CHECK(
        sqrt(d2) <= tol, "step %ld: |gap - sum of errors| = %.3g > %.3g (|gap| %.3g)", s, sqrt(d2), tol, gap_norm[s]);
  }
  free(base);
  free(g);
  free(mine);
  free(errsum);
  free(gap);
  free(truth);
  rt_compress_free(h);
  core_bucket_free(&t.bk);
  return 0;
}

static int ef_body(rt_comm *c, int rank, int size, const job *j) {
  (void)j;
  double with[EF_STEPS], without[EF_STEPS], gn, gn2;
  int rc = ef_run(c, rank, size, 1, with, &gn);
  if (rc)
    return rc;
  if ((rc = ef_run(c, rank, size, 0, without, &gn2)) != 0)
    return rc;
  /* With error feedback the gap is the current error, which stops growing
   * once the directions rank 1 misses have piled up enough for the power
   * iteration to pick them: (seen: about 8 |G| after 20 steps, then flat)
   * over steps 50..99 it stays within 1.5 times its largest value over
   * steps 20..49. It also stays below 2 k |G| (k = 16, the larger min(n, m)
   * of the compressed tensors), the steady state of a compressor that keeps
   * at least 1/k of |input|^2, as the best rank-1 approximation does
   * (e_t = x - C(x) with |e_t| <= sqrt(1 - 1/k) (|e_t-1| + |g|)); one
   * warm-started power iteration is not guaranteed to do as well, but
   * follows it. Without error feedback the gap grows linearly: from step 50
   * to 100 it at least 1.8 times (2 for exactly linear growth), and ends
   * far above the gap with it. */
  double mid = 0, late = 0;
  for (int s = 20; s < 50; s++)
    mid = with[s] > mid ? with[s] : mid;
  for (int s = 50; s < EF_STEPS; s++)
    late = with[s] > late ? with[s] : late;
  RTT_CHECK(late <= 1.5 * mid,
      "with error feedback the gap grew: steps 20-49 max %.3g, 50-99 max "
      "%.3g",
      mid, late);
  RTT_CHECK(late <= 2 * 16 * gn, "with error feedback the gap %.3g exceeds 2 k |G| = %.3g", late, 32 * gn);
  RTT_CHECK(without[EF_STEPS - 1] >= 1.8 * without[49],
      "without error feedback the gap did not grow: step 50 %.3g, step 100 %.3g", without[49], without[EF_STEPS - 1]);
  RTT_CHECK(without[EF_STEPS - 1] >= 5 * late,
      "without error feedback the gap (%.3g) is not well "
      "above the one with it (%.3g)",
      without[EF_STEPS - 1], late);
  if (rank == 0)
    fprintf(stderr, " [|gap| with EF: step 50 %.3g, 100 %.3g; without: %.3g, %.3g; |G| %.3g]", with[49],
        with[EF_STEPS - 1], without[49], without[EF_STEPS - 1], gn);
  return 0;
}

static void test_powersgd_error_feedback(void) {
  run_job(2, ef_body, 0, "ef");
  run_job(3, ef_body, 0, "ef");
}

/* ---- the vanilla phase -------------------------------------------------------------- */

static int vanilla_body(rt_comm *c, int rank, int size, const job *j) {
  (void)j;
  tmodel t;
  CHECK_OK(tmodel_init(&t, 4, EF_ROWS, EF_COLS, 256, 4096));
  rt_compress_opts o;
  rt_compress_opts_default(&o);
  CHECK_OK(rt_compress_parse("powersgd:2", &o));
  o.start_iter = 3;
  rt_compressor *h = NULL;
  CHECK_OK(rt_compress_create(&o, &t.m, &t.bk, &h));
  const int64_t np = t.m.n_params;
  float *mine = malloc(sizeof *mine * (size_t)np), *plain = malloc(sizeof *plain * (size_t)np);
  if (!mine || !plain)
    return 4;
  for (long s = 0; s < 5; s++) {
    gradients(rank, size, s, 11, NULL, 1.0, mine, np);
    memcpy(plain, mine, sizeof *mine * (size_t)np);
    rt_compress_stats st;
    memset(&st, 0, sizeof st);
    CHECK_OK(hook_all(h, c, &t, mine, s, &st));
    /* What PyTorch's vanilla phase runs: the same allreduce, bucket by
     * bucket, on the same inputs. */
    for (int b = 0; b < t.bk.n_buckets; b++) {
      float *buf = malloc(sizeof *buf * (size_t)t.bk.bucket_elems[b]);
      if (!buf)
        return 4;
      pack(&t, b, plain, buf);
      CHECK_OK(rt_allreduce(c, buf, (size_t)t.bk.bucket_elems[b], RT_FP32, RT_ALGO_DEFAULT));
      unpack(&t, b, buf, plain);
      free(buf);
    }
    int same = memcmp(mine, plain, sizeof *mine * (size_t)np) == 0;
    if (s < 3) {
      RTT_CHECK(same, "step %ld (before start 3): not the plain allreduce", s);
      RTT_CHECK(st.vanilla == t.bk.n_buckets && st.allreduces[RT_PHASE_BUCKET] == t.bk.n_buckets &&
                    st.bytes[RT_PHASE_BUCKET] == 4 * np && st.bytes[RT_PHASE_P] == 0 && st.bytes[RT_PHASE_Q] == 0,
          "step %ld stats: vanilla %lld, bucket allreduces %lld", s, (long long)st.vanilla,
          (long long)st.allreduces[RT_PHASE_BUCKET]);
      RTT_CHECK(rt_compress_error(h, 0) == NULL, "an error buffer before PowerSGD starts");
    } else {
      RTT_CHECK(!same, "step %ld (from start 3 on): still the plain allreduce", s);
      RTT_CHECK(st.vanilla == 0 && st.allreduces[RT_PHASE_P] == t.bk.n_buckets &&
                    st.allreduces[RT_PHASE_Q] == t.bk.n_buckets && st.bytes[RT_PHASE_BUCKET] == 0,
          "step %ld stats: vanilla %lld, P allreduces %lld", s, (long long)st.vanilla,
          (long long)st.allreduces[RT_PHASE_P]);
      RTT_CHECK(rt_compress_error(h, 0) != NULL, "no error buffer once PowerSGD runs");
    }
  }
  free(mine);
  free(plain);
  rt_compress_free(h);
  core_bucket_free(&t.bk);
  return 0;
}

static void test_powersgd_vanilla_phase(void) {
  run_job(2, vanilla_body, 0, "vanilla");
  run_job(3, vanilla_body, 0, "vanilla");
}

/* ---- prepare and finish apart ------------------------------------------------------- */

/* The DDP engine prepares buckets on its compute thread while others are
 * being finished on its communication thread: every bucket prepared before
 * any is finished must give bit for bit what the whole hook gives, step
 * after step (PowerSGD's warm start and error feedback carried along), and
 * the stages must alternate. */
static int split_body(rt_comm *c, int rank, int size, const job *j) {
  (void)j;
  static const char *const specs[] = {"powersgd:2", "fp16", "bf16"};
  tmodel t;
  CHECK_OK(tmodel_init(&t, 4, EF_ROWS, EF_COLS, 256, 4096));
  const int64_t np = t.m.n_params;
  float *whole = malloc(sizeof *whole * (size_t)np), *apart = malloc(sizeof *apart * (size_t)np);
  float **bufs = calloc((size_t)t.bk.n_buckets, sizeof *bufs);
  if (!whole || !apart || !bufs)
    return 4;
  for (int b = 0; b < t.bk.n_buckets; b++)
    if (!(bufs[b] = malloc(sizeof **bufs * (size_t)t.bk.bucket_elems[b])))
      return 4;
  for (int k = 0; k < 3; k++) {
    rt_compress_opts o;
    rt_compress_opts_default(&o);
    CHECK_OK(rt_compress_parse(specs[k], &o));
    o.start_iter = 1;
    rt_compressor *h1 = NULL, *h2 = NULL;
    CHECK_OK(rt_compress_create(&o, &t.m, &t.bk, &h1));
    CHECK_OK(rt_compress_create(&o, &t.m, &t.bk, &h2));
    for (long s = 0; s < 4; s++) {
      gradients(rank, size, s, 17, NULL, 1.0, whole, np);
      memcpy(apart, whole, sizeof *whole * (size_t)np);
      CHECK_OK(hook_all(h1, c, &t, whole, s, NULL));
      for (int b = 0; b < t.bk.n_buckets; b++) {
        pack(&t, b, apart, bufs[b]);
        CHECK_OK(rt_compress_prepare(h2, b, bufs[b], s, NULL));
      }
      for (int b = 0; b < t.bk.n_buckets; b++) {
        CHECK_OK(rt_compress_finish(h2, c, b, bufs[b], s, NULL));
        unpack(&t, b, bufs[b], apart);
      }
      RTT_CHECK(memcmp(whole, apart, sizeof *whole * (size_t)np) == 0,
          "%s step %ld: prepared apart differs from the whole hook", specs[k], s);
    }
    /* Out of turn: a finish without its prepare, a second prepare. */
    RTT_CHECK(rt_compress_finish(h2, c, 0, bufs[0], 4, NULL) == CORE_EINVAL, "%s: finish without prepare", specs[k]);
    CHECK_OK(rt_compress_prepare(h2, 0, bufs[0], 4, NULL));
    RTT_CHECK(rt_compress_prepare(h2, 0, bufs[0], 4, NULL) == CORE_EINVAL, "%s: prepared twice", specs[k]);
    RTT_CHECK(rt_compress_finish(h2, c, 0, bufs[0], 5, NULL) == CORE_EINVAL, "%s: finish of another step", specs[k]);
    rt_compress_free(h1);
    rt_compress_free(h2);
  }
  for (int b = 0; b < t.bk.n_buckets; b++)
    free(bufs[b]);
  free(bufs);
  free(whole);
  free(apart);
  core_bucket_free(&t.bk);
  return 0;
}

static void test_split(void) { run_job(2, split_body, 0, "split"); }

/* ---- through the DDP engine --------------------------------------------------------------- */

/* The model of test_rt_ddp: 24 -> 40 -> 32 -> 16 (ReLU, ReLU, none). */
static const int DDP_WIDTH[4] = {24, 40, 32, 16};
enum { DDP_BATCH = 4, DDP_STEPS = 6, DDP_START = 2 };

static int write_model(const char *dir, char *path, size_t n) {
  snprintf(path, n, "%s/model.cfg", dir);
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fprintf(f, "model = {\n  name = \"compress-test\";\n  loss = \"mse\";\n  layers = (\n");
  for (int l = 0; l < 3; l++)
    fprintf(f,
        "    { name = \"fc%d\"; type = \"linear\"; in = %d; out = %d; "
        "activation = \"%s\"; }%s\n",
        l + 1, DDP_WIDTH[l], DDP_WIDTH[l + 1], l < 2 ? "relu" : "none", l < 2 ? "," : "");
  fprintf(f, "  );\n};\n");
  return fclose(f);
}

static const char *const ddp_specs[] = {"powersgd:2", "fp16", "bf16"};

static int ddp_body(rt_comm *c, int rank, int size, const job *j) {
  const char *spec = ddp_specs[j->param];
  char path[700];
  snprintf(path, sizeof path, "%s/model.cfg", j->dir);
  if (rank == 0)
    RTT_CHECK(write_model(j->dir, path, sizeof path) == 0, "writing the model");
  CHECK_OK(rt_barrier(c)); /* the others read it once rank 0 has written it */
  core_model *m = NULL;
  CHECK_OK(core_model_load(path, &m));
  rt_ddp_opts o = {.bucket_cap_mb = 4096.0 / 1048576.0,
      .first_bucket_mb = 2048.0 / 1048576.0,
      .overlap = 1,
      .algo = RT_ALGO_DEFAULT,
      .lr = 0.05,
      .momentum = 0.9,
      .fail_step = -1};
  rt_compress_opts_default(&o.compress);
  CHECK_OK(rt_compress_parse(spec, &o.compress));
  o.compress.start_iter = DDP_START;
  rt_ddp *d = NULL;
  CHECK_OK(rt_ddp_create(m, c, DDP_BATCH, &o, 100 + (uint64_t)rank, &d));
  int nb = rt_ddp_buckets(d)->n_buckets;
  RTT_CHECK(nb >= 3, "%d buckets", nb);
  rt_data *data = NULL;
  CHECK_OK(rt_data_create(64, DDP_WIDTH[0], DDP_WIDTH[3], 7, rank, size, 1, &data));
  rt_mlp *net = rt_ddp_mlp(d);
  float x[DDP_BATCH * 24], tg[DDP_BATCH * 16];
  int psgd = o.compress.kind == CORE_COMPRESS_POWERSGD;
  for (long s = 0; s < DDP_STEPS; s++) {
    rt_step_metrics sm;
    CHECK_OK(rt_data_next(data, DDP_BATCH, x, tg));
    CHECK_OK(rt_ddp_step(d, s, x, tg, &sm, NULL, 0));
    RTT_CHECK(isfinite(sm.loss) && sm.comm_s > 0, "step %ld: loss %g comm %g", s, sm.loss, sm.comm_s);
    RTT_CHECK(sm.compress.buckets == nb, "step %ld: the hook ran %lld times for %d buckets", s,
        (long long)sm.compress.buckets, nb);
    if (psgd && s < DDP_START)
      RTT_CHECK(
          sm.compress.vanilla == nb && sm.compress.allreduces[RT_PHASE_P] == 0, "step %ld: not the vanilla phase", s);
    else if (psgd)
      RTT_CHECK(sm.compress.vanilla == 0 && sm.compress.allreduces[RT_PHASE_P] > 0 &&
                    rt_compress_stats_bytes(&sm.compress) < 4 * m->n_params,
          "step %ld: PowerSGD did not run (%lld bytes of %lld)", s, (long long)rt_compress_stats_bytes(&sm.compress),
          (long long)(4 * m->n_params));
    else
      RTT_CHECK(rt_compress_stats_bytes(&sm.compress) == 2 * m->n_params, "step %ld: %lld bytes, want %lld", s,
          (long long)rt_compress_stats_bytes(&sm.compress), (long long)(2 * m->n_params));
    RTT_CHECK(same_everywhere(c, net->params, (size_t)net->n_params),
        "%s: parameters differ across ranks after step %ld", spec, s);
  }
  rt_data_free(data);
  rt_ddp_free(d);
  core_model_free(m);
  return 0;
}

static void test_ddp_identical(void) {
  run_job(2, ddp_body, 0, "ddp-psgd");
  run_job(3, ddp_body, 0, "ddp-psgd");
  run_job(2, ddp_body, 1, "ddp-fp16");
  run_job(3, ddp_body, 2, "ddp-bf16");
}

void test_register(void) {
  CU_pSuite s = CU_add_suite("compress", NULL, NULL);
  CU_add_test(s, "parse", test_parse);
  CU_add_test(s, "compression rule", test_rule);
  CU_add_test(s, "Gloo bf16 allreduce rounds to nearest even", test_bf16_allreduce);
  CU_add_test(s, "fp16 hook within fp16 rounding", test_fp16_hook);
  CU_add_test(s, "bf16 hook within bf16 rounding", test_bf16_hook);
  CU_add_test(s, "PowerSGD at full rank is the mean", test_powersgd_full_rank);
  CU_add_test(s, "PowerSGD error feedback keeps the gap bounded", test_powersgd_error_feedback);
  CU_add_test(s, "PowerSGD vanilla phase is a plain allreduce", test_powersgd_vanilla_phase);
  CU_add_test(s, "prepare and finish apart equal the whole hook", test_split);
  CU_add_test(s, "DDP with hooks keeps ranks identical", test_ddp_identical);
}

/*
 * phase_hooks — a CPU calibration's communication hooks: the real hooks of
 * the runtime (runtime/compress.h) run on the first model's buckets on every
 * rank at once, and the profile keeps their compute: the cast rates of fp16
 * and bf16, the backend's sums per type, PowerSGD's orthogonalization, GEMM
 * and pass rates, and PowerSGD's wait per allreduce in training steps of
 * every model (phase_psgd_sync.c). docs/calibration.md, "Communication
 * hooks", says why each is measured as it is.
 */
#include "calibrate/calibrate_int.h"

#include "calibrate/compute.h"

#include "runtime/compress.h"

#include "core/bucket.h"
#include "core/err.h"
#include "core/model.h"

#include <gsl/gsl_statistics_double.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PASSES = 7 }; /* timed passes of each cast hook, and PowerSGD's timed steps */

/* What the hooks run on: the first model, its buckets as DDP assigns them,
 * a buffer of the largest bucket, and gradients of the model's first
 * training step (divided by the world size, as DDP divides them). */
typedef struct bench {
  core_model *m;
  core_buckets bk;
  float *buf;
  float *grad; /* this rank's, from its own shard of the data */
  float *peer; /* another rank's (of at least two), for the sums */
  int64_t n_grad, n_peer;
} bench;

/* What the phase measured, each combined over ranks as noted. */
typedef struct hook_rates {
  double half_ar_s[3];                       /* a pass of allreduces over the buckets: fp32, fp16, bf16 (mean) */
  double cast_GBps[2];                       /* fp16, bf16 casts, bytes moved per second (from the mean times) */
  double orth_flops, gemm_bytes, pass_bytes; /* PowerSGD's work, this rank's count */
  double orth_s, gemm_s, pass_s;             /* and the seconds it took (mean) */
  double sync_us;                            /* PowerSGD's wait per allreduce, the first model's (mean) */
  double sum_GBps[3];                        /* the backend's sums: fp32, fp16, bf16 */
} hook_rates;

static void bench_close(bench *b) {
  free(b->buf);
  free(b->grad);
  free(b->peer);
  core_bucket_free(&b->bk);
  core_model_free(b->m);
}

static int bench_open(cal_ctx *r, bench *b) {
  int rc;
  memset(b, 0, sizeof *b);
  if ((rc = core_model_load(r->o->models[0], &b->m)) != 0)
    return rc;
  const core_model *m = b->m;
  if ((rc = core_bucket_assign(m->tensor_elems, m->n_tensors, m->ready_order, sizeof(float), CORE_BUCKET_FIRST_BYTES,
           (size_t)(CORE_BUCKET_DEFAULT_CAP_MB * 1048576), CORE_BUCKET_REBUILT, &b->bk)) != 0)
    goto out_close;
  int64_t maxb = 0;
  for (int k = 0; k < b->bk.n_buckets; k++)
    if (b->bk.bucket_elems[k] > maxb)
      maxb = b->bk.bucket_elems[k];
  if (!(b->buf = malloc(sizeof *b->buf * (size_t)maxb))) {
    rc = core_err_set(CORE_ENOMEM, "out of memory measuring hooks");
    goto out_close;
  }
  int world = r->pg.world_size, peers = world > 1 ? world : 2;
  if ((rc = cal_model_gradient(m, r->o->batch, r->pg.rank, world, &b->grad, &b->n_grad)) != 0 ||
      (rc = cal_model_gradient(m, r->o->batch, (r->pg.rank + 1) % peers, peers, &b->peer, &b->n_peer)) != 0)
    goto out_close;
  return 0;
out_close:
  bench_close(b);
  memset(b, 0, sizeof *b);
  return rc;
}

/* reps + 1 passes over the buckets, the three kinds (none, fp16, bf16)
 * taking turns pass by pass; every pass but the first timed into comm_s
 * and cast_s. */
static int cast_passes(cal_ctx *r, const bench *b, rt_compressor *const cc[3], int reps, double comm_s[3][MAX_PASSES],
    double cast_s[3][MAX_PASSES]) {
  int rc;
  for (int rep = 0; rep <= reps; rep++)
    for (int k = 0; k < 3; k++) {
      rt_compress_stats st;
      memset(&st, 0, sizeof st);
      for (int bi = 0; bi < b->bk.n_buckets; bi++) {
        for (int64_t i = 0; i < b->bk.bucket_elems[bi]; i++)
          b->buf[i] = b->grad[i % b->n_grad] / (float)r->pg.world_size;
        if ((rc = rt_compress_bucket(cc[k], r->world, bi, b->buf, rep, &st)) != 0)
          return rc;
      }
      if (rep) {
        comm_s[k][rep - 1] = st.comm_s;
        cast_s[k][rep - 1] = st.cast_s;
      }
    }
  return 0;
}

/* fp16 and bf16, cast down and back, (4 + 2) x 2 bytes moved per element;
 * timed apart, as bf16 keeps the top half of a float where fp16 rebiases and
 * rounds. The same loop without a hook times the fp32 allreduces of these
 * buckets, for the half-precision ones to be set against (docs/calibration.md). */
static int measure_casts(cal_ctx *r, const bench *b, hook_rates *h) {
  static const enum core_compress kinds[3] = {CORE_COMPRESS_NONE, CORE_COMPRESS_FP16, CORE_COMPRESS_BF16};
  const int reps = r->o->quick ? 3 : MAX_PASSES;
  double comm_s[3][MAX_PASSES], cast_s[3][MAX_PASSES];
  rt_compressor *cc[3] = {NULL, NULL, NULL};
  rt_compress_opts o;
  rt_compress_opts_default(&o);
  int rc = 0;
  for (int k = 0; k < 3; k++) {
    o.kind = kinds[k];
    if ((rc = rt_compress_create(&o, b->m, &b->bk, &cc[k])) != 0)
      goto out_free;
  }
  if ((rc = cast_passes(r, b, cc, reps, comm_s, cast_s)) != 0)
    goto out_free;
  /* Each kind's mean pass, as training pays for every pass; then the mean over ranks. */
  double per_rank[5];
  for (int k = 0; k < 3; k++)
    per_rank[k] = gsl_stats_mean(comm_s[k], 1, (size_t)reps);
  for (int k = 1; k < 3; k++)
    per_rank[k + 2] = gsl_stats_mean(cast_s[k], 1, (size_t)reps);
  if ((rc = cal_mean_over_ranks(r->world, r->bufs, per_rank, 5)) != 0)
    goto out_free;
  for (int k = 0; k < 3; k++)
    h->half_ar_s[k] = per_rank[k];
  for (int k = 1; k < 3; k++)
    h->cast_GBps[k - 1] = per_rank[k + 2] > 0 ? 12.0 * (double)b->m->n_params / per_rank[k + 2] / 1e9 : 0;
out_free:
  for (int k = 0; k < 3; k++)
    rt_compress_free(cc[k]);
  return rc;
}

/* PowerSGD's work in `steps` steps of compressor c, counted as sim/predict.c
 * counts it: each step orthogonalizes P (and, warm, Q). */
static void psgd_work(const rt_compressor *c, const core_model *m, double steps, hook_rates *h) {
  for (int t = 0; t < m->n_tensors; t++) {
    int rt = rt_compress_tensor_rank(c, t);
    double n = (double)m->tensor_rows[t], el = (double)m->tensor_elems[t], mm = el / n;
    if (rt > 0) {
      h->orth_flops += steps * 2.0 * (n + mm) * rt * rt;
      h->gemm_bytes += steps * 3.0 * 4.0 * (el + (n + mm) * rt);
      h->pass_bytes += steps * 2.0 * 3.0 * 4.0 * el;
    } else {
      h->pass_bytes += steps * 2.0 * 4.0 * el;
    }
  }
}

/* PowerSGD's steps with compressor c: the first (a random Q, nothing to
 * warm-start from) untimed, then each step's orthogonalization, GEMM and
 * pass seconds into step_t. */
static int psgd_steps(cal_ctx *r, const bench *b, rt_compressor *c, int steps, double step_t[3][MAX_PASSES]) {
  int rc;
  for (int step = 0; step < steps; step++) {
    rt_compress_stats st;
    memset(&st, 0, sizeof st);
    for (int bi = 0; bi < b->bk.n_buckets; bi++) {
      for (int64_t i = 0; i < b->bk.bucket_elems[bi]; i++)
        b->buf[i] = (float)((i * 31 + step) % 101) * 1e-3f;
      if ((rc = rt_compress_bucket(c, r->world, bi, b->buf, step, &st)) != 0)
        return rc;
    }
    if (step) {
      step_t[0][step - 1] = st.ortho_s;
      step_t[1][step - 1] = st.gemm_s;
      step_t[2][step - 1] = st.copy_s;
    }
  }
  return 0;
}

/* PowerSGD at ranks 1, 2 and 4: its work over its times, the ranks' means.
 * Its allreduces are timed in training steps (measure_sync). */
static int measure_psgd(cal_ctx *r, const bench *b, hook_rates *h) {
  const int steps = r->o->quick ? 3 : MAX_PASSES + 1;
  double times[3] = {0, 0, 0}; /* orthogonalization, GEMMs, passes */
  double step_t[3][MAX_PASSES];
  rt_compress_opts o;
  rt_compress_opts_default(&o);
  int rc = 0;
  for (int rank = 1; rank <= 4; rank *= 2) {
    rt_compressor *c = NULL;
    o.kind = CORE_COMPRESS_POWERSGD;
    o.rank = rank;
    o.start_iter = 0;
    if ((rc = rt_compress_create(&o, b->m, &b->bk, &c)) != 0)
      return rc;
    if ((rc = psgd_steps(r, b, c, steps, step_t)) == 0) {
      double k = steps - 1;
      for (int i = 0; i < 3; i++)
        times[i] += k * gsl_stats_mean(step_t[i], 1, (size_t)(steps - 1));
      psgd_work(c, b->m, k, h);
    }
    rt_compress_free(c);
    if (rc)
      return rc;
  }
  if ((rc = cal_mean_over_ranks(r->world, r->bufs, times, 3)) != 0)
    return rc;
  h->orth_s = times[0];
  h->gemm_s = times[1];
  h->pass_s = times[2];
  return 0;
}

/* The wait of PowerSGD's allreduces, for every model: the profile keeps
 * the first's, each measured model file its own (core/model.h). */
static int measure_sync(cal_ctx *r, const bench *b, hook_rates *h) {
  for (int k = 0; k < r->o->n_models; k++) {
    core_model *mk = b->m;
    double us;
    int rc;
    if (k && (rc = core_model_load(r->o->models[k], &mk)) != 0)
      return rc;
    rc = cal_psgd_sync(r, mk, &us);
    if (mk != b->m)
      core_model_free(mk);
    if (rc)
      return rc;
    if (!k)
      h->sync_us = us;
    cal_windows_set_psgd_sync(r, k, us);
  }
  return 0;
}

/* The sums inside Gloo's allreduces, per type, on this model's gradient
 * divided by the world size as DDP divides it (fp16 sums slowly through
 * subnormal halves). Where there are ranks to allreduce with, the rate the
 * allreduces just timed show, as the simulator's pipelined ring
 * (sim/predict.c) spends it: of an allreduce of half the fp32 bytes,
 * t = net / 2 + max(net / 2, sum), net at the fp32 allreduce's rate, the sum
 * over the (p - 1) / p of the bytes each rank reduces; where the sum hides
 * behind the network it cannot be seen, and the rate alone stays. */
static int measure_sums(cal_ctx *r, const bench *b, hook_rates *h) {
  int world = r->pg.world_size;
  int rc = cal_sum_rates(b->grad, b->peer, b->n_grad < b->n_peer ? b->n_grad : b->n_peer, 1.0 / world,
      r->o->quick ? (4 << 20) : (16 << 20), h->sum_GBps);
  if (rc)
    return rc;
  for (int k = 1; k < 3 && world > 1 && h->half_ar_s[0] > 0; k++) {
    double net = h->half_ar_s[0] / 2, s = h->half_ar_s[k] - net / 2;
    double bytes = 2.0 * (double)b->m->n_params * (world - 1) / world;
    if (s > net / 2 && bytes / s / 1e9 < h->sum_GBps[k])
      h->sum_GBps[k] = bytes / s / 1e9;
  }
  return 0;
}

static void record(cal_ctx *r, const hook_rates *h) {
  core_profile *p = r->prof;
  p->cast_GBps = h->cast_GBps[0];
  p->cast_bf16_GBps = h->cast_GBps[1];
  p->orth_gflops = h->orth_s > 0 && h->orth_flops > 0 ? h->orth_flops / h->orth_s / 1e9 : 0;
  p->psgd_gemm_GBps = h->gemm_s > 0 && h->gemm_bytes > 0 ? h->gemm_bytes / h->gemm_s / 1e9 : 0;
  p->psgd_pass_GBps = h->pass_s > 0 && h->pass_bytes > 0 ? h->pass_bytes / h->pass_s / 1e9 : 0;
  p->psgd_sync_us = h->sync_us > 0 ? h->sync_us : 0;
  p->sum_fp32_GBps = h->sum_GBps[0];
  p->sum_fp16_GBps = h->sum_GBps[1];
  p->sum_bf16_GBps = h->sum_GBps[2];
  cal_say(r, "  hooks: casts %.2f GB/s moved for fp16, %.2f for bf16; PowerSGD orthogonalization %.3f GFLOP/s",
      p->cast_GBps, p->cast_bf16_GBps, p->orth_gflops);
  cal_say(r, "  PowerSGD GEMMs %.2f GB/s streamed, its passes %.2f GB/s moved, %.0f us more per allreduce",
      p->psgd_gemm_GBps, p->psgd_pass_GBps, p->psgd_sync_us);
  cal_say(r,
      "  Gloo sums: fp32 %.2f, fp16 %.2f, bf16 %.2f GB/s (allreduces of the buckets: fp32 %.1f ms, fp16 %.1f, "
      "bf16 %.1f)",
      h->sum_GBps[0], h->sum_GBps[1], h->sum_GBps[2], h->half_ar_s[0] * 1e3, h->half_ar_s[1] * 1e3,
      h->half_ar_s[2] * 1e3);
}

int cal_phase_hooks(cal_ctx *r) {
  if (r->nccl) {
    cal_say(r, "communication hooks: skipped (the runtime's hooks run on CPUs)");
    return 0;
  }
  cal_say(r, "communication hooks on %s", r->o->n_models ? r->o->models[0] : "(no model)");
  if (!r->o->n_models)
    return 0;
  bench b;
  hook_rates h = {0};
  int rc = bench_open(r, &b);
  if (rc)
    return rc;
  if ((rc = measure_casts(r, &b, &h)) == 0 && (rc = measure_psgd(r, &b, &h)) == 0 &&
      (rc = measure_sync(r, &b, &h)) == 0 && (rc = measure_sums(r, &b, &h)) == 0 && r->pg.rank == 0)
    record(r, &h);
  bench_close(&b);
  return rc;
}

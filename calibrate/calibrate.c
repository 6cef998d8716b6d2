/* sched_getaffinity and CPU_AND: which ranks share this one's CPUs. */
#define _GNU_SOURCE
#include "calibrate/calibrate_int.h"

#include "calibrate/compute.h"
#include "calibrate/compute_gpu.h"
#include "calibrate/fit.h"
#include "calibrate/jitter.h"
#include "calibrate/sweep.h"

#include "runtime/ckpt.h"
#include "runtime/compress.h"
#include "runtime/data.h"
#include "runtime/ddp.h"
#include "runtime/mlp.h"
#include "runtime/gloo.h"
#include "runtime/gpu.h"
#include "runtime/nccl.h"
#include "runtime/pg.h"

#include "core/afile.h"
#include "core/bucket.h"
#include "core/err.h"
#include "core/model.h"
#include "core/profile.h"

#include <gsl/gsl_statistics_double.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef DDPSIM_VERSION
#define DDPSIM_VERSION "0.0.0"
#endif

/* OpenBLAS reports its build (cblas.h; declared here to keep GSL's and
 * OpenBLAS's CBLAS headers out of one file). */
char *openblas_get_config(void);

void cal_say(const cal_ctx *r, const char *fmt, ...) {
  if (!r->progress || r->pg.rank != 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[%6.1f s] ", rt_now() - r->t0);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int cal_connect(cal_ctx *r, rt_store *st, int rank, int size, enum rt_algo algo, rt_comm **out) {
  if (r->nccl)
    return rt_nccl_connect_algo(st, rank, size, r->device, r->o->timeout_s, algo, out);
  return rt_gloo_connect(st, rank, size, r->bind, r->o->timeout_s, out);
}

int cal_sub_group(cal_ctx *r, const char *prefix, int rank, int size, enum rt_algo algo, rt_comm **out) {
  rt_store *st;
  int rc = rt_pg_open_store(r->spec, prefix, &st);
  if (rc)
    return rc;
  rc = cal_connect(r, st, rank, size, algo, out);
  rt_store_close(st);
  return rc;
}

/* Max over ranks of a few doubles (gathered as raw bytes; through device
 * staging on NCCL communicators). */
static int max_over_ranks(const cal_ctx *r, rt_comm *c, double *v, int n) {
  return cal_max_over_ranks(c, r->bufs, v, n);
}

/* The ranks of the job that share this rank's CPUs: those whose kernel has
 * this one's boot id and whose CPU mask meets this one's (without a boot id,
 * at least this node's). Hosts that are network namespaces or containers of
 * one machine share its CPUs, which neither a rank's CPU mask nor its cgroup
 * shows (docs/calibration.md). Ranks bound to CPUs of their own (ddpsim
 * launch --cpu-bind) do not share them. The ids and masks go through an
 * allgather of fp32 words, copied as bits. */
static int ranks_sharing_cpus(cal_ctx *r, int *out) {
  char id[64] = "";
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(id, sizeof id, f))
      id[0] = '\0';
    fclose(f);
  }
  struct {
    uint64_t boot; /* FNV-1a of the id; without one, a value no other rank has */
    cpu_set_t cpus;
  } me, *all;
  memset(&me, 0, sizeof me);
  me.boot = 1469598103934665603ULL;
  for (const char *c = id; *c && *c != '\n'; c++)
    me.boot = (me.boot ^ (unsigned char)*c) * 1099511628211ULL;
  if (!id[0])
    me.boot = ~(uint64_t)r->pg.rank;
  if (sched_getaffinity(0, sizeof me.cpus, &me.cpus) != 0)
    memset(&me.cpus, 0xff, sizeof me.cpus); /* unknown: may meet anyone's */
  _Static_assert(sizeof me % sizeof(float) == 0, "allgathered as fp32 words");
  size_t words = sizeof me / sizeof(float);
  int world = r->pg.world_size, n = 0, rc;
  if (!(all = malloc(sizeof *all * (size_t)world)))
    return core_err_set(CORE_ENOMEM, "out of memory");
  if ((rc = rt_allgather(r->world, &me, all, words, RT_FP32)) == 0)
    for (int k = 0; k < world; k++) {
      cpu_set_t both;
      CPU_AND(&both, &all[k].cpus, &me.cpus);
      n += all[k].boot == me.boot && CPU_COUNT(&both) > 0;
    }
  free(all);
  *out = (id[0] || n > r->pg.local_world_size) ? n : r->pg.local_world_size;
  return rc;
}

/* PowerSGD's allreduces as training meets them: real DDP steps of m
 * (runtime/ddp.h: the hook's body beside the backward pass, its allreduces
 * and callbacks on the communication thread) from ddpsim train's defaults
 * (data and seed 1, 25 MB buckets, SGD with momentum), with the hook at
 * ranks 1, 2 and 4, `steps` timed steps each after an untimed first one.
 * Adds up the allreduces' count, bytes and seconds on this rank. */
static int psgd_train_allreduces(cal_ctx *r, const core_model *m, int steps, double *n, double *bytes, double *secs) {
  int L = m->n_layers, in = m->layers[0].in, out = m->layers[L - 1].out, rc = 0;
  float *x = malloc(sizeof *x * (size_t)r->o->batch * (size_t)in);
  float *target = malloc(sizeof *target * (size_t)r->o->batch * (size_t)out);
  if (!x || !target) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for PowerSGD's training steps");
    goto out_free;
  }
  for (int rank = 1; rank <= 4 && !rc; rank *= 2) {
    rt_ddp_opts dop;
    rt_ddp_opts_default(&dop);
    dop.compress.kind = RT_COMPRESS_POWERSGD;
    dop.compress.rank = rank;
    dop.compress.start_iter = 0;
    rt_ddp *d = NULL;
    rt_data *data = NULL;
    if ((rc = rt_ddp_create(m, r->world, r->o->batch, &dop, RT_DATA_DEFAULT_SEED, &d)) != 0 ||
        (rc = rt_data_create(RT_DATA_DEFAULT_SIZE, in, out, RT_DATA_DEFAULT_SEED, r->pg.rank, r->pg.world_size, 1,
                             &data)) != 0)
      goto out_step;
    for (int step = 0; step <= steps; step++) {
      rt_step_metrics sm;
      if ((rc = rt_data_next(data, r->o->batch, x, target)) != 0 ||
          (rc = rt_ddp_step(d, step, x, target, &sm, NULL, 0)) != 0)
        goto out_step;
      if (!step)
        continue;
      for (int ph = 0; ph < RT_COMPRESS_N_PHASES; ph++) {
        *n += (double)sm.compress.allreduces[ph];
        *bytes += (double)sm.compress.bytes[ph];
      }
      *secs += sm.compress.comm_s;
    }
  out_step:
    rt_data_free(data);
    rt_ddp_free(d);
  }
out_free:
  free(x);
  free(target);
  return rc;
}

/* PowerSGD's wait per allreduce in model m's training steps, beyond the same
 * allreduce back to back (*sync_us, the ranks' mean; 0 without allreduces):
 * what they take beyond the sweep's regime, which the fits describe. Timed
 * in eight training steps a rank, since alone or in fewer steps they came
 * out short or scattered (docs/calibration.md). */
static int psgd_sync(cal_ctx *r, const core_model *m, double *sync_us) {
  double n = 0, bytes = 0, t[2] = {0, 0}; /* seconds in training steps; one back to back */
  int rc = psgd_train_allreduces(r, m, r->o->quick ? 2 : 8, &n, &bytes, &t[0]);
  if (rc)
    return rc;
  /* The same size back to back, after the hook's steps: the fastest of 31
   * (a median sat in stalls now and then: docs/calibration.md). */
  if (n > 0) {
    cal_point bb;
    if ((rc = cal_sweep_one(r->world, CAL_ALLREDUCE, RT_ALGO_DEFAULT, bytes / n, 2, 31, &bb)) != 0)
      return rc;
    t[1] = bb.t_min_s;
  }
  if ((rc = cal_mean_over_ranks(r->world, r->bufs, t, 2)) != 0)
    return rc;
  /* Averaged over ranks, as the step sees both. */
  *sync_us = 0;
  if (n > 0) {
    double us = (t[0] / n - t[1]) * 1e6;
    *sync_us = us > 0 ? us : 0;
    cal_say(r, "  PowerSGD's allreduces on %s: %.0f us each in training steps, %.0f us back to back (fastest; %.0f bytes)",
        m->name, t[0] / n * 1e6, t[1] * 1e6, bytes / n);
  }
  return 0;
}

/* Hook costs: run the real hooks of the runtime on
 * the first model's buckets on every rank at once, and keep their compute:
 * the cast rates of fp16 and bf16 (bytes read and written per second), PowerSGD's
 * orthogonalization rate (2 n r^2 FLOPs per compressed tensor, ranks 1, 2
 * and 4, after warm-up steps); and PowerSGD's wait per allreduce in
 * training steps of every model (psgd_sync). */
static int hooks_part(cal_ctx *r) {
  core_model *m = NULL;
  core_buckets bk = {0};
  float *buf = NULL, *grad = NULL, *peer = NULL;
  int64_t n_grad = 0, n_peer = 0;
  rt_compressor *c = NULL;
  int rc;
  if (!r->o->n_models)
    return 0;
  if ((rc = core_model_load(r->o->models[0], &m)) != 0)
    return rc;
  if ((rc = core_bucket_assign(m->tensor_elems, m->n_tensors, m->ready_order, sizeof(float), CORE_BUCKET_FIRST_BYTES,
                               (size_t)(CORE_BUCKET_DEFAULT_CAP_MB * 1048576), CORE_BUCKET_REBUILT, &bk)) != 0)
    goto out;
  int64_t maxb = 0;
  for (int b = 0; b < bk.n_buckets; b++)
    if (bk.bucket_elems[b] > maxb)
      maxb = bk.bucket_elems[b];
  if (!(buf = malloc(sizeof *buf * (size_t)maxb))) {
    rc = core_err_set(CORE_ENOMEM, "out of memory measuring hooks");
    goto out;
  }
  /* fp16 and bf16: cast down and back, (4 + 2) x 2 bytes moved per element.
   * Timed apart: bf16 keeps the top half of a float, where fp16 rebiases
   * and rounds, and converts subnormal halves through the FPU. */
  rt_compress_opts o;
  rt_compress_opts_default(&o);
  rt_compress_stats st;
  /* Casts on the model's own gradient (divided by the world size, as DDP
   * divides it): converting small values is slower than typical ones. Each
   * rank's from its own shard of the data, as in training (Gloo sums halves
   * faster when every rank sends the same ones: docs/calibration.md). The
   * sums alone add another rank's (of at least two). */
  int world = r->pg.world_size, peers = world > 1 ? world : 2;
  if ((rc = cal_model_gradient(m, r->o->batch, r->pg.rank, world, &grad, &n_grad)) != 0 ||
      (rc = cal_model_gradient(m, r->o->batch, (r->pg.rank + 1) % peers, peers, &peer, &n_peer)) != 0)
    goto out;
  /* The same loop without a hook times the fp32 allreduces of these
   * buckets, for the half-precision ones to be set against (half_ar_s: a
   * pass over the buckets). The three kinds take turns, pass by pass, after
   * an untimed pass each, as the machine's speed drifts over seconds; each
   * keeps its mean pass, as training pays for every pass, then the mean
   * over ranks (docs/calibration.md). */
  enum { MAX_PASSES = 7 }; /* timed passes of each hook, and PowerSGD's timed steps */
  const int half_reps = r->o->quick ? 3 : MAX_PASSES;
  double cast_GBps[2], half_ar_s[3], cast_s[3];
  static const enum rt_compress_kind cast_kinds[3] = {RT_COMPRESS_NONE, RT_COMPRESS_FP16, RT_COMPRESS_BF16};
  rt_compressor *cc[3] = {NULL, NULL, NULL};
  double pass_comm[3][MAX_PASSES], pass_cast[3][MAX_PASSES];
  for (int k = 0; k < 3; k++) {
    o.kind = cast_kinds[k];
    if ((rc = rt_compress_create(&o, m, &bk, &cc[k])) != 0)
      goto out_casts;
  }
  for (int rep = 0; rep <= half_reps; rep++)
    for (int k = 0; k < 3; k++) {
      memset(&st, 0, sizeof st);
      for (int b = 0; b < bk.n_buckets; b++) {
        for (int64_t i = 0; i < bk.bucket_elems[b]; i++)
          buf[i] = grad[i % n_grad] / (float)r->pg.world_size;
        if ((rc = rt_compress_bucket(cc[k], r->world, b, buf, rep, &st)) != 0)
          goto out_casts;
      }
      if (rep) {
        pass_comm[k][rep - 1] = st.comm_s;
        pass_cast[k][rep - 1] = st.cast_s;
      }
    }
  for (int k = 0; k < 3; k++) {
    half_ar_s[k] = gsl_stats_mean(pass_comm[k], 1, (size_t)half_reps);
    cast_s[k] = gsl_stats_mean(pass_cast[k], 1, (size_t)half_reps);
  }
  double per_rank[5] = {half_ar_s[0], half_ar_s[1], half_ar_s[2], cast_s[1], cast_s[2]};
  if ((rc = cal_mean_over_ranks(r->world, r->bufs, per_rank, 5)) != 0)
    goto out_casts;
  for (int k = 0; k < 3; k++)
    half_ar_s[k] = per_rank[k];
  for (int k = 1; k < 3; k++)
    cast_GBps[k - 1] = per_rank[k + 2] > 0 ? 12.0 * (double)m->n_params / per_rank[k + 2] / 1e9 : 0;
out_casts:
  for (int k = 0; k < 3; k++)
    rt_compress_free(cc[k]);
  if (rc)
    goto out;
  /* PowerSGD, ranks 1, 2, 4: orthogonalization FLOPs over its time; the
   * GEMMs' operand bytes and the passes' bytes, counted as sim/predict.c
   * counts them, over their times. The first step (a random Q, nothing to
   * warm-start from) is not measured; the ranks' means of the others are
   * taken. Its allreduces are timed in training steps below. */
  const int psgd_steps = r->o->quick ? 3 : MAX_PASSES + 1;
  double of = 0, gbytes = 0, pbytes = 0;
  double times[3] = {0, 0, 0}; /* orthogonalization, GEMMs, passes */
  double step_t[3][MAX_PASSES];
  for (int rank = 1; rank <= 4; rank *= 2) {
    o.kind = RT_COMPRESS_POWERSGD;
    o.rank = rank;
    o.start_iter = 0;
    if ((rc = rt_compress_create(&o, m, &bk, &c)) != 0)
      goto out;
    for (int step = 0; step < psgd_steps; step++) {
      memset(&st, 0, sizeof st);
      for (int b = 0; b < bk.n_buckets; b++) {
        for (int64_t i = 0; i < bk.bucket_elems[b]; i++)
          buf[i] = (float)((i * 31 + step) % 101) * 1e-3f;
        if ((rc = rt_compress_bucket(c, r->world, b, buf, step, &st)) != 0)
          goto out;
      }
      if (step) {
        step_t[0][step - 1] = st.ortho_s;
        step_t[1][step - 1] = st.gemm_s;
        step_t[2][step - 1] = st.copy_s;
      }
    }
    /* Each measured step orthogonalizes P (and, warm, Q). */
    double k = psgd_steps - 1;
    for (int i = 0; i < 3; i++)
      times[i] += k * gsl_stats_mean(step_t[i], 1, (size_t)(psgd_steps - 1));
    for (int t = 0; t < m->n_tensors; t++) {
      int rt = rt_compress_tensor_rank(c, t);
      double n = (double)m->tensor_rows[t], el = (double)m->tensor_elems[t], mm = el / n;
      if (rt > 0) {
        of += k * 2.0 * (n + mm) * rt * rt;
        gbytes += k * 3.0 * 4.0 * (el + (n + mm) * rt);
        pbytes += k * 2.0 * 3.0 * 4.0 * el;
      } else {
        pbytes += k * 2.0 * 4.0 * el;
      }
    }
    rt_compress_free(c);
    c = NULL;
  }
  if ((rc = cal_mean_over_ranks(r->world, r->bufs, times, 3)) != 0)
    goto out;
  double os = times[0], gs = times[1], ps = times[2];
  /* The wait of its allreduces, for every model: the profile keeps the
   * first's, each measured model file its own (core/model.h). */
  double sync_us = 0;
  for (int k = 0; k < r->o->n_models; k++) {
    core_model *mk = m;
    double us;
    if (k && (rc = core_model_load(r->o->models[k], &mk)) != 0)
      goto out;
    rc = psgd_sync(r, mk, &us);
    if (mk != m)
      core_model_free(mk);
    if (rc)
      goto out;
    if (!k)
      sync_us = us;
    cal_windows_set_psgd_sync(r, k, us);
  }
  /* The sums inside Gloo's allreduces, per type, on this model's gradient
   * divided by the world size as DDP divides it: Gloo sums fp16 through
   * conversions that are slow for subnormal halves, which small gradients
   * become, so fp16 halves the bytes but not the time. */
  double sum[3];
  if ((rc = cal_sum_rates(grad, peer, n_grad < n_peer ? n_grad : n_peer, 1.0 / world,
                          r->o->quick ? (4 << 20) : (16 << 20), sum)) != 0)
    goto out;
  /* Inside Gloo's allreduce the half-precision sum runs slower still than
   * alone (docs/calibration.md). So where there are ranks to allreduce with,
   * the rate is taken from the real allreduces just timed, as the
   * simulator's pipelined ring (sim/predict.c) spends it: of an allreduce of
   * half the fp32 bytes, t = net / 2 + max(net / 2, sum), net at the fp32
   * allreduce's rate, the sum over the (p - 1) / p of the bytes each rank
   * reduces. Where the sum hides behind the network it cannot be seen, and
   * the rate above stays. */
  for (int k = 1; k < 3 && world > 1 && half_ar_s[0] > 0; k++) {
    double net = half_ar_s[0] / 2, s = half_ar_s[k] - net / 2;
    double bytes = 2.0 * (double)m->n_params * (world - 1) / world;
    if (s > net / 2 && bytes / s / 1e9 < sum[k])
      sum[k] = bytes / s / 1e9;
  }
  if (r->pg.rank == 0) {
    r->prof->cast_GBps = cast_GBps[0];
    r->prof->cast_bf16_GBps = cast_GBps[1];
    r->prof->orth_gflops = os > 0 && of > 0 ? of / os / 1e9 : 0;
    r->prof->psgd_gemm_GBps = gs > 0 && gbytes > 0 ? gbytes / gs / 1e9 : 0;
    r->prof->psgd_pass_GBps = ps > 0 && pbytes > 0 ? pbytes / ps / 1e9 : 0;
    r->prof->psgd_sync_us = sync_us > 0 ? sync_us : 0;
    r->prof->sum_fp32_GBps = sum[0];
    r->prof->sum_fp16_GBps = sum[1];
    r->prof->sum_bf16_GBps = sum[2];
    cal_say(r, "  hooks: casts %.2f GB/s moved for fp16, %.2f for bf16; PowerSGD orthogonalization %.3f GFLOP/s",
        r->prof->cast_GBps, r->prof->cast_bf16_GBps, r->prof->orth_gflops);
    cal_say(r, "  PowerSGD GEMMs %.2f GB/s streamed, its passes %.2f GB/s moved, %.0f us more per allreduce",
        r->prof->psgd_gemm_GBps, r->prof->psgd_pass_GBps, r->prof->psgd_sync_us);
    cal_say(r, "  Gloo sums: fp32 %.2f, fp16 %.2f, bf16 %.2f GB/s (allreduces of the buckets: fp32 %.1f ms, fp16 %.1f, "
        "bf16 %.1f)", sum[0], sum[1], sum[2], half_ar_s[0] * 1e3, half_ar_s[1] * 1e3, half_ar_s[2] * 1e3);
  }
out:
  rt_compress_free(c);
  free(buf);
  free(grad);
  free(peer);
  core_bucket_free(&bk);
  core_model_free(m);
  return rc;
}

static void cpu_name(char *buf, size_t n) {
  snprintf(buf, n, "cpu");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[512];
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
      char *v = strchr(line, ':') + 1;
      v += strspn(v, " \t");
      v[strcspn(v, "\n")] = '\0';
      snprintf(buf, n, "%s", v);
      break;
    }
  fclose(f);
}

/* Whether this process can calibrate NCCL at all: a build with NCCL and a
 * CUDA device. Asked before anything is written or waited on. */
static int nccl_usable(void) {
  int v = 0, n = 0, rc;
  if ((rc = rt_nccl_version(&v)) != 0 || (rc = rt_gpu_count(&n)) != 0)
    return core_err_wrap(rc, "--backend nccl");
  return 0;
}

/* Jitter samples on every rank at once, gathered on every rank: training
 * steps of the first model (Gloo), or bursts of the probe GEMM (NCCL). */
static int jitter_part(cal_ctx *r, int ns, double *samples) {
  const cal_opts *o = r->o;
  double *mine = malloc(sizeof *mine * (size_t)ns);
  if (!mine)
    return core_err_set(CORE_ENOMEM, "out of memory for jitter samples");
  int rc;
  if (r->nccl) {
    cal_say(r, "jitter: %d bursts of %d fp32 GEMMs of %d on every rank", ns, CAL_GPU_BURST, CAL_GPU_PROBE_N);
    rc = cal_gpu_step_samples(r->device, ns, mine);
  } else {
    core_model *jm;
    const char *jpath = o->n_models ? o->models[0] : NULL;
    if (!jpath) {
      free(mine);
      return core_err_set(CORE_EUSAGE, "calibrate needs a model to time (--model)");
    }
    if ((rc = core_model_load(jpath, &jm)) != 0) {
      free(mine);
      return rc;
    }
    cal_say(r, "jitter: %d compute steps of %s on every rank", ns, jm->name);
    rc = cal_step_samples(jm, o->batch, ns, mine);
    core_model_free(jm);
  }
  if (!rc)
    rc = cal_allgather_host(r->world, r->bufs, mine, samples, sizeof *mine * (size_t)ns);
  free(mine);
  return rc;
}

/* Interference: slow[0] is how much slower GEMMs run beside allreduces,
 * slow[1] how much slower allreduces run beside GEMMs. Gloo: CPU GEMMs
 * against allreduces on the world communicator from a thread; on CPUs both
 * sides share cores, so both are measured. NCCL: cuBLAS GEMMs against
 * allreduces on a communicator of their own ("cal-interf"), also from a
 * thread; both sides too (NCCL kernels and GEMMs share SMs and memory
 * bandwidth). */
#define INTERF_BYTES(o) ((o)->quick ? (4 << 20) : (16 << 20))

/* slow: compute and communication slowdowns; on CPUs the allreduce's time
 * alone in slow[3] and the CPUs it kept busy in slow[4] (0 with NCCL). */
static int interference_part(cal_ctx *r, double *slow) {
  const cal_opts *o = r->o;
  cal_say(r, "interference: GEMMs while allreduces run");
  if (!r->nccl)
    return cal_interference(r->world, INTERF_BYTES(o), o->quick ? 3 : 8, &slow[0], &slow[1], &slow[3], &slow[4]);
  rt_comm *ic = NULL;
  int rc = cal_sub_group(r, "cal-interf", r->pg.rank, r->pg.world_size, RT_ALGO_DEFAULT, &ic);
  if (rc)
    return rc;
  rc = cal_gpu_interference(ic, r->device, o->quick ? (16 << 20) : (64 << 20), o->quick ? 1.0 : 2.0, &slow[0],
                            &slow[1]);
  rt_comm_finish(ic, rc);
  return rc;
}

int cal_run(const cal_opts *o) {
  cal_ctx r = {.o = o, .t0 = rt_now(), .bufs = &cal_host_bufs};
  struct timespec now_rt;
  clock_gettime(CLOCK_REALTIME, &now_rt);
  double start_rt = (double)now_rt.tv_sec + now_rt.tv_nsec * 1e-9;
  rt_store *st = NULL;
  double *samples = NULL, *rel = NULL;
  int rc;
  char tmpdir[64] = "";

  if (!strcmp(o->backend, "nccl")) {
    /* No GPU, or no NCCL in this build: say so at once, write nothing. */
    if ((rc = nccl_usable()) != 0)
      return rc;
    r.nccl = 1;
    r.bufs = &cal_device_bufs;
  } else if (strcmp(o->backend, "gloo") != 0) {
    return core_err_set(CORE_EUSAGE, "calibrate --backend %s: expected gloo or nccl", o->backend);
  }
  if ((rc = rt_pg_from_env(&r.pg)) != 0)
    return rc;
  if (r.nccl) {
    /* One device per rank of a node, by LOCAL_RANK (torchrun's rule). */
    r.device = r.pg.local_rank;
    if ((rc = rt_gpu_set_device(r.device)) != 0)
      return core_err_wrap(rc, "rank %d uses CUDA device %d (its LOCAL_RANK)", r.pg.rank, r.device);
  }
  if (r.pg.rank == 0) {
    /* Find out now, not after minutes of measuring, that the profile
     * cannot be written where asked. */
    if ((rc = core_afile_check(o->out)) != 0)
      return core_err_wrap(rc, "the profile cannot be written to '%s'", o->out);
  }
  rt_blas_threads(o->threads > 0 ? o->threads : 1);
  r.progress = o->progress < 0 ? isatty(2) : o->progress;
  int world = r.pg.world_size, lws = r.pg.local_world_size;
  if (world % lws != 0)
    return core_err_set(CORE_EUSAGE, "%d ranks do not divide into nodes of %d; set LOCAL_WORLD_SIZE consistently", world, lws);
  int nodes = r.nodes = world / lws;
  const char *spec = o->rdzv ? o->rdzv : getenv("DDPSIM_RDZV");
  if (!spec) {
    if (world > 1)
      return core_err_set(CORE_EUSAGE, "%d ranks need a rendezvous: run under `ddpsim launch` or pass --rdzv", world);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ddpsim-cal-XXXXXX");
    if (!mkdtemp(tmpdir))
      return core_err_errno(errno, "cannot create a rendezvous directory");
    spec = tmpdir;
  }
  r.spec = spec;
  const char *bind = o->bind ? o->bind : getenv("DDPSIM_BIND_ADDR");
  char bindbuf[256];
  if (!bind && !r.nccl) { /* NCCL finds its own interfaces (NCCL_SOCKET_IFNAME) */
    if ((rc = rt_pg_default_bind(&r.pg, bindbuf, sizeof bindbuf)) != 0)
      goto out;
    bind = bindbuf;
  }
  r.bind = bind;

  /* Start-up: rendezvous (every rank's key in the store), then the
   * communicator's connections. */
  cal_say(&r, "calibrate: %d rank(s) on %d node(s) of %d, backend %s%s", world, nodes, lws, r.nccl ? "nccl" : "gloo",
      o->quick ? ", quick" : "");
  double restart[3] = {0, 0, 0}; /* process start, rendezvous, comm init */
  const char *lt = getenv("DDPSIM_LAUNCH_TIME");
  if (lt)
    restart[0] = start_rt - atof(lt);
  if ((rc = rt_pg_open_store(spec, "cal-world", &st)) != 0)
    goto out;
  double t = rt_now();
  char key[64];
  snprintf(key, sizeof key, "arrived-%d", r.pg.rank);
  if ((rc = rt_store_set(st, key, "1", 1)) != 0)
    goto out;
  for (int k = 0; k < world; k++) {
    const char *kk[1];
    char name[64];
    snprintf(name, sizeof name, "arrived-%d", k);
    kk[0] = name;
    if ((rc = rt_store_wait(st, kk, 1, (int)(o->timeout_s * 1000))) != 0)
      goto out;
  }
  restart[1] = rt_now() - t;
  t = rt_now();
  if ((rc = cal_connect(&r, st, r.pg.rank, world, RT_ALGO_DEFAULT, &r.world)) != 0)
    goto out;
  restart[2] = rt_now() - t;
  if ((rc = max_over_ranks(&r, r.world, restart, 3)) != 0)
    goto out;

  if (r.pg.rank == 0) {
    if (!(r.prof = core_profile_new())) {
      rc = core_err_set(CORE_ENOMEM, "out of memory");
      goto out;
    }
    core_profile *p = r.prof;
    char host[128] = "?";
    gethostname(host, sizeof host - 1);
    time_t tt = time(NULL);
    struct tm tm;
    gmtime_r(&tt, &tm);
    snprintf(p->name, sizeof p->name, "%s", o->name ? o->name : host);
    snprintf(p->provenance, sizeof p->provenance, "measured by ddpsim calibrate%s%s", r.nccl ? " --backend nccl" : "",
             o->quick ? " --quick" : "");
    snprintf(p->host, sizeof p->host, "%s", host);
    strftime(p->date, sizeof p->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(p->backend, sizeof p->backend, "%s", r.nccl ? "nccl" : "gloo");
    if (r.nccl) {
      int v = 0;
      char cuda[160] = "CUDA ?";
      rt_nccl_version(&v);
      rt_gpu_versions(cuda, sizeof cuda);
      snprintf(p->versions, sizeof p->versions, "ddpsim %s; NCCL %d.%d.%d; %s", DDPSIM_VERSION, v / 10000,
               v / 100 % 100, v % 100, cuda);
    } else {
      snprintf(p->versions, sizeof p->versions, "ddpsim %s; %s; OpenBLAS %.120s", DDPSIM_VERSION, rt_gloo_version(),
               openblas_get_config());
    }
    p->nodes = nodes;
    p->ranks_per_node = lws;
    p->link_gbps = o->link_gbps;
    if (r.nccl) {
      rt_gpu_info info;
      snprintf(p->device_kind, sizeof p->device_kind, "gpu");
      if ((rc = rt_gpu_get_info(r.device, &info)) != 0)
        goto out;
      snprintf(p->device_name, sizeof p->device_name, "%.*s", (int)sizeof p->device_name - 1, info.name);
    } else {
      snprintf(p->device_kind, sizeof p->device_kind, "cpu");
      cpu_name(p->device_name, sizeof p->device_name);
    }
    p->process_start_s = restart[0];
    p->rendezvous_s = restart[1];
    p->comm_init_s = restart[2];
  }
  cal_say(&r, "start-up: process %.3f s, rendezvous %.3f s, communicator %.3f s", restart[0], restart[1], restart[2]);
  /* The first window of memory rates and layer times, before the sweeps. */
  if ((rc = cal_windows_open(&r)) != 0)
    goto out;
  if ((rc = rt_barrier(r.world)) != 0)
    goto out;

  if ((rc = cal_phase_collectives(&r)) != 0)
    goto out;

  /* Compute: rank 0 alone; the GEMM sweep is the device's rate. Then the
   * second window, every rank. */
  if (r.pg.rank == 0 && (rc = cal_phase_compute(&r)) != 0)
    goto out;
  if ((rc = rt_barrier(r.world)) != 0 || (rc = cal_window(&r)) != 0)
    goto out;

  /* Jitter: every rank computes at once, as in training. */
  int ns = o->quick ? 10 : 30;
  samples = malloc(sizeof *samples * (size_t)ns * (size_t)world);
  rel = malloc(sizeof *rel * (size_t)ns * (size_t)world);
  if (!samples || !rel) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for jitter samples");
    goto out;
  }
  if ((rc = jitter_part(&r, ns, samples)) != 0)
    goto out;
  if (r.pg.rank == 0) {
    cal_jitter j;
    if ((rc = cal_jitter_fit(samples, ns * world, rel, &j)) != 0)
      goto out;
    r.prof->jitter = j.best;
    r.prof->jitter_params[0] = j.params[0];
    r.prof->jitter_params[1] = j.params[1];
    r.prof->jitter_samples = rel;
    r.prof->n_jitter_samples = ns * world;
    rel = NULL;
    cal_say(&r, "  cv %.4f; best fit %s (log-likelihood normal %.1f, lognormal %.1f, shifted exponential %.1f)",
        j.cv, core_jitter_name(j.best), j.loglik[0], j.loglik[1], j.loglik[2]);
  }

  if (r.nccl) {
    cal_say(&r, "communication hooks: skipped (the runtime's hooks run on CPUs)");
  } else {
    cal_say(&r, "communication hooks on %s", o->n_models ? o->models[0] : "(no model)");
    if ((rc = hooks_part(&r)) != 0)
      goto out;
  }

  double slow[6] = {1.0, 1.0, 1.0, 0.0, 0.0, 0.0};
  if ((rc = interference_part(&r, slow)) != 0)
    goto out;
  if (!r.nccl) { /* the runtime's hooks run on CPUs only */
    cal_say(&r, "interference: GEMMs beside GEMMs on a second thread");
    if ((rc = rt_barrier(r.world)) != 0 || (rc = cal_cpu_interference(o->quick ? 0.2 : 0.5, &slow[2])) != 0)
      goto out;
  }
  /* The fewest CPUs any rank may use (negated for the maximum). */
  int sharing = 1;
  if (!r.nccl && (rc = ranks_sharing_cpus(&r, &sharing)) != 0)
    goto out;
  slow[5] = r.nccl ? 0.0 : -cal_rank_cpus(sharing);
  if ((rc = max_over_ranks(&r, r.world, slow, 6)) != 0 || (rc = cal_window(&r)) != 0)
    goto out;
  if (r.pg.rank == 0) {
    r.prof->compute_slowdown = slow[0];
    r.prof->comm_slowdown = slow[1];
    r.prof->cpu_slowdown = slow[2];
    cal_say(&r, "  compute slowdown under communication %.3f, communication slowdown under compute %.3f, "
        "CPU work beside CPU work %.3f", slow[0], slow[1], slow[2]);
    if (slow[3] > 0 && slow[4] > 0 && slow[5] < 0 && r.pg.world_size > 1) {
      /* The slowest rank's allreduce, as bus bandwidth (nccl-tests' factor
       * 2(n-1)/n): the rate at which the two factors hold, and the CPUs the
       * busiest rank's communication took at that rate, out of the CPUs a
       * rank may use (sim/step.h scales the factors with them). */
      int n = r.pg.world_size;
      r.prof->interf_busbw_GBps = INTERF_BYTES(o) * 2.0 * (n - 1) / n / slow[3] / 1e9;
      r.prof->interf_comm_cpus = slow[4];
      r.prof->interf_rank_cpus = -slow[5];
      cal_say(&r, "  measured with allreduces at %.3f GB/s of bus bandwidth, which kept %.2f CPUs busy of the %.2f "
          "a rank may use", r.prof->interf_busbw_GBps, slow[4], -slow[5]);
    }
    if ((rc = cal_windows_close(&r)) != 0 || (rc = cal_phase_storage(&r)) != 0)
      goto out;
    if ((rc = core_profile_write(r.prof, o->out)) != 0)
      goto out;
    fprintf(stderr, "calibrate: wrote %s in %.1f s\n", o->out, rt_now() - r.t0);
  }
  rc = rt_barrier(r.world);
out:
  free(samples);
  free(rel);
  rt_comm_finish(r.intra, rc);
  rt_comm_finish(r.inter, rc);
  rt_comm_finish(r.world, rc);
  if (st)
    rt_store_close(st);
  core_profile_free(r.prof);
  cal_windows_free(r.win);
  if (tmpdir[0])
    rmdir(tmpdir);
  return rc;
}

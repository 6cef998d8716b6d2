#include "compute_gpu.h"

#include "calibrate/sweep.h"

#include "runtime/ddp.h"

#include "core/clock.h"
#include "core/err.h"

#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_REPS = 16, WARMUP = 2, MIN_GEMMS = 10, MAX_GEMMS = 2000 };

int cal_gpu_gemm_sweep(int device, enum core_prec math, const int *sizes, int n, int reps, double target_flops,
    double *flops, double *tflops, int *measured) {
  *measured = 0;
  if (reps < 1 || reps > MAX_REPS)
    return core_err_set(CORE_EINVAL, "cal_gpu_gemm_sweep: %d repetitions (1 to %d)", reps, MAX_REPS);
  for (int k = 0; k < n; k++) {
    int s = sizes[k];
    double f = 2.0 * s * (double)s * s; /* multiply-adds of an n^3 GEMM, two FLOPs each */
    double g = target_flops / f;
    int iters = g < MIN_GEMMS ? MIN_GEMMS : g > MAX_GEMMS ? MAX_GEMMS : (int)g;
    double rate[MAX_REPS];
    for (int r = 0; r < reps; r++) {
      int rc = rt_gpu_gemm_rate(device, math, s, s, s, WARMUP, iters, &rate[r]);
      if (rc == CORE_ENOMEM && k > 0)
        return 0; /* the device holds the sizes before this one */
      if (rc)
        return core_err_wrap(rc, "%s GEMMs of %d", core_prec_name(math), s);
    }
    flops[k] = f;
    tflops[k] = cal_median(rate, reps) / 1e12;
    *measured = k + 1;
  }
  return 0;
}

int cal_gpu_bandwidths(int device, size_t bytes, int iters, double *memory_Bps, double *h2d_Bps, double *d2h_Bps) {
  int rc = rt_gpu_dtod_bandwidth(device, bytes, WARMUP, iters, memory_Bps);
  if (rc)
    return core_err_wrap(rc, "device memory bandwidth (%zu-byte copies)", bytes);
  rc = rt_gpu_host_bandwidth(device, bytes, WARMUP, iters, h2d_Bps, d2h_Bps);
  if (rc)
    return core_err_wrap(rc, "host-device bandwidth (%zu-byte copies)", bytes);
  return 0;
}

/* Seconds of one burst of CAL_GPU_BURST probe GEMMs (GPU time). */
static int burst(int device, double *seconds) {
  double rate = 0;
  int rc = rt_gpu_gemm_rate(
      device, CORE_PREC_FP32, CAL_GPU_PROBE_N, CAL_GPU_PROBE_N, CAL_GPU_PROBE_N, 1, CAL_GPU_BURST, &rate);
  if (rc)
    return core_err_wrap(rc, "jitter burst of %d fp32 GEMMs of %d", CAL_GPU_BURST, CAL_GPU_PROBE_N);
  if (!(rate > 0))
    return core_err_set(CORE_EIO, "jitter burst: cuBLAS reported a rate of %g FLOP/s", rate);
  *seconds = CAL_GPU_BURST * 2.0 * pow(CAL_GPU_PROBE_N, 3) / rate;
  return 0;
}

int cal_gpu_step_samples(int device, int n, double *samples) {
  double s;
  int rc = burst(device, &s); /* cuBLAS's handle and kernels, clocks ramping up */
  for (int i = 0; i < n && !rc; i++)
    rc = burst(device, &samples[i]);
  return rc;
}

/* ---- interference ----------------------------------------------------------- */

typedef struct bg {
  rt_comm *comm;
  void *buf; /* device */
  size_t n;
  long count;
  int rc;
  double *t; /* [count] durations of allreduces that ran beside GEMMs */
  long nt;
  atomic_int gemms; /* the main thread is measuring GEMMs */
  atomic_int done;
  char msg[1024];
} bg;

static void *bg_main(void *arg) {
  bg *g = arg;
  /* The NCCL backend makes its device current for this thread itself. */
  for (long i = 0; i < g->count && !g->rc; i++) {
    int beside = atomic_load(&g->gemms);
    double t0 = core_now();
    if ((g->rc = rt_allreduce(g->comm, g->buf, g->n, RT_FP32, RT_ALGO_DEFAULT)) != 0)
      snprintf(g->msg, sizeof g->msg, "%s", core_err_msg());
    double dt = core_now() - t0;
    if (beside && atomic_load(&g->gemms))
      g->t[g->nt++] = dt;
  }
  atomic_store(&g->done, 1);
  return NULL;
}

/* One probe measurement: FLOP/s, and its wall time (allocation, fill and
 * cuBLAS set-up included) in *wall. */
static int probe(int device, double *rate, double *wall) {
  double t0 = core_now();
  int rc = rt_gpu_gemm_rate(
      device, CORE_PREC_FP32, CAL_GPU_PROBE_N, CAL_GPU_PROBE_N, CAL_GPU_PROBE_N, 1, 4 * CAL_GPU_BURST, rate);
  if (wall)
    *wall = core_now() - t0;
  return rc ? core_err_wrap(rc, "interference GEMMs") : 0;
}

/* GEMMs alone: the median rate of a few probes, and the longest wall time
 * of one. */
static int gemms_alone(int device, double *rate, double *wall) {
  enum { ALONE = 3 };
  double alone[ALONE], w;
  int rc;
  *wall = 0;
  for (int i = 0; i < ALONE; i++) {
    if ((rc = probe(device, &alone[i], &w)) != 0)
      return rc;
    if (w > *wall)
      *wall = w;
  }
  *rate = cal_median(alone, ALONE);
  return 0;
}

/* Allreduces alone, after a warm-up that sets up NCCL's connections: their
 * median, and their mean (so that every rank can agree on how many to run
 * beside the GEMMs). */
static int allreduces_alone(bg *g, double *median, double *mean) {
  enum { ALONE_AR = 5 };
  double t[ALONE_AR];
  int rc;
  if ((rc = rt_allreduce(g->comm, g->buf, g->n, RT_FP32, RT_ALGO_DEFAULT)) != 0 || (rc = rt_barrier(g->comm)) != 0)
    return rc;
  for (int i = 0; i < ALONE_AR; i++) {
    double t0 = core_now();
    if ((rc = rt_allreduce(g->comm, g->buf, g->n, RT_FP32, RT_ALGO_DEFAULT)) != 0)
      return rc;
    t[i] = core_now() - t0;
  }
  *mean = gsl_stats_mean(t, 1, ALONE_AR);
  *median = cal_median(t, ALONE_AR);
  return 0;
}

/* Probe GEMMs while a thread runs g->count allreduces: the mean rate of
 * those that ended while the allreduces still ran (the last one, if none
 * did; rate_alone, if none ran). */
static int gemms_beside_allreduces(bg *g, int device, double rate_alone, double *rate_with) {
  enum { MAX_WITH = 256 };
  double with[MAX_WITH], last = 0;
  int k = 0, seen = 0, rc = 0;
  atomic_store(&g->gemms, 1);
  pthread_t th;
  if (pthread_create(&th, NULL, bg_main, g) != 0)
    return core_err_set(CORE_EIO, "cannot start a communication thread");
  while (!atomic_load(&g->done) && k < MAX_WITH) {
    if ((rc = probe(device, &last, NULL)) != 0)
      break;
    seen++;
    if (!atomic_load(&g->done))
      with[k++] = last; /* ended while the allreduces still ran */
  }
  atomic_store(&g->gemms, 0);
  pthread_join(th, NULL);
  if (rc)
    return rc;
  if (g->rc)
    return core_err_set(g->rc, "%s", g->msg);
  if (k == 0 && seen)
    with[k++] = last;
  *rate_with = k ? gsl_stats_mean(with, 1, (size_t)k) : rate_alone;
  return 0;
}

/* The measurements while the allreduces run allocate and free device and
 * pinned memory (rt_gpu_gemm_rate does), which synchronizes the device.
 * That cannot deadlock here: each rank has at most one NCCL operation in
 * flight (the backend waits for each before the next), so the peers'
 * matching operations are never held back by this rank's synchronization. */
int cal_gpu_interference(
    rt_comm *comm, int device, double bytes, double min_s, double *compute_slowdown, double *comm_slowdown) {
  bg g = {.comm = comm, .n = (size_t)(bytes / sizeof(float))};
  double rate_alone = 0, wall = 0, ar_alone = 0, ar_mean = 0, rate_with = 0;
  int rc;
  if (g.n < 1)
    g.n = 1;
  if ((rc = rt_gpu_set_device(device)) != 0)
    return rc;
  if ((rc = rt_gpu_alloc(g.n * sizeof(float), &g.buf)) != 0 ||
      (rc = rt_gpu_memset(g.buf, 0, g.n * sizeof(float))) != 0 || (rc = rt_gpu_sync()) != 0 ||
      (rc = gemms_alone(device, &rate_alone, &wall)) != 0 || (rc = allreduces_alone(&g, &ar_alone, &ar_mean)) != 0)
    goto out;
  double agreed[2] = {ar_mean, wall};
  if ((rc = cal_max_over_ranks(comm, cal_bufs_for(comm), agreed, 2)) != 0)
    goto out;
  /* At least 10 us per allreduce: about the least an NCCL call and the
   * backend's wait for it take (a one-rank allreduce in place is no work). */
  double span = fmax(min_s, 3 * agreed[1]);
  double count = ceil(span / fmax(agreed[0], 1e-5));
  g.count = count < 3 ? 3 : count > 1e6 ? 1000000 : (long)count;
  if (!(g.t = malloc(sizeof *g.t * (size_t)g.count))) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %ld allreduce times", g.count);
    goto out;
  }
  if ((rc = rt_barrier(comm)) != 0 || (rc = gemms_beside_allreduces(&g, device, rate_alone, &rate_with)) != 0)
    goto out;
  *compute_slowdown = rate_with > 0 && rate_alone > rate_with ? rate_alone / rate_with : 1.0;
  double ar_with = g.nt ? cal_median(g.t, (int)g.nt) : ar_alone;
  *comm_slowdown = ar_alone > 0 && ar_with > ar_alone ? ar_with / ar_alone : 1.0;
  rc = rt_barrier(comm);
out:
  free(g.t);
  rt_gpu_free(g.buf);
  return rc;
}

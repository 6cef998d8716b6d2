#include "sweep.h"

#include "core/err.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Buffers start at one of OFFSETS positions, 16 floats apart, changing each
 * iteration, so no iteration is served by a warm cache line alignment alone
 * (nccl-tests moves its buffers the same way). */
enum { OFFSETS = 4, OFFSET_STRIDE = 16 };

const char *cal_op_name(enum cal_op op) {
  static const char *const n[] = {"allreduce", "allgather", "reducescatter", "broadcast"};
  return (unsigned)op < CAL_N_OPS ? n[op] : "?";
}

double cal_busbw_factor(enum cal_op op, int p) {
  switch (op) {
  case CAL_ALLREDUCE: return 2.0 * (p - 1) / p;
  case CAL_BROADCAST: return 1.0;
  default: return (double)(p - 1) / p;
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Small integers: every sum of them is exact in fp32. */
static float value(int rank, size_t i) { return (float)(rank + 1 + (int)(i % 7)); }

typedef struct bufs {
  float *send, *recv;
  size_t send_n, recv_n; /* elements per operation */
} bufs;

/* Element counts of one operation moving S bytes in nccl-tests' terms. */
static void counts(enum cal_op op, double bytes, int p, size_t *send_n, size_t *recv_n) {
  size_t n = (size_t)(bytes / sizeof(float));
  if (n < (size_t)p)
    n = (size_t)p;
  switch (op) {
  case CAL_ALLGATHER: *send_n = n / (size_t)p; *recv_n = *send_n * (size_t)p; break;
  case CAL_REDUCESCATTER: *recv_n = n / (size_t)p; *send_n = *recv_n * (size_t)p; break;
  default: *send_n = *recv_n = n; break;
  }
}

static void fill(enum cal_op op, float *send, float *recv, size_t send_n, size_t recv_n, int rank,
                 int root) {
  for (size_t i = 0; i < send_n; i++)
    send[i] = value(rank, i);
  if (op == CAL_BROADCAST && rank != root)
    for (size_t i = 0; i < send_n; i++)
      send[i] = -1.0f;
  if (recv)
    memset(recv, 0, sizeof(float) * recv_n);
}

static int run_op(rt_comm *c, enum cal_op op, enum rt_algo algo, float *send, float *recv,
                  size_t send_n, size_t recv_n, int root) {
  switch (op) {
  case CAL_ALLREDUCE: return rt_allreduce(c, send, send_n, RT_FP32, algo);
  case CAL_ALLGATHER: return rt_allgather(c, send, recv, send_n, RT_FP32);
  case CAL_REDUCESCATTER: return rt_reduce_scatter(c, send, recv, recv_n, RT_FP32);
  default: return rt_broadcast(c, send, send_n, RT_FP32, root);
  }
}

static int check(rt_comm *c, enum cal_op op, const float *send, const float *recv, size_t send_n,
                 size_t recv_n, int root, double bytes) {
  int p = c->size;
  for (size_t i = 0; i < (op == CAL_ALLGATHER || op == CAL_REDUCESCATTER ? recv_n : send_n); i++) {
    float want, got;
    switch (op) {
    case CAL_ALLREDUCE: {
      double s = 0;
      for (int r = 0; r < p; r++)
        s += value(r, i);
      want = (float)s;
      got = send[i];
      break;
    }
    case CAL_ALLGATHER: {
      size_t blk = send_n;
      want = value((int)(i / blk), i % blk);
      got = recv[i];
      break;
    }
    case CAL_REDUCESCATTER: {
      double s = 0;
      for (int r = 0; r < p; r++)
        s += value(r, (size_t)c->rank * recv_n + i);
      want = (float)s;
      got = recv[i];
      break;
    }
    default:
      want = value(root, i);
      got = send[i];
      break;
    }
    if (got != want)
      return core_err_set(CORE_ECOMM, "%s of %.0f bytes: wrong result on rank %d at element %zu (%g, expected %g); the backend or the network corrupts data",
                          cal_op_name(op), bytes, c->rank, i, got, want);
  }
  return 0;
}

/* The slowest rank's time per iteration: gather everyone's (as raw bytes,
 * two floats per double) and take the max. */
static int slowest(rt_comm *c, const double *mine, int iters, double *out) {
  double *all = malloc(sizeof *all * (size_t)iters * (size_t)c->size);
  if (!all)
    return core_err_set(CORE_ENOMEM, "out of memory gathering timings");
  int rc = rt_allgather(c, mine, all, (size_t)iters * 2, RT_FP32);
  if (rc == 0)
    for (int i = 0; i < iters; i++) {
      out[i] = 0;
      for (int r = 0; r < c->size; r++)
        if (all[(size_t)r * iters + i] > out[i])
          out[i] = all[(size_t)r * iters + i];
    }
  free(all);
  return rc;
}

static int measure(rt_comm *c, enum cal_op op, enum rt_algo algo, double bytes, int warmup,
                   int min_iters, int max_iters, double budget_s, cal_point *pt) {
  size_t send_n, recv_n;
  int p = c->size, root = p > 1 ? 1 % p : 0, rc = 0;
  counts(op, bytes, p, &send_n, &recv_n);
  float *send = malloc(sizeof(float) * (send_n + OFFSETS * OFFSET_STRIDE));
  float *recv = (op == CAL_ALLGATHER || op == CAL_REDUCESCATTER)
                    ? malloc(sizeof(float) * (recv_n + OFFSETS * OFFSET_STRIDE))
                    : NULL;
  double *t = malloc(sizeof *t * (size_t)max_iters);
  double *tmax = malloc(sizeof *tmax * (size_t)max_iters);
  if (!send || !t || !tmax || ((op == CAL_ALLGATHER || op == CAL_REDUCESCATTER) && !recv)) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %.0f-byte buffers", bytes);
    goto out_free;
  }
  int iters = 0;
  double spent = 0;
  for (int it = -warmup; it < max_iters; it++) {
    size_t off = (size_t)((it + warmup) % OFFSETS) * OFFSET_STRIDE;
    float *s = send + off, *r = recv ? recv + off : NULL;
    fill(op, s, r, send_n, recv_n, c->rank, root);
    if ((rc = rt_barrier(c)) != 0)
      goto out_free;
    double t0 = now_s();
    if ((rc = run_op(c, op, algo, s, r, send_n, recv_n, root)) != 0)
      goto out_free;
    double dt = now_s() - t0;
    if ((rc = check(c, op, s, r, send_n, recv_n, root, bytes)) != 0)
      goto out_free;
    if (it < 0)
      continue;
    t[iters++] = dt;
    spent += dt;
    /* Every rank must agree on when to stop: decide on rank 0's clock,
     * shared by a broadcast of one float. */
    float stop = (iters >= min_iters && spent >= budget_s) ? 1.0f : 0.0f;
    if ((rc = rt_broadcast(c, &stop, 1, RT_FP32, 0)) != 0)
      goto out_free;
    if (stop != 0.0f)
      break;
  }
  if ((rc = slowest(c, t, iters, tmax)) != 0)
    goto out_free;
  gsl_sort(tmax, 1, (size_t)iters);
  /* nccl-tests' S: allgather counts its whole output, the others their input. */
  pt->bytes = (double)(op == CAL_ALLGATHER ? recv_n : send_n) * sizeof(float);
  pt->iters = iters;
  pt->t_min_s = tmax[0];
  pt->t_max_s = tmax[iters - 1];
  pt->t_p50_s = gsl_stats_median_from_sorted_data(tmax, 1, (size_t)iters);
  /* Spread: 1.4826 x the median absolute deviation estimates a standard
   * deviation robustly; the median of n iterations is known to about
   * 1.2533 sigma / sqrt(n) (its asymptotic efficiency under normal noise). */
  double *dev = t; /* reuse: the raw times are no longer needed */
  for (int i = 0; i < iters; i++)
    dev[i] = fabs(tmax[i] - pt->t_p50_s);
  gsl_sort(dev, 1, (size_t)iters);
  double mad = gsl_stats_median_from_sorted_data(dev, 1, (size_t)iters);
  pt->t_se_s = 1.2533 * 1.4826 * mad / sqrt((double)iters);
  pt->algbw_GBps = pt->bytes / pt->t_p50_s / 1e9;
  pt->busbw_GBps = pt->algbw_GBps * cal_busbw_factor(op, p);
out_free:
  free(send);
  free(recv);
  free(t);
  free(tmax);
  return rc;
}

int cal_sweep_one(rt_comm *c, enum cal_op op, enum rt_algo algo, double bytes, int warmup,
                  int iters, cal_point *pt) {
  return measure(c, op, algo, bytes, warmup, iters, iters, 0, pt);
}

int cal_sweep_run(rt_comm *c, enum cal_op op, enum rt_algo algo, const cal_sweep_opts *o,
                  cal_point **points, int *n) {
  double f = o->factor > 1 ? o->factor : 2;
  int cap = 0;
  for (double b = o->min_bytes; b <= o->max_bytes * 1.0000001; b *= f)
    cap++;
  *points = calloc((size_t)(cap ? cap : 1), sizeof **points);
  *n = 0;
  if (!*points)
    return core_err_set(CORE_ENOMEM, "out of memory for %d sweep points", cap);
  int k = 0;
  for (double b = o->min_bytes; k < cap; b *= f, k++) {
    int rc = measure(c, op, algo, b, o->warmup, o->min_iters > 0 ? o->min_iters : 3,
                     o->max_iters > 0 ? o->max_iters : 20, o->budget_s, &(*points)[k]);
    if (rc) {
      free(*points);
      *points = NULL;
      return core_err_wrap(rc, "%s sweep (%s)", cal_op_name(op), rt_algo_name(algo));
    }
    if (o->progress && c->rank == 0)
      fprintf(stderr, "\r  %-28s %2d/%d  %10.0f B  %9.1f us  busbw %7.3f GB/s   ", o->label ? o->label : cal_op_name(op),
              k + 1, cap, (*points)[k].bytes, (*points)[k].t_p50_s * 1e6, (*points)[k].busbw_GBps);
  }
  if (o->progress && c->rank == 0)
    fputc('\n', stderr);
  *n = cap;
  return 0;
}

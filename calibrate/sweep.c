#include "sweep.h"

#include "runtime/gpu.h"

#include "core/clock.h"
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

/* Each timed operation of DRAIN_MIN_BYTES to DRAIN_MAX_BYTES follows an
 * untimed one of its size on scratch buffers, back to back, as nccl-tests'
 * iterations follow each other and DDP's buckets do: without it the link
 * idles for the fill, check and barrier of every iteration, and a shaped
 * link's burst allowance refills meanwhile. Above the range a refill is a
 * few percent of an operation and draining would lengthen a calibration;
 * below it operations are latency-bound, and draining them skewed the fit
 * of small sizes (docs/calibration.md, "Back to back"). */
enum { DRAIN_MIN_BYTES = 256 << 10, DRAIN_MAX_BYTES = 16 << 20 };

/* Contributions repeat every PERIOD elements (small integers, see sweep.h). */
enum { PERIOD = 7 };

/* ---- host buffers ---------------------------------------------------------- */

/* Rank r's element i on the host: small integers, every sum of them is exact
 * in fp32. */
static float value(int rank, size_t i) { return (float)(rank + 1 + (int)(i % PERIOD)); }

static float host_want(const cal_data *d, size_t i) {
  switch (d->kind) {
  case CAL_DATA_RANK: return value(d->rank, d->first + i);
  case CAL_DATA_SUM: {
    double s = 0;
    for (int r = 0; r < d->ranks; r++)
      s += value(r, d->first + i);
    return (float)s;
  }
  case CAL_DATA_BLOCKS: return value((int)(i / d->block), i % d->block);
  default: return d->value;
  }
}

static int host_alloc(size_t bytes, void **buf) {
  *buf = bytes ? malloc(bytes) : NULL;
  if (!*buf)
    return core_err_set(bytes ? CORE_ENOMEM : CORE_EINVAL, "%s %zu bytes of host memory",
        bytes ? "out of memory allocating" : "cannot allocate", bytes);
  return 0;
}

static void host_free(void *buf) { free(buf); }

static int host_fill(void *buf, size_t count, const cal_data *d) {
  float *f = buf;
  if (d->kind == CAL_DATA_CONST && d->value == 0.0f) {
    memset(f, 0, sizeof(float) * count);
    return 0;
  }
  if (d->kind == CAL_DATA_RANK) { /* the sweeps' fill: keep it a plain loop */
    for (size_t i = 0; i < count; i++)
      f[i] = value(d->rank, d->first + i);
    return 0;
  }
  for (size_t i = 0; i < count; i++)
    f[i] = host_want(d, i);
  return 0;
}

static int host_check(const void *buf, size_t count, const cal_data *d) {
  const float *f = buf;
  for (size_t i = 0; i < count; i++) {
    float want = host_want(d, i), got = f[i];
    if (got != want)
      return core_err_set(CORE_ECORRUPT, "at element %zu (%g, expected %g)", i, got, want);
  }
  return 0;
}

static void *host_offset(void *buf, size_t elems) { return (float *)buf + elems; }

static int host_put(void *buf, const void *src, size_t bytes) {
  memcpy(buf, src, bytes);
  return 0;
}

static int host_get(void *dst, const void *buf, size_t bytes) {
  memcpy(dst, buf, bytes);
  return 0;
}

const cal_buf_ops cal_host_bufs = {
    .name = "host",
    .host_visible = 1,
    .alloc = host_alloc,
    .free = host_free,
    .fill = host_fill,
    .check = host_check,
    .offset = host_offset,
    .put = host_put,
    .get = host_get,
};

/* ---- device buffers --------------------------------------------------------- */

/* Rank r's element i on the device is (r + 1)(i % 7 + 1): runtime/gpu.h's
 * pattern with scale r + 1, so the sum over p ranks is the same pattern with
 * scale p(p + 1)/2. */
static rt_gpu_pattern device_pattern(const cal_data *d) {
  rt_gpu_pattern p = {.scale = 1, .period = PERIOD, .offset = 0};
  switch (d->kind) {
  case CAL_DATA_RANK:
    p.scale = d->rank + 1.0;
    p.offset = d->first;
    break;
  case CAL_DATA_SUM:
    p.scale = d->ranks * (d->ranks + 1.0) / 2.0;
    p.offset = d->first;
    break;
  case CAL_DATA_CONST:
    p.scale = d->value;
    p.period = 1;
    break;
  default: break; /* BLOCKS: per block, by the callers */
  }
  return p;
}

static int device_alloc(size_t bytes, void **buf) { return rt_gpu_alloc(bytes, buf); }

static void device_free(void *buf) { rt_gpu_free(buf); }

static void *device_offset(void *buf, size_t elems) { return (char *)buf + elems * sizeof(float); }

/* Block b of a BLOCKS buffer of count elements: its start and length. */
static size_t block_len(const cal_data *d, size_t count, int b) {
  size_t start = (size_t)b * d->block;
  if (start >= count)
    return 0;
  return count - start < d->block ? count - start : d->block;
}

static int device_fill(void *buf, size_t count, const cal_data *d) {
  int rc = 0;
  if (d->kind == CAL_DATA_CONST && d->value == 0.0f) {
    rc = rt_gpu_memset(buf, 0, sizeof(float) * count);
  } else if (d->kind == CAL_DATA_BLOCKS) {
    for (int b = 0; b < d->ranks && !rc; b++) {
      cal_data rd = {.kind = CAL_DATA_RANK, .rank = b};
      rt_gpu_pattern p = device_pattern(&rd);
      rc = rt_gpu_fill(device_offset(buf, (size_t)b * d->block), block_len(d, count, b), RT_FP32, &p);
    }
  } else {
    rt_gpu_pattern p = device_pattern(d);
    rc = rt_gpu_fill(buf, count, RT_FP32, &p);
  }
  /* The collectives run on the communicator's own (non-blocking) stream,
   * which does not wait for the default stream's memset or copies. */
  return rc ? rc : rt_gpu_sync();
}

static int device_check(const void *buf, size_t count, const cal_data *d) {
  if (d->kind != CAL_DATA_BLOCKS) {
    rt_gpu_pattern p = device_pattern(d);
    int rc = rt_gpu_check(buf, count, RT_FP32, &p, NULL);
    return rc == CORE_ECORRUPT ? core_err_wrap(rc, "in device memory") : rc;
  }
  for (int b = 0; b < d->ranks; b++) {
    cal_data rd = {.kind = CAL_DATA_RANK, .rank = b};
    rt_gpu_pattern p = device_pattern(&rd);
    const char *start = (const char *)buf + (size_t)b * d->block * sizeof(float);
    int rc = rt_gpu_check(start, block_len(d, count, b), RT_FP32, &p, NULL);
    if (rc == CORE_ECORRUPT)
      return core_err_wrap(rc, "in device memory, block %d of %d (rank %d's)", b, d->ranks, b);
    if (rc)
      return rc;
  }
  return 0;
}

static int device_put(void *buf, const void *src, size_t bytes) {
  int rc = rt_gpu_copy_to_device(buf, src, bytes);
  /* A copy from pageable memory may return before it lands (CUDA runtime
   * API, "API synchronization behavior"); the collective must see it. */
  return rc ? rc : rt_gpu_sync();
}

static int device_get(void *dst, const void *buf, size_t bytes) { return rt_gpu_copy_to_host(dst, buf, bytes); }

const cal_buf_ops cal_device_bufs = {
    .name = "device",
    .host_visible = 0,
    .alloc = device_alloc,
    .free = device_free,
    .fill = device_fill,
    .check = device_check,
    .offset = device_offset,
    .put = device_put,
    .get = device_get,
};

const cal_buf_ops *cal_bufs_for(const rt_comm *c) {
  if (c && c->ops && c->ops->name && !strcmp(c->ops->name, "nccl"))
    return &cal_device_bufs;
  return &cal_host_bufs;
}

/* ---- control values ------------------------------------------------------- */

static int ctl_bytes_ok(size_t bytes, const char *fn) {
  if (bytes % sizeof(float))
    return core_err_set(CORE_EINVAL, "%s: %zu bytes is not a whole number of fp32 elements", fn, bytes);
  return 0;
}

int cal_allgather_host(rt_comm *c, const cal_buf_ops *b, const void *mine, void *all, size_t bytes) {
  int rc = ctl_bytes_ok(bytes, "cal_allgather_host");
  if (rc || bytes == 0)
    return rc;
  size_t n = bytes / sizeof(float);
  if (b->host_visible)
    return rt_allgather(c, mine, all, n, RT_FP32);
  void *s = NULL, *r = NULL;
  if ((rc = b->alloc(bytes, &s)) != 0 || (rc = b->alloc(bytes * (size_t)c->size, &r)) != 0)
    goto out;
  if ((rc = b->put(s, mine, bytes)) != 0 || (rc = rt_allgather(c, s, r, n, RT_FP32)) != 0)
    goto out;
  rc = b->get(all, r, bytes * (size_t)c->size);
out:
  b->free(s);
  b->free(r);
  return rc;
}

/* Broadcast through stage (a buffer of b of at least bytes) unless b's
 * buffers are host memory. */
static int broadcast_via(rt_comm *c, const cal_buf_ops *b, void *stage, void *val, size_t bytes, int root) {
  size_t n = bytes / sizeof(float);
  if (b->host_visible)
    return rt_broadcast(c, val, n, RT_FP32, root);
  int rc = b->put(stage, val, bytes);
  if (!rc)
    rc = rt_broadcast(c, stage, n, RT_FP32, root);
  if (!rc)
    rc = b->get(val, stage, bytes);
  return rc;
}

int cal_broadcast_host(rt_comm *c, const cal_buf_ops *b, void *val, size_t bytes, int root) {
  int rc = ctl_bytes_ok(bytes, "cal_broadcast_host");
  if (rc || bytes == 0)
    return rc;
  void *stage = NULL;
  if (!b->host_visible && (rc = b->alloc(bytes, &stage)) != 0)
    return rc;
  rc = broadcast_via(c, b, stage, val, bytes, root);
  b->free(stage);
  return rc;
}

double cal_median(double *v, int n) {
  gsl_sort(v, 1, (size_t)n);
  return gsl_stats_median_from_sorted_data(v, 1, (size_t)n);
}

/* v[i] = the max (mean = 0) or the mean (mean = 1) over ranks of v[i]. */
static int combine_over_ranks(rt_comm *c, const cal_buf_ops *b, double *v, int n, int mean) {
  double *all = malloc(sizeof *all * (size_t)n * (size_t)c->size);
  if (!all)
    return core_err_set(CORE_ENOMEM, "out of memory");
  int rc = cal_allgather_host(c, b, v, all, sizeof *v * (size_t)n);
  if (!rc)
    for (int i = 0; i < n; i++) {
      double m = mean ? 0.0 : v[i];
      for (int r = 0; r < c->size; r++) {
        double x = all[(size_t)r * n + i];
        m = mean ? m + x / c->size : (x > m ? x : m);
      }
      v[i] = m;
    }
  free(all);
  return rc;
}

int cal_max_over_ranks(rt_comm *c, const cal_buf_ops *b, double *v, int n) { return combine_over_ranks(c, b, v, n, 0); }

int cal_mean_over_ranks(rt_comm *c, const cal_buf_ops *b, double *v, int n) {
  return combine_over_ranks(c, b, v, n, 1);
}

/* ---- the loop --------------------------------------------------------------- */

/* Element counts of one operation moving S bytes in nccl-tests' terms. */
static void counts(enum core_coll op, double bytes, int p, size_t *send_n, size_t *recv_n) {
  size_t n = (size_t)(bytes / sizeof(float));
  if (n < (size_t)p)
    n = (size_t)p;
  switch (op) {
  case CORE_COLL_ALLGATHER:
    *send_n = n / (size_t)p;
    *recv_n = *send_n * (size_t)p;
    break;
  case CORE_COLL_REDUCESCATTER:
    *recv_n = n / (size_t)p;
    *send_n = *recv_n * (size_t)p;
    break;
  default: *send_n = *recv_n = n; break;
  }
}

static int fill(
    const cal_buf_ops *b, enum core_coll op, void *send, void *recv, size_t send_n, size_t recv_n, int rank, int root) {
  cal_data d = {.kind = CAL_DATA_RANK, .rank = rank};
  if (op == CORE_COLL_BROADCAST && rank != root)
    d = (cal_data){.kind = CAL_DATA_CONST, .value = -1.0f};
  int rc = b->fill(send, send_n, &d);
  if (!rc && recv) {
    cal_data z = {.kind = CAL_DATA_CONST, .value = 0.0f};
    rc = b->fill(recv, recv_n, &z);
  }
  return rc;
}

static int run_op(
    rt_comm *c, enum core_coll op, enum rt_algo algo, void *send, void *recv, size_t send_n, size_t recv_n, int root) {
  switch (op) {
  case CORE_COLL_ALLREDUCE: return rt_allreduce(c, send, send_n, RT_FP32, algo);
  case CORE_COLL_ALLGATHER: return rt_allgather(c, send, recv, send_n, RT_FP32);
  case CORE_COLL_REDUCESCATTER: return rt_reduce_scatter(c, send, recv, recv_n, RT_FP32);
  default: return rt_broadcast(c, send, send_n, RT_FP32, root);
  }
}

static int check(rt_comm *c, const cal_buf_ops *b, enum core_coll op, const void *send, const void *recv, size_t send_n,
    size_t recv_n, int root, double bytes) {
  int p = c->size;
  cal_data d = {.kind = CAL_DATA_SUM, .ranks = p};
  const void *buf = send;
  size_t n = send_n;
  switch (op) {
  case CORE_COLL_ALLREDUCE: break;
  case CORE_COLL_ALLGATHER:
    d = (cal_data){.kind = CAL_DATA_BLOCKS, .ranks = p, .block = send_n};
    buf = recv;
    n = recv_n;
    break;
  case CORE_COLL_REDUCESCATTER:
    d.first = (size_t)c->rank * recv_n;
    buf = recv;
    n = recv_n;
    break;
  default: d = (cal_data){.kind = CAL_DATA_RANK, .rank = root}; break;
  }
  int rc = b->check(buf, n, &d);
  if (rc != CORE_ECORRUPT)
    return rc;
  char where[1024];
  snprintf(where, sizeof where, "%s", core_err_msg());
  return core_err_set(CORE_ECOMM,
      "%s of %.0f bytes: wrong result on rank %d %s; the backend or the network corrupts data", core_coll_name(op),
      bytes, c->rank, where);
}

/* The slowest rank's time per iteration: gather everyone's (as raw bytes,
 * two floats per double) and take the max. */
static int slowest(rt_comm *c, const cal_buf_ops *b, const double *mine, int iters, double *out) {
  double *all = malloc(sizeof *all * (size_t)iters * (size_t)c->size);
  if (!all)
    return core_err_set(CORE_ENOMEM, "out of memory gathering timings");
  int rc = cal_allgather_host(c, b, mine, all, sizeof *mine * (size_t)iters);
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

/* One size's buffers: the timed pair, rank 0's stop flag where buffers are
 * not host-visible, and a second pair for the drain operation. */
typedef struct sizebufs {
  void *send, *recv, *ctl, *dsend, *drecv;
  size_t send_n, recv_n;
  int has_recv, drain;
} sizebufs;

static void sizebufs_free(const cal_buf_ops *b, sizebufs *u) {
  b->free(u->send);
  b->free(u->recv);
  b->free(u->ctl);
  b->free(u->dsend);
  b->free(u->drecv);
}

static int sizebufs_alloc(const cal_buf_ops *b, enum core_coll op, double bytes, int p, sizebufs *u) {
  *u = (sizebufs){.has_recv = op == CORE_COLL_ALLGATHER || op == CORE_COLL_REDUCESCATTER,
      .drain = p > 1 && bytes >= DRAIN_MIN_BYTES && bytes <= DRAIN_MAX_BYTES};
  counts(op, bytes, p, &u->send_n, &u->recv_n);
  int rc;
  if ((rc = b->alloc(sizeof(float) * (u->send_n + OFFSETS * OFFSET_STRIDE), &u->send)) != 0 ||
      (u->has_recv && (rc = b->alloc(sizeof(float) * (u->recv_n + OFFSETS * OFFSET_STRIDE), &u->recv)) != 0) ||
      (!b->host_visible && (rc = b->alloc(sizeof(float), &u->ctl)) != 0) ||
      (u->drain && (rc = b->alloc(sizeof(float) * u->send_n, &u->dsend)) != 0) ||
      (u->drain && u->has_recv && (rc = b->alloc(sizeof(float) * u->recv_n, &u->drecv)) != 0))
    return core_err_wrap(rc, "%.0f-byte %s buffers for %s", bytes, b->name, core_coll_name(op));
  return 0;
}

/* Runs warm-up and timed iterations of one size until min_iters and the
 * budget are both spent (or max_iters), this rank's times into t; the
 * count into *iters. */
static int timed_iterations(rt_comm *c, rt_comm *ctl_comm, const cal_buf_ops *b, enum core_coll op, enum rt_algo algo,
    double bytes, const sizebufs *u, int warmup, int min_iters, int max_iters, double budget_s, double *t, int *iters) {
  int root = c->size > 1 ? 1 % c->size : 0, rc;
  double spent = 0;
  *iters = 0;
  for (int it = -warmup; it < max_iters; it++) {
    size_t off = (size_t)((it + warmup) % OFFSETS) * OFFSET_STRIDE;
    void *s = b->offset(u->send, off), *r = u->recv ? b->offset(u->recv, off) : NULL;
    if ((rc = fill(b, op, s, r, u->send_n, u->recv_n, c->rank, root)) != 0 ||
        (u->drain && (rc = fill(b, op, u->dsend, u->drecv, u->send_n, u->recv_n, c->rank, root)) != 0))
      return rc;
    if ((rc = rt_barrier(c)) != 0)
      return rc;
    if (u->drain && (rc = run_op(c, op, algo, u->dsend, u->drecv, u->send_n, u->recv_n, root)) != 0)
      return rc;
    double t0 = core_now();
    if ((rc = run_op(c, op, algo, s, r, u->send_n, u->recv_n, root)) != 0)
      return rc;
    double dt = core_now() - t0;
    if ((rc = check(c, b, op, s, r, u->send_n, u->recv_n, root, bytes)) != 0)
      return rc;
    if (it < 0)
      continue;
    t[(*iters)++] = dt;
    spent += dt;
    /* Every rank must agree on when to stop: decide on rank 0's clock,
     * shared by a broadcast of one float. */
    float stop = (*iters >= min_iters && spent >= budget_s) ? 1.0f : 0.0f;
    if ((rc = broadcast_via(ctl_comm, b, u->ctl, &stop, sizeof stop, 0)) != 0)
      return rc;
    if (stop != 0.0f)
      break;
  }
  return 0;
}

/* The point's figures from the slowest rank's times (sorted in place);
 * scratch holds iters values. */
static void summarize(
    double *tmax, double *scratch, int iters, enum core_coll op, int p, const sizebufs *u, cal_point *pt) {
  gsl_sort(tmax, 1, (size_t)iters);
  /* nccl-tests' S: allgather counts its whole output, the others their input. */
  pt->bytes = (double)(op == CORE_COLL_ALLGATHER ? u->recv_n : u->send_n) * sizeof(float);
  pt->iters = iters;
  pt->t_min_s = tmax[0];
  pt->t_max_s = tmax[iters - 1];
  pt->t_p50_s = gsl_stats_median_from_sorted_data(tmax, 1, (size_t)iters);
  /* Spread: 1.4826 x the median absolute deviation estimates a standard
   * deviation robustly; the median of n iterations is known to about
   * 1.2533 sigma / sqrt(n) (its asymptotic efficiency under normal noise). */
  for (int i = 0; i < iters; i++)
    scratch[i] = fabs(tmax[i] - pt->t_p50_s);
  gsl_sort(scratch, 1, (size_t)iters);
  double mad = gsl_stats_median_from_sorted_data(scratch, 1, (size_t)iters);
  pt->t_se_s = 1.2533 * 1.4826 * mad / sqrt((double)iters);
  pt->algbw_GBps = pt->bytes / pt->t_p50_s / 1e9;
  pt->busbw_GBps = pt->algbw_GBps * core_coll_busbw_factor(op, p);
}

static int measure(rt_comm *c, rt_comm *ctl_comm, const cal_buf_ops *b, enum core_coll op, enum rt_algo algo,
    double bytes, int warmup, int min_iters, int max_iters, double budget_s, cal_point *pt) {
  sizebufs u = {0};
  int iters = 0, rc = 0;
  double *t = malloc(sizeof *t * (size_t)max_iters);
  double *tmax = malloc(sizeof *tmax * (size_t)max_iters);
  if (!t || !tmax) {
    rc = core_err_set(CORE_ENOMEM, "out of memory for %.0f-byte buffers", bytes);
    goto out_free;
  }
  if ((rc = sizebufs_alloc(b, op, bytes, c->size, &u)) != 0 ||
      (rc = timed_iterations(c, ctl_comm, b, op, algo, bytes, &u, warmup, min_iters, max_iters, budget_s, t, &iters)) !=
          0 ||
      (rc = slowest(ctl_comm, b, t, iters, tmax)) != 0)
    goto out_free;
  summarize(tmax, t, iters, op, c->size, &u, pt);
out_free:
  sizebufs_free(b, &u);
  free(t);
  free(tmax);
  return rc;
}

int cal_sweep_one(
    rt_comm *c, enum core_coll op, enum rt_algo algo, double bytes, int warmup, int iters, cal_point *pt) {
  return measure(c, c, cal_bufs_for(c), op, algo, bytes, warmup, iters, iters, 0, pt);
}

/* What every point of one sweep shares. */
typedef struct sweep {
  rt_comm *c, *ctl;
  const cal_buf_ops *b;
  enum core_coll op;
  enum rt_algo algo;
  const cal_sweep_opts *o;
} sweep;

/* The point at bytes, with the options' warm-up and iteration bounds. */
static int sweep_point(const sweep *w, double bytes, cal_point *pt) {
  const cal_sweep_opts *o = w->o;
  return measure(w->c, w->ctl, w->b, w->op, w->algo, bytes, o->warmup, o->min_iters > 0 ? o->min_iters : 3,
      o->max_iters > 0 ? o->max_iters : 20, o->budget_s, pt);
}

/* Progress lines go to stderr from rank 0 only. */
static int sweep_says(const sweep *w) { return w->o->progress && w->c->rank == 0; }

static const char *sweep_label(const sweep *w) { return w->o->label ? w->o->label : core_coll_name(w->op); }

/* Every size from min_bytes by factor f, cap of them, into pts. */
static int first_pass(const sweep *w, double f, cal_point *pts, int cap) {
  int k = 0;
  for (double by = w->o->min_bytes; k < cap; by *= f, k++) {
    int rc = sweep_point(w, by, &pts[k]);
    if (rc)
      return core_err_wrap(rc, "%s sweep (%s)", core_coll_name(w->op), rt_algo_name(w->algo));
    if (sweep_says(w))
      fprintf(stderr, "\r  %-28s %2d/%d  %10.0f B  %9.1f us  busbw %7.3f GB/s   ", sweep_label(w), k + 1, cap,
          pts[k].bytes, pts[k].t_p50_s * 1e6, pts[k].busbw_GBps);
  }
  if (sweep_says(w))
    fputc('\n', stderr);
  return 0;
}

/* The sizes up to repass_max_bytes measured again, largest first, each
 * point keeping the faster pass. Every rank holds the same points (times
 * are the slowest rank's), so every rank keeps the same pass. */
static int second_pass(const sweep *w, double f, cal_point *pts, int cap) {
  const cal_sweep_opts *o = w->o;
  for (int k = cap - 1; k >= 0; k--) {
    double by = o->min_bytes; /* the size asked for, as the first pass asked it */
    for (int i = 0; i < k; i++)
      by *= f;
    if (by > o->repass_max_bytes)
      continue;
    cal_point again;
    int rc = sweep_point(w, by, &again);
    if (rc)
      return core_err_wrap(rc, "%s sweep (%s), second pass", core_coll_name(w->op), rt_algo_name(w->algo));
    if (sweep_says(w))
      fprintf(stderr, "\r  %-28s again %10.0f B  %9.1f us (first %9.1f us)   ", sweep_label(w), again.bytes,
          again.t_p50_s * 1e6, pts[k].t_p50_s * 1e6);
    if (again.t_p50_s < pts[k].t_p50_s)
      pts[k] = again;
  }
  if (sweep_says(w) && cap > 0 && o->min_bytes <= o->repass_max_bytes)
    fputc('\n', stderr);
  return 0;
}

int cal_sweep_run(
    rt_comm *c, enum core_coll op, enum rt_algo algo, const cal_sweep_opts *o, cal_point **points, int *n) {
  sweep w = {.c = c,
      .ctl = o->control ? o->control : c,
      .b = o->bufs ? o->bufs : cal_bufs_for(c),
      .op = op,
      .algo = algo,
      .o = o};
  *points = NULL;
  *n = 0;
  if (w.ctl->rank != c->rank || w.ctl->size != c->size)
    return core_err_set(CORE_EINVAL,
        "cal_sweep_run: the control communicator is rank %d of %d, the measured one rank %d of %d", w.ctl->rank,
        w.ctl->size, c->rank, c->size);
  double f = o->factor > 1 ? o->factor : 2;
  int cap = 0;
  for (double by = o->min_bytes; by <= o->max_bytes * 1.0000001; by *= f)
    cap++;
  cal_point *pts = calloc((size_t)(cap ? cap : 1), sizeof *pts);
  if (!pts)
    return core_err_set(CORE_ENOMEM, "out of memory for %d sweep points", cap);
  int rc = first_pass(&w, f, pts, cap);
  if (rc == 0)
    rc = second_pass(&w, f, pts, cap);
  if (rc) {
    free(pts);
    return rc;
  }
  *points = pts;
  *n = cap;
  return 0;
}

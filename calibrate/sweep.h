/*
 * sweep — collective benchmarks in the style of nccl-tests: one small table
 * of operations (allreduce, allgather, reduce-scatter, broadcast), one shared
 * timing loop with warm-up, buffers whose start moves every iteration, data
 * refilled before and checked after every timed run on every rank, each
 * timed run of 256 KiB to 16 MiB right after an untimed one on scratch buffers
 * (so a shaper's burst allowance is spent, as between DDP's buckets), and
 * times taken per iteration as the slowest rank's. Reports min, median and max
 * time per size, algorithm bandwidth S/t and bus bandwidth with nccl-tests'
 * factors (docs/cost-models.md): allreduce 2(p-1)/p, reduce-scatter and
 * allgather (p-1)/p, broadcast 1. Sizes S are counted as nccl-tests counts
 * them (allgather: the whole output; reduce-scatter: the whole input).
 *
 * Where the buffers live is a second small table, the buffer operations
 * (cal_buf_ops: alloc, free, fill, check, offset, and copies of control
 * values in and out), chosen by the backend: host memory for Gloo
 * (cal_host_bufs) and device memory for NCCL (cal_device_bufs, through
 * runtime/gpu.h). The loop says what each buffer must hold (cal_data: one
 * rank's contribution, the sum over ranks, the ranks' blocks one after
 * another, or a constant) and the table writes and checks it in its own
 * memory. Host and device express the same contributions differently —
 * rank r's element i is r + 1 + i % 7 on the host (what this loop has always
 * used) and (r + 1)(i % 7 + 1) on the device (runtime/gpu.h's patterns) —
 * both small integers, so every sum over ranks is exact in fp32 and checked
 * for equality.
 *
 * Control values (rank 0's decision to stop adding iterations, and every
 * rank's per-iteration times for the slowest-rank maximum) travel over the
 * measured communicator itself, or over a control communicator of the same
 * ranks (cal_sweep_opts.control), outside the timed region: host tables pass
 * the caller's memory straight to the collective (the Gloo path exactly as
 * before); device tables stage them through a small device buffer (an NCCL
 * communicator only takes device pointers). Times are host clock readings
 * around each collective, which is right for both backends: every rt_comm
 * call returns only when its work is done (NCCL's waits on its stream).
 *
 * Every rank of the communicator calls the same functions with the same
 * arguments; results are complete on every rank.
 */
#ifndef CALIBRATE_SWEEP_H
#define CALIBRATE_SWEEP_H

#include "core/vocab.h"
#include "runtime/comm.h"

#include <stddef.h>

/* ---- buffer operations -------------------------------------------------- */

/* What a buffer of fp32 elements holds, element by element. */
enum cal_data_kind {
  CAL_DATA_RANK,   /* rank `rank`'s contribution, its elements first, first + 1, ... */
  CAL_DATA_SUM,    /* the sum of the contributions of ranks 0 .. ranks-1, same numbering */
  CAL_DATA_BLOCKS, /* `ranks` blocks of `block` elements: block r is rank r's contribution
                      from its element 0 (an allgather's output) */
  CAL_DATA_CONST   /* every element `value` */
};

typedef struct cal_data {
  enum cal_data_kind kind;
  int rank;     /* RANK */
  int ranks;    /* SUM, BLOCKS */
  size_t first; /* RANK, SUM */
  size_t block; /* BLOCKS */
  float value;  /* CONST */
} cal_data;

typedef struct cal_buf_ops {
  const char *name; /* "host" | "device" */
  int host_visible; /* the caller's host memory can be handed to the communicator */
  /* A buffer of bytes (> 0); CORE_ENOMEM, or CORE_EUNSUPPORTED without a device. */
  int (*alloc)(size_t bytes, void **buf);
  void (*free)(void *buf); /* NULL is fine */
  /* Write count elements of d into buf. */
  int (*fill)(void *buf, size_t count, const cal_data *d);
  /* Compare count elements of buf with d: 0, or CORE_ECORRUPT with a message
   * naming the first differing element, its value and the expected one
   * (phrased to follow "wrong result on rank R "); other codes for failures
   * to read the buffer. */
  int (*check)(const void *buf, size_t count, const cal_data *d);
  /* buf advanced by elems fp32 elements. */
  void *(*offset)(void *buf, size_t elems);
  /* Copies of control values between host memory and a buffer. */
  int (*put)(void *buf, const void *src, size_t bytes);
  int (*get)(void *dst, const void *buf, size_t bytes);
} cal_buf_ops;

/* malloc'd host memory (Gloo). */
extern const cal_buf_ops cal_host_bufs;
/* Memory of the calling thread's current CUDA device (runtime/gpu.h; NCCL).
 * Every function returns CORE_EUNSUPPORTED without a device or in a build
 * without CUDA. Fills are complete on the device when fill returns (the
 * collectives run on a stream of their own). */
extern const cal_buf_ops cal_device_bufs;
/* The table for c's backend: device buffers for "nccl", host otherwise. */
const cal_buf_ops *cal_bufs_for(const rt_comm *c);

/* Control values between host memory and every rank, through c: allgather
 * bytes (a multiple of 4) from each rank's `mine` into `all` (size x bytes,
 * rank r's at r x bytes), and broadcast bytes at `val` from root. Host tables
 * run the collective on the given memory; device tables stage through a
 * device buffer. Bit patterns travel unchanged (moved as fp32 elements). */
int cal_allgather_host(rt_comm *c, const cal_buf_ops *b, const void *mine, void *all, size_t bytes);
int cal_broadcast_host(rt_comm *c, const cal_buf_ops *b, void *val, size_t bytes, int root);
/* The median of v[0..n-1] (sorts v in place). */
double cal_median(double *v, int n);
/* v[i] = max over ranks of v[i], for n doubles. */
int cal_max_over_ranks(rt_comm *c, const cal_buf_ops *b, double *v, int n);
/* v[i] = mean over ranks of v[i], for n doubles. */
int cal_mean_over_ranks(rt_comm *c, const cal_buf_ops *b, double *v, int n);

/* ---- sweeps ------------------------------------------------------------- */

typedef struct cal_point {
  double bytes;
  int iters;
  double t_min_s, t_p50_s, t_max_s; /* per iteration, slowest rank */
  double t_se_s;                    /* standard error of the median (robust) */
  double algbw_GBps, busbw_GBps;    /* from the median */
} cal_point;

typedef struct cal_sweep_opts {
  double min_bytes, max_bytes; /* sizes min, min*factor, ... <= max */
  double factor;               /* default 2 */
  int warmup;                  /* untimed iterations per size (default 1) */
  int min_iters, max_iters;    /* timed iterations per size */
  double budget_s;             /* per size: stop adding iterations past this */
  int progress;                /* print progress to stderr */
  const char *label;           /* for progress lines */
  const cal_buf_ops *bufs;     /* NULL: cal_bufs_for(c) */
  /* Control values over this communicator instead of the measured one
   * (NULL: the measured one): the same ranks in the same order, buffers of
   * the same table. For NCCL communicators created for one allreduce
   * algorithm: before NCCL 2.24, NCCL_ALGO bound every collective of such a
   * communicator, and broadcast and allgather have no tree (runtime/nccl.h). */
  rt_comm *control;
  /* Sizes up to this many bytes are measured again after the whole sweep,
   * largest first, and each keeps the pass with the lower median (0: one
   * pass). A stall of a few seconds, which a median over iterations cannot
   * see past because every iteration of a stretch of sizes sits in it,
   * lands in one pass only. */
  double repass_max_bytes;
} cal_sweep_opts;

/* Run one operation over a range of sizes (and again up to
 * o->repass_max_bytes). *points is malloc'd. On a data mismatch returns
 * CORE_ECOMM naming rank, size and element. */
int cal_sweep_run(
    rt_comm *c, enum core_coll op, enum rt_algo algo, const cal_sweep_opts *o, cal_point **points, int *n);

/* One size, for benchmarks: same loop as the sweep, cal_bufs_for(c). */
int cal_sweep_one(rt_comm *c, enum core_coll op, enum rt_algo algo, double bytes, int warmup, int iters, cal_point *pt);

#endif

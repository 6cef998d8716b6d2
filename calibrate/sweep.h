/*
 * sweep — collective benchmarks in the style of nccl-tests: one small table
 * of operations (allreduce, allgather, reduce-scatter, broadcast), one shared
 * timing loop with warm-up, buffers whose start moves every iteration, data
 * refilled before and checked after every timed run on every rank, and times
 * taken per iteration as the slowest rank's. Reports min, median and max
 * time per size, algorithm bandwidth S/t and bus bandwidth with nccl-tests'
 * factors (reference/cost-models.md): allreduce 2(p-1)/p, reduce-scatter and
 * allgather (p-1)/p, broadcast 1. Sizes S are counted as nccl-tests counts
 * them (allgather: the whole output; reduce-scatter: the whole input).
 *
 * Every rank of the communicator calls the same functions with the same
 * arguments; results are complete on every rank.
 */
#ifndef CALIBRATE_SWEEP_H
#define CALIBRATE_SWEEP_H

#include "runtime/comm.h"

#include <stddef.h>

enum cal_op { CAL_ALLREDUCE = 0, CAL_ALLGATHER, CAL_REDUCESCATTER, CAL_BROADCAST, CAL_N_OPS };
const char *cal_op_name(enum cal_op op);
double cal_busbw_factor(enum cal_op op, int p);

typedef struct cal_point {
  double bytes;
  int iters;
  double t_min_s, t_p50_s, t_max_s;  /* per iteration, slowest rank */
  double t_se_s;                     /* standard error of the median (robust) */
  double algbw_GBps, busbw_GBps;     /* from the median */
} cal_point;

typedef struct cal_sweep_opts {
  double min_bytes, max_bytes;  /* sizes min, min*factor, ... <= max */
  double factor;                /* default 2 */
  int warmup;                   /* untimed iterations per size (default 1) */
  int min_iters, max_iters;     /* timed iterations per size */
  double budget_s;              /* per size: stop adding iterations past this */
  int progress;                 /* print progress to stderr */
  const char *label;            /* for progress lines */
} cal_sweep_opts;

/* Run one operation over a range of sizes. *points is malloc'd. On a data
 * mismatch returns CORE_ECOMM naming rank, size and element. */
int cal_sweep_run(rt_comm *c, enum cal_op op, enum rt_algo algo, const cal_sweep_opts *o,
                  cal_point **points, int *n);

/* One size, for benchmarks: same loop as the sweep. */
int cal_sweep_one(rt_comm *c, enum cal_op op, enum rt_algo algo, double bytes, int warmup,
                  int iters, cal_point *pt);

#endif

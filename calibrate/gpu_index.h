/*
 * gpu_index — what the GPU trace importer looks up in a Kineto trace
 * (calibrate/kineto.h): each host thread's ops as a tree in time order and
 * its CUDA runtime calls; the GPU activities (kernels, copies, memsets) each
 * tied to the runtime call that launched it by correlation id; the compute
 * stream; the device's gap between back-to-back activities; for every
 * activity that started later than its launch and its stream allowed, the
 * other stream whose activity it waited for (ended just before it started:
 * the trace has no event ids, so a cross-stream wait is told by timing), or,
 * for a kernel that started while a compute-stream kernel running since it
 * could have started was still running, that it was held back by that
 * kernel (the GPU's SMs were taken: no wait ends before it starts); the
 * time a runtime call spent blocked (beyond the median call of its name);
 * and the steps (ProfilerStep#N spans).
 */
#ifndef CALIBRATE_GPU_INDEX_H
#define CALIBRATE_GPU_INDEX_H

#include "calibrate/kineto.h"

#include <stdint.h>

/* A cross-stream wait resolves within this of the activity waited for. */
#define CAL_GPU_DEP_WINDOW_NS 20000
/* Two times of a trace this close may be one instant: files round them (a
 * float64 JSON library's rounding of a microsecond timestamp of the epoch
 * stays under 0.25 us). Step spans overlapping by more are not one after
 * the other; spans further apart in start or length are two steps. */
#define CAL_GPU_SAME_INSTANT_NS 1000

typedef struct cal_gthread {
  int32_t thread; /* interned "pid/tid" */
  int n_ops;
  int64_t *ops; /* cpu_op and user_annotation events, by (ts, -dur) */
  int *parent;  /* [n_ops] enclosing op's position, -1 */
  int n_rt;
  int64_t *rt; /* runtime calls by ts */
  int64_t *rt_ts;
} cal_gthread;

typedef struct cal_gact {
  int64_t ev;   /* the activity */
  int64_t rt;   /* the runtime call that launched it, -1 */
  int stream;   /* index into cal_gindex.streams */
  int dep;      /* stream it waited for, -1 */
  int held;     /* a kernel held back by the compute stream's kernel (dep then -1) */
  int nccl;     /* an NCCL kernel */
  float beside; /* share of it that ran beside an allreduce kernel of another stream */
} cal_gact;

typedef struct cal_gindex {
  const cal_ktrace *t;
  int n_threads;
  cal_gthread *threads;
  int64_t n_acts;
  cal_gact *acts;      /* by ts */
  int64_t *by_rt;      /* [t->n] first activity launched by runtime call ev, -1 (runtime events only) */
  int64_t *next_of_rt; /* [n_acts] next activity of the same runtime call, -1 */
  int n_streams;
  int32_t *streams;    /* stream ids as the trace numbers them */
  int compute;         /* the stream with the most non-NCCL kernel time */
  double gap_s;        /* mean gap between queued activities on the compute stream */
  double kernel_min_s; /* the shortest kernel on the compute stream (its fixed cost); 0 when none */
  int32_t *rt_names;   /* runtime call names seen, with their median duration */
  int64_t *rt_median_ns;
  int n_rt_names;
  int32_t main_thread; /* the thread of the ProfilerStep spans */
  int n_steps;
  int64_t *steps;        /* ProfilerStep#N events by ts */
  int n_unlaunched;      /* GPU activities whose correlation id matches no runtime call */
  int n_unlaunched_late; /* ... of them after a launched one on their stream: not from before profiling */
  int64_t *ends;         /* [n_acts] activity end times, ascending ... */
  int *end_stream;       /* ... with their streams */
} cal_gindex;

int cal_gindex_build(const cal_ktrace *t, cal_gindex *g);
/* The ProfilerStep#N spans of t by start time into *steps (*n of them; the
 * caller frees *steps): none, or two that overlap (one rank's steps follow
 * each other; a step written twice does not), is an input error naming the
 * file. */
int cal_gindex_steps(const cal_ktrace *t, int64_t **steps, int *n);
void cal_gindex_free(cal_gindex *g);

const cal_gthread *cal_gindex_thread(const cal_gindex *g, int32_t thread);
/* ns a runtime call spent beyond the median call of its name (blocked on a
 * full launch queue or a synchronization). */
int64_t cal_gindex_blocked_ns(const cal_gindex *g, int64_t rt);
/* Bit s set for each stream with an activity ending in [t - window, t]. */
uint64_t cal_gindex_streams_ending(const cal_gindex *g, int64_t t, int64_t window);
/* Is e an annotation (user_annotation, ProfilerStep, DDP's and the
 * optimizer's record_function spans) rather than an operator? */
int cal_gindex_is_annotation(const cal_gindex *g, const cal_kevent *e);

#endif

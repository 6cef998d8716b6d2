/*
 * import_gpu — a model file of a GPU training job from its PyTorch profiler
 * traces (Kineto JSON, plain or gzip; one or more files, one or more steps
 * each): the layers recovered from the operators (calibrate/gpu_step.h),
 * their parameter tensors and the order their gradients arrived in, each
 * layer's kernel time, and the step as the trace ran it (core/traced.h), for
 * the simulator to replay (sim/replay.h) on another cluster.
 *
 * Steps: the ProfilerStep#N spans of every trace. The first steps of a trace
 * are often warm-up (the device's queue filling, allocator growth): leading
 * steps more than 10% away from the median of the later half are left out,
 * and so are steps cut into other pieces than most (a data-dependent branch).
 * The rest give each piece's median; host and device times are then scaled
 * so that they add up to the median step's totals. The notes say which steps
 * were used, the spread of the step times, and the pieces' sums against the
 * measured spans of forward, backward and what follows.
 *
 * Tensor sizes come from the first of: DDP's copies of the gradients back
 * from their buckets (their bytes, in arrival order), the forward operators'
 * recorded shapes (record_shapes=True), the collectives a job without DDP ran
 * per gradient, or a base model with as many tensors. Without any, the
 * import fails saying what to record.
 *
 * Each piece's device time is split by what bounds its kernels
 * (calibrate/kclass.h), against the traced GPU's roofs: the peaks of the
 * given profile, else of its datasheet; the model records those roofs and
 * the precision of its compute-bound kernels, so that the simulator can
 * retarget the step to another GPU.
 */
#ifndef CALIBRATE_IMPORT_GPU_H
#define CALIBRATE_IMPORT_GPU_H

#include <stddef.h>

typedef struct cal_gpu_opts {
  const char *name;    /* model name; NULL: out's file name */
  int batch;           /* batch per GPU the trace was taken at; 0: from its shapes */
  const char *base;    /* model file whose tensors give the sizes; NULL */
  const char *profile; /* profile of the traced GPU whose peaks are its roofs; NULL: its datasheet
                         * (calibrate/gpu_datasheet.h) */
  int scenario;        /* a scenario of the traced job follows (cal_trace_scenario): what it
                         * could not be made of is refused before the model is written */
} cal_gpu_opts;

/* CORE_EUNSUPPORTED, with no message, when the first trace holds no GPU
 * work: the caller imports it as a CPU trace. */
int cal_import_gpu(
    const char *const *traces, int n_traces, const cal_gpu_opts *o, const char *out, char *notes, size_t notes_len);

/* Leading steps further than this share from the later steps' median are
 * warm-up. */
#define CAL_GIMPORT_WARMUP_SHARE 0.10

/* How many leading steps of one trace, of step times d[0..n), are warm-up by
 * the rule above (more than 10% from the median of the later half; the last
 * step is always kept): for `ddpsim validate`, which leaves them out as the
 * import does. A negative error code when out of memory. */
int cal_gimport_leading_warmups(const double *d, int n);

#endif

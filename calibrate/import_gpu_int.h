/*
 * import_gpu_int — what the GPU trace importer's files share (internal to
 * calibrate/import_gpu.c, calibrate/gpu_tensors.c and
 * calibrate/import_gpu_job.c): the import's state and its notes to the user.
 */
#ifndef CALIBRATE_IMPORT_GPU_INT_H
#define CALIBRATE_IMPORT_GPU_INT_H

#include <stddef.h>
#include <stdint.h>

#include "calibrate/gpu_index.h"
#include "calibrate/gpu_step.h"
#include "calibrate/import_gpu.h"
#include "calibrate/kclass.h"
#include "calibrate/kineto.h"
#include "core/traced.h"

typedef struct gtrace {
  cal_ktrace t;
  cal_gindex g;
  int loaded, indexed;
} gtrace;

typedef struct gimport {
  const cal_gpu_opts *o;
  int n_traces;
  gtrace *tr;
  int n_steps;
  cal_gstep *steps;
  int *step_trace; /* [n_steps] */
  int n_use, n_warm, n_other;
  int *use;               /* steps used */
  int ref;                /* the used step of median host time: structure, shapes */
  core_traced agg;        /* medians; grad pieces' index still the arrival ordinal */
  double *span_s;         /* [agg.n_pieces] median wall time of each piece */
  int64_t *arrival_elems; /* [n_grads] tensor size of each arrival */
  const char *sizes_from;
  int n_layers;         /* the step's layers, plus one for arrivals before any layer's backward */
  int *param_of;        /* [n_grads] arrival -> parameter index */
  int *param_layer;     /* [n_grads] parameter -> layer */
  int64_t *param_elems; /* [n_grads] parameter -> elements */
  double batch;
  double slowdown;  /* compute kernels beside an allreduce */
  cal_kroofs roofs; /* the traced GPU's, the floor of the trace being cut */
  char roofs_from[256];
  char *notes;
  size_t notes_len;
} gimport;

/* Append a line to the notes the command prints. */
void cal_gimport_note(gimport *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Trace k, whose steps are from `first` on, is of trace 0's job (the same
 * GPU, world size and model), or an input error naming both files. */
int cal_gimport_same_job(const gimport *m, int k, int first);
/* The steps to aggregate into m->use[0..n_use): each trace's leading
 * warm-up steps (m->n_warm) left out, then those cut the most common way
 * (the rest: m->n_other). */
int cal_gimport_choose_steps(gimport *m);

static inline const cal_ktrace *trace_of(const gimport *m, int step) { return &m->tr[m->step_trace[step]].t; }
static inline const cal_gstep *ref_step(const gimport *m) { return &m->steps[m->ref]; }

/* The parameters' sizes (from DDP's copies, recorded shapes, --base, the
 * collectives, in that order of trust) and their order in the model:
 * m->arrival_elems, m->sizes_from, m->param_*, m->n_layers. */
int cal_gimport_tensors(gimport *m);

#endif

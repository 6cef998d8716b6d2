/*
 * gpu_step — one training step of a GPU trace cut into the pieces of
 * core/traced.h, the way the host ran them:
 *
 *   - before backward, on the thread of the ProfilerStep spans: each
 *     parameterized operator at the top of the op tree (convolution, batch,
 *     layer and group norm, linear, embedding) starts a layer's forward
 *     piece, which takes the operators after it that run inside the same
 *     annotation (activations, pooling, residual adds); operators outside a
 *     layer (DDP's buffer broadcast, the data, the loss) form "other"
 *     pieces, one per annotation;
 *   - backward, on the autograd engine's thread: each node's span is a piece
 *     of the layer whose forward operator has its sequence number (so a
 *     layer's backward may come in parts), each AccumulateGrad span a
 *     gradient's arrival (a grad piece, with DDP's copy into its bucket and
 *     the launch of the bucket's allreduce inside it), DDP's copies back
 *     after the last arrival the finalize piece;
 *   - after backward, back on the first thread, one "other" piece per
 *     annotation (the optimizer, metrics).
 * The pieces cover the step's host time without gaps; each piece's host
 * time leaves out the time its runtime calls were blocked, its device time
 * is what it launched on the compute stream (each activity with the
 * device's gap), and what it launched elsewhere is side work, except DDP's
 * bucket allreduces, which are kept apart with their sizes. Each piece's
 * device time is split by what bounds its kernels (calibrate/kclass.h).
 */
#ifndef CALIBRATE_GPU_STEP_H
#define CALIBRATE_GPU_STEP_H

#include "calibrate/gpu_index.h"
#include "calibrate/kclass.h"
#include "core/traced.h"

/* Kinds of layer a forward operator starts (the model format's names). */
const char *cal_gpu_layer_kind(const char *op);

typedef struct cal_gstep {
  int64_t ev; /* its ProfilerStep event */
  double step_s;
  core_traced tr;   /* pieces; a grad piece's index is its arrival ordinal */
  double *span_s;   /* [tr.n_pieces] each piece's host wall time, blocked time included */
  int *part;        /* [tr.n_pieces] 0 before backward, 1 backward, 2 after */
  double *beside_s; /* [tr.n_pieces] its compute-stream time that ran beside an allreduce */
  int n_layers;
  int64_t *layer_op; /* [n_layers] the forward operator that starts each */
  int n_grads;
  int *grad_layer;         /* [n_grads] layer whose backward came last before it; -1 */
  int64_t *grad_bytes;     /* [n_grads] its size from DDP's copy back, -1 when none */
  double *grad_comm_bytes; /* [n_grads] without DDP: bytes of the collectives launched at its arrival, 0 */
  int64_t *grad_elems;     /* [n_grads] its shape's elements as AccumulateGrad recorded it, -1 */
  int *grad_seen;          /* [n_grads] how many of seen_layers had begun their backward before it */
  int n_seen;
  int *seen_layers; /* layers in the order their backward began */
  int n_buckets;    /* DDP's allreduces, in launch order */
  double *bucket_bytes, *bucket_s;
  double launch_host_s;        /* host time of those launches, summed */
  double fwd_s, bwd_s, post_s; /* the step's host time before, in and after backward */
  int ddp;                     /* DDP ran (its forward annotation is in the step) */
  double prec_s[CORE_N_PREC];  /* compute-bound kernel time per precision */
} cal_gstep;

/* Cut step `step` of g into s, classing kernels against roofs. */
int cal_gstep_cut(const cal_gindex *g, int step, const cal_kroofs *roofs, cal_gstep *s);
void cal_gstep_free(cal_gstep *s);

#endif

/*
 * import_trace — per-layer forward and backward times from a PyTorch
 * profiler trace, written as a model file with measured times (fwd_ms,
 * bwd_ms, measured_batch; core/model.h), so the simulator can run a workload
 * as it really ran instead of from FLOP counts.
 *
 * Input: the Chrome trace-event JSON that torch.profiler writes with
 * export_chrome_trace (or tensorboard_trace_handler; gzip-compressed too),
 * of training steps on one device: an object whose "traceEvents" array holds
 * complete events {"ph": "X", "cat": "cpu_op", "name": "aten::linear",
 * "ts": µs, "dur": µs, "pid", "tid", "args": {"Input Dims": [...]}} — a bare
 * array of events (the Chrome format's other form) is read too, with the
 * streaming reader (calibrate/kineto.h): memory follows the events kept, not
 * the file's size. Record shapes (record_shapes=True) so the layers' sizes
 * can be checked or derived.
 *
 * Several traces of one model may be read together (torch.profiler's
 * schedule with repeat=N exports one per cycle): the medians are over the
 * steps of all of them. Short profiling cycles are the way to profile many
 * steps: in one long session the steps slow down after the first few
 * (bench/NOTES.md, "Profiler sessions").
 *
 * Mapping, for models built of nn.Linear layers (bench/pytorch/trace_mlp.py
 * writes such traces):
 *   - a step is a "ProfilerStep#N" user annotation (each is analysed and the
 *     per-layer medians taken); without one, the whole trace is one step;
 *   - forward: the top-level aten::linear ops (aten::addmm / aten::mm /
 *     aten::matmul when no aten::linear encloses them), in time order, before
 *     the first backward op; layer i's forward runs from the start of its
 *     linear to the start of the next one (its activation included), the last
 *     one's up to the start of backward (the loss included: the model format
 *     has no loss term);
 *   - backward: the top-level "autograd::engine::evaluate_function: X" ops,
 *     in time order; the k-th AddmmBackward0 / MmBackward0 belongs to the
 *     k-th layer from the end. A layer's backward starts at its activation's
 *     backward (ReluBackward0, after the later layer's AccumulateGrad and
 *     TBackward0 ops) and ends where the earlier layer's starts; the last
 *     layer's starts with the first backward op (the loss's backward), the
 *     first layer's ends with the last.
 * So the layer times add up exactly to the span from the first forward linear
 * to the end of backward; the optimizer step and zero_grad are not layers.
 * One thing in that span is taken out: a trace of a DDP model holds DDP's
 * copies of the gradients into its buckets (reducer::mul_out, or aten::copy_
 * with a comm hook, run from a post-hook inside each parameter's
 * AccumulateGrad span), which the simulator adds on its own from the
 * profile; each comes off the backward of the layer it falls in, so layers
 * plus copies add up to the span.
 * Times are host-side op times: right for CPU training; on GPUs they are
 * launch times unless the trace was taken with CUDA_LAUNCH_BLOCKING=1.
 *
 * With a base model (same layers), the output keeps the base's layers and
 * adds the times; the layer count must match and linear shapes must agree.
 * Without one, the layers are built from the trace's shapes (type "linear",
 * in, out, ReLU when an aten::relu follows). Errors name the file with the
 * line and column (bad JSON) or the event index (traceEvents[i]).
 */
#ifndef CALIBRATE_IMPORT_TRACE_H
#define CALIBRATE_IMPORT_TRACE_H

#include <stddef.h>

typedef struct cal_trace_layer {
  double fwd_us, bwd_us; /* medians over steps */
  int in, out;           /* from the forward op's shapes; 0 if not recorded */
  int relu;              /* an aten::relu follows the linear */
  char other_act[32];    /* another activation op that follows it (aten::gelu, ...), or "" */
  long fwd_event;        /* index into traceEvents of its (first step's) forward op */
  long bwd_event;        /* ... and of its linear backward op */
} cal_trace_layer;

typedef struct cal_trace {
  int n_layers;
  cal_trace_layer *layers;
  int n_steps;           /* ProfilerStep spans analysed in every trace (one without any counts 1) */
  int batch;             /* rows of the first linear's input; 0 if not recorded */
  double span_us;        /* first step: first forward linear to the end of backward */
  double bucket_copy_us; /* median over steps: DDP's gradient copies into buckets, out of the layers */
  double layers_min_us, layers_median_us, layers_max_us; /* the layers' time in a step, over steps */
  double step_us;                                        /* first step: its ProfilerStep span, 0 without one */
  int loss_mse;                                          /* an MseLossBackward0 ran */
  int gpu;                                               /* the trace holds GPU kernels */
} cal_trace;

int cal_trace_read(const char *path, cal_trace *t);
/* Several traces of one model (a profiler's repeated cycles, one file each):
 * the steps of all of them, medians over all; the layers' details and the
 * first-step figures from the first. */
int cal_trace_read_many(const char *const *paths, int n_paths, cal_trace *t);
void cal_trace_free(cal_trace *t);

typedef struct cal_trace_opts {
  const char *base; /* model file whose layers get the times, or NULL */
  const char *name; /* model name when there is no base; NULL: from out's file name */
  int batch;        /* batch the trace was taken at; 0: from its shapes */
} cal_trace_opts;

/* Read the trace and write the measured model to out (atomically). notes
 * (may be NULL) receives lines for the user. */
int cal_import_trace(const char *trace, const cal_trace_opts *o, const char *out, char *notes, size_t notes_len);
/* The same from several traces of one model (cal_trace_read_many). */
int cal_import_traces(
    const char *const *traces, int n_traces, const cal_trace_opts *o, const char *out, char *notes, size_t notes_len);

/* What `import torch-trace` must know before it reads a trace: its inputs
 * (the traces, base and profile_base, either may be NULL) noted as such, and
 * its outputs (out; scenario, when not NULL, and the profile written beside
 * it) checked against them and against each other, so that a refusal comes
 * before any work and leaves nothing written. CORE_EUSAGE with the message
 * naming both files. */
int cal_trace_check_io(const char *const *traces, int n_traces, const char *base, const char *profile_base,
    const char *out, const char *scenario);

#endif

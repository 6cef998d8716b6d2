/*
 * replay — the step of a traced GPU job (core/traced.h) replayed with another
 * bucket assignment, network or world size.
 *
 * Three clocks run through the trace's pieces in their order: the host's,
 * which dispatches each piece in its measured host time and waits only at
 * the trace's syncs; the compute stream's, which runs a piece's work once the
 * host has started dispatching it, the stream is free and the side streams it
 * waited for in the trace are done; and one per side stream, whose measured
 * work starts when launched, when its stream is free and when the stream it
 * waited for is done (side work the compute stream's kernels held back, once
 * the compute-stream piece running then is done). DDP's bucket allreduces
 * run on a stream of their own: a bucket is launched (costing the host
 * launch_host_us) when the gradient arrivals (grad pieces) have filled it and
 * every earlier bucket has been launched, and starts once the compute stream
 * has done what was dispatched before it and the previous allreduce is done;
 * compute-stream work beside a running allreduce takes overlap_slowdown
 * times longer. The finalize piece's
 * device work waits for the last allreduce. With overlap off, every bucket is
 * launched just before finalize.
 *
 * The host never waits for the device otherwise (its launch queue is taken as
 * deep enough), so a step is replayed three times back to back and the step
 * time is the period of the last: the compute stream's when the device is the
 * bottleneck, the host's when the host is. Device work scales with the
 * batch (dev_scale); host work does not.
 *
 * Retargeting: a step traced on GPU X replayed as if on GPU Y. Where the
 * trace split each piece's device time by what bounds its kernels
 * (core/traced.h), compute-bound time scales by X's peak FLOP rate over
 * Y's at the precision, memory-bound time by X's memory bandwidth over
 * Y's, and launch-bound time (the kernels' fixed cost) scales neither with
 * the GPU nor with the batch. Side work, measured on its own streams, is
 * kept as traced.
 */
#ifndef SIM_REPLAY_H
#define SIM_REPLAY_H

#include "core/bucket.h"
#include "core/trace.h"
#include "core/traced.h"

typedef struct sim_replay_cfg {
  const core_traced *t;
  const core_buckets *bk;      /* tensor -> bucket, buckets in launch order */
  const double *bucket_comm_s; /* [n_buckets] allreduce time */
  const double *bucket_bytes;  /* [n_buckets] gradient bytes; NULL: not known (the buckets differ from
                                * traced ones whose bytes the trace records) */
  double dev_scale;            /* device work multiplier (batch / measured batch) */
  double compute_scale;        /* compute-bound device time multiplier (retargeting); 0: 1 */
  double memory_scale;         /* memory-bound device time multiplier; 0: 1 */
  int overlap;
  const char *const *layer_names; /* for the trace; may be NULL */
} sim_replay_cfg;

typedef struct sim_replay_result {
  double step_s;           /* period of a step */
  double compute_s;        /* the same step with free communication */
  double comm_s;           /* the buckets' allreduce time, summed */
  double exposed_comm_s;   /* step_s - compute_s (sim_step_exposed: under 1 ns reads 0); includes the
                            * traced skew wait, which comm_s leaves out */
  double host_s, device_s; /* host dispatch and compute-stream work of a step */
} sim_replay_result;

/* The retargeting multipliers (see above) for traced step t of model file
 * `model` simulated on profile pr (file `profile`) at compute precision p:
 * 1 and 1 on the traced GPU at the traced precision. CORE_EINVAL naming
 * the file and key to add when t or pr lacks what the ratio needs, or when
 * p moves other bytes than the traced precision (fp32 and tf32 may stand
 * for each other). */
int sim_replay_retarget(const core_traced *t, const char *model, const core_profile *pr, const char *profile,
    enum core_prec p, double *compute_scale, double *memory_scale);

/* Kernels a step of t ran of the job's own communication (not DDP's bucket
 * allreduces): they replay as measured, at the traced world
 * (t->world_size), whatever world the point has. */
int sim_replay_measured_comm(const core_traced *t);

/* DDP settings the replay of t cannot follow, refused naming the setting
 * at `where` (file:line) and model `name`: zero_optimizer (the step's
 * optimizer is replayed as measured), and gradient_as_bucket_view where
 * the traced step copied its gradients into DDP's buckets and back (the
 * copies are replayed as measured). */
int sim_replay_check_ddp(
    const core_traced *t, const char *name, int zero_optimizer, int bucket_view, const char *where);

/* trace (may be NULL) receives the last replayed step: the host, the
 * compute stream, the allreduce stream and the side streams of rank 0. */
int sim_replay_run(const sim_replay_cfg *c, sim_replay_result *r, core_trace *trace);

#endif

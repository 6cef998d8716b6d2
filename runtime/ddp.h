/*
 * ddp — PyTorch DistributedDataParallel's mechanics, for real: gradients are
 * packed into buckets assigned by core_bucket_assign (the same function the
 * simulator uses) as PyTorch rebuilds them after its first iteration, in the
 * model's gradient-ready order, from the first step on; as the backward pass
 * finishes a layer, its gradients are copied (scaled by 1/world, like the
 * default allreduce hook) into their buckets; a bucket whose gradients are
 * all in is handed, strictly in bucket order, to a communication thread that
 * allreduces it while the backward pass goes on; after the last bucket the
 * averaged gradients are copied back and SGD steps. With overlap off,
 * buckets are handed over only after backward. At construction rank 0's
 * parameters are broadcast, as DDP does. A communication hook
 * (runtime/compress.h: fp16, bf16, PowerSGD) can take the place of the plain
 * allreduce of each bucket, as register_comm_hook does; its body runs on the
 * compute thread when the bucket is ready (PyTorch calls the hook from the
 * autograd thread) and counts as compute, the allreduces and their
 * callbacks' work on the communication thread.
 *
 * Each step reports step, compute, communication and exposed communication
 * time (exposed = step - compute, the time the rank was not computing), and
 * optionally records trace spans.
 */
#ifndef RUNTIME_DDP_H
#define RUNTIME_DDP_H

#include "runtime/comm.h"
#include "runtime/compress.h"
#include "runtime/mlp.h"

#include "core/bucket.h"
#include "core/trace.h"

typedef struct rt_ddp_opts {
  double bucket_cap_mb;   /* PyTorch default 25 */
  double first_bucket_mb; /* PyTorch default 1 */
  int overlap;
  enum rt_algo algo;
  double lr;
  double momentum;       /* SGD momentum; 0 = plain SGD */
  int fail_step;         /* SIGKILL this rank mid-allreduce at this step; -1 = never */
  const char *fail_mark; /* file to write the wall-clock time of the injected death to, or NULL */
  /* Communication hook for every bucket; zeroed = none (a plain allreduce).
   * Its allreduces use algo above, whatever compress.algo says. */
  rt_compress_opts compress;
} rt_ddp_opts;

/* SGD's learning rate and momentum unless told otherwise (ddpsim train's
 * --lr and --momentum). */
#define RT_DDP_DEFAULT_LR 0.01
#define RT_DDP_DEFAULT_MOMENTUM 0.9

/* PyTorch's DDP defaults (25 MB buckets, a 1 MB first bucket, overlap, the
 * backend's default allreduce, no hook) and SGD at the defaults above; no
 * injected failure. */
void rt_ddp_opts_default(rt_ddp_opts *o);

typedef struct rt_step_metrics {
  long step;
  double step_s, compute_s, comm_s, exposed_comm_s; /* comm_s: the hooks' finish, comm thread */
  double loss;
  rt_compress_stats compress; /* what the hook did this step, all buckets */
} rt_step_metrics;

typedef struct rt_ddp rt_ddp;

int rt_ddp_create(const core_model *m, rt_comm *comm, int batch, const rt_ddp_opts *o, uint64_t seed, rt_ddp **out);
void rt_ddp_free(rt_ddp *d);

/* One training step on x [batch x in] and target [batch x out]. trace may
 * be NULL; spans are placed at trace_t0 + offset (microseconds). */
int rt_ddp_step(rt_ddp *d, long step, const float *x, const float *target, rt_step_metrics *m, core_trace *trace,
    double trace_t0_us);

rt_mlp *rt_ddp_mlp(rt_ddp *d);
const core_buckets *rt_ddp_buckets(const rt_ddp *d);
/* The last step's time of each bucket on the communication thread (its
 * allreduce, or its hook's allreduces and their callbacks: the spans of the
 * trace), seconds, into out[n_buckets]; their sum is the step's comm_s. */
void rt_ddp_bucket_comm_s(const rt_ddp *d, double *out);
/* SGD momentum buffers, n_params floats (all zero before the first step). */
float *rt_ddp_momentum(rt_ddp *d);
/* Whether the momentum buffers hold state (after one step or a restore). */
int rt_ddp_has_momentum(const rt_ddp *d);
void rt_ddp_set_has_momentum(rt_ddp *d, int has);

/* dst[i] = src[i] * scale: the copy of a gradient into its bucket, averaged
 * on the way. One out-of-line copy of the code, called by the engine and
 * timed by calibrate: how fast a plain loop runs depends on where it lands
 * in the binary (scenarios/profiles/README.md, device.memory_GBps), so
 * calibration must time the very instructions training runs, not a copy of
 * their source. */
void rt_scale_copy(float *restrict dst, const float *restrict src, int64_t n, float scale);

/* The optimizer's update after the allreduces, as torch.optim.SGD: with a
 * momentum buffer buf, buf = keep * buf + g and p -= lr * buf in one fused
 * pass (read p, g, buf; write buf, p: 20 bytes a parameter; keep = 0 on the
 * first step, where the buffer starts as the gradient); with buf NULL,
 * p -= lr * g. Out of line and timed by calibrate, as rt_scale_copy. */
void rt_sgd_update(float *restrict p, float *restrict buf, const float *restrict g, int64_t n, float lr, float keep);

#endif

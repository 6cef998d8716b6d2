/*
 * compress — DDP communication hooks with PyTorch's semantics, applied by the
 * DDP engine to each gradient bucket instead of a plain allreduce, so that
 * the bytes, the extra allreduces and the extra compute of gradient
 * compression can be measured for real and set beside the simulator's
 * predictions. References (torch/distributed/algorithms/ddp_comm_hooks/):
 *
 *  - none: allreduce (sum) of the fp32 bucket (default_hooks.allreduce_hook).
 *  - fp16, bf16: cast the bucket to half precision, allreduce (sum) in that
 *    type, cast back (default_hooks.fp16_compress_hook, bf16_compress_hook).
 *    PyTorch casts, then divides by the world size in half precision; here
 *    the bucket arrives divided in fp32 (runtime/ddp.h), so the division
 *    comes first and the cast rounds once (identical for a power-of-two
 *    world; otherwise within one half-precision rounding).
 *  - powersgd:R: powerSGD_hook.powerSGD_hook per bucket (Vogels et al.,
 *    "PowerSGD: Practical Low-Rank Gradient Compression for Distributed
 *    Optimization", NeurIPS 2019): each tensor viewed as n x m with
 *    n = shape[0] (core_model.tensor_rows) and rank r = min(n, m, R), and
 *    compressed iff (n + m) * r * min_rate < n * m (_should_compress; a 1-D
 *    tensor is n x 1, never compressed for min_rate >= 1); the others are
 *    allreduced together in one allreduce; for the compressed ones: error
 *    feedback, P = M Q, one allreduce of all P, orthogonalize each P,
 *    Q = M^T P, one allreduce of all Q, M = P Q^T, and the new local error.
 *    Before step start_iter it is a plain allreduce (the vanilla phase).
 *
 * The bucket a hook gets is already scaled by 1/world (as PyTorch's default
 * hook divides before its allreduce), so every sum of the hook is already a
 * mean: PyTorch divides the uncompressed tensors and Q by the world size
 * after their allreduces, this does not. Error feedback keeps PyTorch's
 * error (input - approximation of the mean, per rank) in the scale of the
 * input, i.e. divided by world: error = input - approximation / world. Then
 * the sum over ranks of the error buffers is exactly what the applied
 * updates still owe the true mean gradients.
 *
 * A compressor is one rank's PowerSGDState: it keeps P, Q (warm start) and
 * the error per bucket across steps. Its random numbers come from GSL
 * (MT19937) seeded identically on every rank, so ranks stay in lockstep;
 * they are not PyTorch's numbers (numpy's RandomState feeding
 * torch.manual_seed). The orthogonalization is GSL's Householder QR (thin
 * Q), where PyTorch uses Gram-Schmidt for rank <= 2 and torch.linalg.qr
 * above: the same column space, columns equal up to sign, which P Q^T does
 * not see; unlike Gram-Schmidt with orthogonalization_epsilon 0 it gives an
 * orthonormal basis (no NaN) for an all-zero or rank-deficient P.
 *
 * Buckets are prepared in order on one thread and finished in order on one
 * thread (see rt_compress_bucket). Errors are 0 or negative core_err codes
 * with a message.
 */
#ifndef RUNTIME_COMPRESS_H
#define RUNTIME_COMPRESS_H

#include <stdint.h>

#include "runtime/comm.h"

#include "core/bucket.h"
#include "core/model.h"
#include "core/vocab.h"

/* PowerSGDState's defaults (torch/distributed/algorithms/ddp_comm_hooks/
 * powerSGD_hook.py, PowerSGDState.__init__). */
#define RT_POWERSGD_DEFAULT_RANK 1       /* matrix_approximation_rank */
#define RT_POWERSGD_DEFAULT_START 1000   /* start_powerSGD_iter */
#define RT_POWERSGD_DEFAULT_MIN_RATE 2.0 /* min_compression_rate */
#define RT_POWERSGD_DEFAULT_SEED 0       /* random_seed */

typedef struct rt_compress_opts {
  enum core_compress kind;
  /* PowerSGD only: */
  int rank;           /* matrix_approximation_rank R >= 1 */
  long start_iter;    /* steps < start_iter run the vanilla allreduce */
  double min_rate;    /* min_compression_rate >= 0 */
  int error_feedback; /* use_error_feedback */
  int warm_start;     /* warm_start: reuse Q from the previous step */
  uint64_t seed;      /* random_seed */
  /* Every allreduce of the hook uses this algorithm (bf16 on Gloo: default
   * only). */
  enum rt_algo algo;
} rt_compress_opts;

/* kind none, PyTorch's PowerSGD defaults (rank 1, start 1000, min rate 2,
 * error feedback and warm start on, seed 0), algorithm default. */
void rt_compress_opts_default(rt_compress_opts *o);

/* "none", "fp16", "bf16", "powersgd:R" (R a whole number >= 1) or
 * "powersgd" (rank 1); sets kind and rank, leaves the rest of *o alone.
 * CORE_EINVAL with a message naming the accepted forms otherwise. */
int rt_compress_parse(const char *spec, rt_compress_opts *o);
/* "none", "fp16", "bf16", "powersgd". */

/* PyTorch's _should_compress for an n x m tensor: the rank used,
 * r = min(n, m, rank), goes to *eff_rank; returns 1 when
 * (n + m) * r * min_rate < n * m. */
int rt_compress_should(int64_t n, int64_t m, int rank, double min_rate, int *eff_rank);

/* The allreduce phases of a hook, for the byte counts. */
enum rt_compress_phase {
  RT_PHASE_BUCKET = 0,   /* the whole bucket: none, fp16, bf16, PowerSGD's vanilla phase */
  RT_PHASE_UNCOMPRESSED, /* PowerSGD: the tensors it does not compress, together */
  RT_PHASE_P,            /* PowerSGD: all P of the bucket */
  RT_PHASE_Q,            /* PowerSGD: all Q of the bucket */
  RT_COMPRESS_N_PHASES
};

/* What hooks did; rt_compress_bucket adds to it (zero it first). Bytes are
 * allreduce payloads (elements x element size), what the simulator calls
 * bytes on the wire; a ring allreduce sends 2 (world - 1) / world of that
 * per rank. Empty allreduces (a bucket without compressed tensors has no P
 * and Q) are not issued. The seconds are wall-clock time on the calling
 * thread. */
typedef struct rt_compress_stats {
  int64_t bytes[RT_COMPRESS_N_PHASES];
  int64_t allreduces[RT_COMPRESS_N_PHASES];
  int64_t buckets; /* hook calls */
  int64_t vanilla; /* of which PowerSGD's vanilla phase */
  double comm_s;   /* inside allreduces */
  double cast_s;   /* fp32 <-> fp16/bf16 */
  double gemm_s;   /* P = M Q, Q = M^T P, M = P Q^T (CBLAS) */
  double ortho_s;  /* QR of every P and warm-started Q (GSL), random Q */
  double copy_s;   /* error feedback, gathering uncompressed tensors */
} rt_compress_stats;

void rt_compress_stats_add(rt_compress_stats *dst, const rt_compress_stats *src);
int64_t rt_compress_stats_bytes(const rt_compress_stats *s);
/* cast + gemm + ortho + copy: the hook's compute. */
double rt_compress_stats_compute_s(const rt_compress_stats *s);

typedef struct rt_compressor rt_compressor;

/* A compressor for model m whose gradients are packed into buckets bk
 * (both must outlive it). PowerSGD needs every tensor's shape
 * (m->tensor_rows) and preallocates its P, Q, error and scratch buffers. */
int rt_compress_create(const rt_compress_opts *o, const core_model *m, const core_buckets *bk, rt_compressor **out);
void rt_compress_free(rt_compressor *c);

/* Run the hook on bucket b: buf holds bk->bucket_elems[b] fp32 gradients,
 * each already divided by the world size, and on return holds the averaged
 * (for PowerSGD: approximated) gradients, identical on every rank. step is
 * the training step (PowerSGD compresses from step start_iter on). Every
 * rank must call it for the same buckets and steps in the same order. st
 * may be NULL. On a communication failure the bucket and the compressor's
 * state for it are undefined.
 *
 * rt_compress_bucket is rt_compress_prepare then rt_compress_finish. The
 * DDP engine splits them as PyTorch does: the hook's body runs on the
 * autograd thread when the bucket is ready (prepare: the cast down;
 * PowerSGD's error feedback, gathering, Q and P = M Q), its futures'
 * callbacks on the process group's thread (finish: the allreduces and all
 * that follows them). Prepare and finish of one bucket alternate, and may
 * run on two threads, each in bucket order, while other buckets are in the
 * other stage: each bucket has buffers of its own. */
int rt_compress_bucket(rt_compressor *c, rt_comm *comm, int b, float *buf, long step, rt_compress_stats *st);
int rt_compress_prepare(rt_compressor *c, int b, float *buf, long step, rt_compress_stats *st);
int rt_compress_finish(rt_compressor *c, rt_comm *comm, int b, float *buf, long step, rt_compress_stats *st);

/* ---- introspection (tests, reports) ------------------------------------ */

/* Rank PowerSGD uses for tensor t, 0 when t is allreduced uncompressed (or
 * the hook is not PowerSGD). */
int rt_compress_tensor_rank(const rt_compressor *c, int t);

/* fp32 to fp16 or bf16 (t), element by element as the hooks cast: for
 * calibration, to time the backend's half-precision sums on real values. */
int rt_compress_to_half(enum rt_dtype t, const float *in, uint16_t *out, int64_t n);
/* Bucket b's error-feedback buffer (bucket_elems[b] floats, in the input's
 * scale), or NULL before its first PowerSGD step or without error
 * feedback. */
const float *rt_compress_error(const rt_compressor *c, int b);

#endif

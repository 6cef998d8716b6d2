/*
 * comm — the collective-communication interface the runtime is written
 * against, one table of operations per backend (as nccl-tests keeps one table
 * per collective): Gloo on CPU buffers (runtime/gloo.c over the C++ shim) and
 * NCCL on GPU buffers (runtime/nccl.c). The DDP engine, calibration sweeps and
 * checkpoints only ever see rt_comm, so a backend plugs in without touching
 * them.
 *
 * Every call is blocking from the caller's point of view and returns 0 or a
 * negative core_err code with a message: CORE_ETIMEDOUT when a peer did not
 * answer within the communicator's timeout, CORE_EPEER when a peer closed its
 * connection (it died), CORE_ECOMM for any other backend error. A
 * communicator is used by one thread at a time. Destroying a healthy
 * communicator is collective (every rank calls it, like torch's
 * destroy_process_group), so no rank closes a connection a peer still reads
 * from; after a failure it is local.
 */
#ifndef RUNTIME_COMM_H
#define RUNTIME_COMM_H

#include <stddef.h>

enum rt_dtype { RT_FP32 = 0, RT_FP16 = 1, RT_BF16 = 2 };
size_t rt_dtype_size(enum rt_dtype t);
const char *rt_dtype_name(enum rt_dtype t);
int rt_dtype_parse(const char *s, enum rt_dtype *out);

/* Allreduce algorithms; a backend rejects the ones it lacks with
 * CORE_EUNSUPPORTED. RT_ALGO_DEFAULT is what PyTorch would use (Gloo: the
 * segmented ring of gloo::allreduce; NCCL: NCCL's own choice). */
enum rt_algo {
  RT_ALGO_DEFAULT = 0,
  RT_ALGO_RING,             /* Gloo AllreduceRing (whole buffer); NCCL ring */
  RT_ALGO_RING_CHUNKED,     /* Gloo AllreduceRingChunked */
  RT_ALGO_HALVING_DOUBLING, /* Gloo AllreduceHalvingDoubling */
  RT_ALGO_BCUBE,            /* Gloo AllreduceBcube */
  RT_ALGO_TREE,             /* NCCL tree */
  RT_N_ALGOS
};
const char *rt_algo_name(enum rt_algo a);
int rt_algo_parse(const char *s, enum rt_algo *out);

typedef struct rt_comm rt_comm;

typedef struct rt_comm_ops {
  const char *name; /* "gloo", "nccl" */
  /* In place, sum. */
  int (*allreduce)(rt_comm *c, void *buf, size_t count, enum rt_dtype t, enum rt_algo a);
  /* recv holds count * size elements; rank r's send lands at r * count. */
  int (*allgather)(rt_comm *c, const void *send, void *recv, size_t count, enum rt_dtype t);
  /* send holds recvcount * size elements; sum of block r lands in rank r's recv. */
  int (*reduce_scatter)(rt_comm *c, const void *send, void *recv, size_t recvcount, enum rt_dtype t);
  int (*broadcast)(rt_comm *c, void *buf, size_t count, enum rt_dtype t, int root);
  int (*barrier)(rt_comm *c);
  void (*destroy)(rt_comm *c);
  /* Tear down at once, without waiting for peers: for a rank that failed on
   * its own (peers see its connections close). NULL: destroy is used. */
  void (*abort)(rt_comm *c);
} rt_comm_ops;

struct rt_comm {
  const rt_comm_ops *ops;
  int rank, size;
  double timeout_s;
  void *impl;
};

static inline int rt_allreduce(rt_comm *c, void *buf, size_t n, enum rt_dtype t, enum rt_algo a) {
  return c->ops->allreduce(c, buf, n, t, a);
}
static inline int rt_allgather(rt_comm *c, const void *s, void *r, size_t n, enum rt_dtype t) {
  return c->ops->allgather(c, s, r, n, t);
}
static inline int rt_reduce_scatter(rt_comm *c, const void *s, void *r, size_t n, enum rt_dtype t) {
  return c->ops->reduce_scatter(c, s, r, n, t);
}
static inline int rt_broadcast(rt_comm *c, void *buf, size_t n, enum rt_dtype t, int root) {
  return c->ops->broadcast(c, buf, n, t, root);
}
static inline int rt_barrier(rt_comm *c) { return c->ops->barrier(c); }
static inline void rt_comm_destroy(rt_comm *c) {
  if (c)
    c->ops->destroy(c);
}
static inline void rt_comm_abort(rt_comm *c) {
  if (c)
    (c->ops->abort ? c->ops->abort : c->ops->destroy)(c);
}
/* Destroy after success (collective), abort after a failure (local). */
static inline void rt_comm_finish(rt_comm *c, int rc) {
  if (rc)
    rt_comm_abort(c);
  else
    rt_comm_destroy(c);
}

#endif

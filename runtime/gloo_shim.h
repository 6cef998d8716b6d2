/*
 * gloo_shim — the C++ of ddpsim (gloo_shim.cc, gloo_store.cc), seen from C. It wraps the parts of
 * Gloo 0.5 the runtime needs behind plain C functions: the rendezvous stores
 * of runtime/store.h (FileStore, RedisStore, each under a PrefixStore), a
 * full-mesh TCP context over a store, and the collectives on CPU buffers.
 *
 * Nothing C++ crosses this boundary: every exception Gloo throws is caught
 * here and becomes a core_err code with a message naming the operation, the
 * rank and what to do. A timeout becomes CORE_ETIMEDOUT, a peer that closed
 * or reset its connection (a dead rank) CORE_EPEER, anything else from Gloo
 * CORE_ECOMM. After a collective fails the context is left unusable (Gloo
 * closes its pairs) and every later call returns the first failure's code;
 * destroy it and rendezvous again under a new prefix.
 *
 * The shim is built as a module of its own (libddpsim-gloo.so); the program
 * calls these functions through runtime/gloo_api.c, which opens it on first
 * use, so that commands without Gloo start without it and the C++ runtime.
 *
 * Most callers want runtime/gloo.h (an rt_comm) or runtime/pg.h (rank from the
 * environment, store from a spec).
 */
#ifndef RUNTIME_GLOO_SHIM_H
#define RUNTIME_GLOO_SHIM_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>

#include "runtime/comm.h"
#include "runtime/store.h"

/* ---- version and host sums --------------------------------------------- */

/* "Gloo MAJOR.MINOR.PATCH" of the headers this was built with. */
const char *rt_gloo_version(void);

/* out[i] = a[i] + b[i] for n elements with the very sum the allreduces use
 * (Gloo's for fp32 and fp16, ours for bf16), for calibration to time. */
int rt_gloo_sum(enum rt_dtype t, void *out, const void *a, const void *b, size_t n);

/* ---- Gloo contexts and collectives ------------------------------------ */

typedef struct rt_gloo_ctx rt_gloo_ctx;

/* Rendezvous rank of size through store and connect a full mesh of TCP
 * pairs; the transport listens on bind_addr (a hostname or an address of
 * this host that the other ranks can reach). timeout_ms bounds the
 * rendezvous and then every collective. The store may be closed afterwards.
 * Ignores SIGPIPE if it was at its default, as the Python interpreter does
 * for PyTorch: Gloo writes with writev(2), and a write to a dead peer must
 * become an error, not kill this rank. */
int rt_gloo_ctx_create(rt_store *store, int rank, int size, const char *bind_addr, int timeout_ms, rt_gloo_ctx **out);
/* Collective while the context is healthy: it first waits (at most the
 * timeout) until every rank has returned from its collectives, since a rank
 * closing its sockets can fail a peer still finishing the last one. Call it
 * on every rank, like a collective; after a failure it only closes. */
/* Close every connection now, without the final barrier (local failure). */
void rt_gloo_ctx_abort(rt_gloo_ctx *c);
void rt_gloo_ctx_destroy(rt_gloo_ctx *c);

/* In place, sum. RT_ALGO_DEFAULT is gloo::allreduce (the segmented ring that
 * PyTorch's ProcessGroupGloo runs); RING, RING_CHUNKED, HALVING_DOUBLING and
 * BCUBE are Gloo's classic algorithm classes. fp32 and fp16 with every
 * algorithm; bf16 with RT_ALGO_DEFAULT only (gloo::allreduce with a sum that
 * adds in float and rounds to nearest even, as ProcessGroupGloo does with
 * c10::BFloat16), other algorithms CORE_EUNSUPPORTED; RT_ALGO_TREE
 * CORE_EUNSUPPORTED. */
int rt_gloo_ctx_allreduce(rt_gloo_ctx *c, void *buf, size_t count, enum rt_dtype t, enum rt_algo a);
/* recv holds size * count elements; rank r's send lands at r * count. Any
 * dtype (it only moves bytes). */
int rt_gloo_ctx_allgather(rt_gloo_ctx *c, const void *send, void *recv, size_t count, enum rt_dtype t);
/* send holds size * recvcount elements; the sum over ranks of block r lands
 * in rank r's recv (Gloo's ReduceScatterHalvingDoubling). fp32 and fp16. */
int rt_gloo_ctx_reduce_scatter(rt_gloo_ctx *c, const void *send, void *recv, size_t recvcount, enum rt_dtype t);
/* In place from root. Any dtype. */
int rt_gloo_ctx_broadcast(rt_gloo_ctx *c, void *buf, size_t count, enum rt_dtype t, int root);
int rt_gloo_ctx_barrier(rt_gloo_ctx *c);

#ifdef __cplusplus
}
#endif

#endif

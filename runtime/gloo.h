/*
 * gloo — the Gloo backend of rt_comm: collectives on CPU buffers over TCP,
 * through the C++ shim (runtime/gloo_shim.h). rt_gloo_connect rendezvouses
 * the ranks through a store and returns a communicator named "gloo" whose
 * operations block for at most the timeout given here; see runtime/comm.h
 * for what each operation does and how failures are reported.
 *
 * Allreduce takes every Gloo algorithm (default = gloo::allreduce, as
 * PyTorch's ProcessGroupGloo; ring, ring_chunked, halving_doubling, bcube)
 * on fp32 and fp16, and bf16 with the default algorithm only (summed in
 * float, rounded to nearest even, as ProcessGroupGloo); RT_ALGO_TREE, bf16
 * with another algorithm and bf16 reduce_scatter are CORE_EUNSUPPORTED.
 * Most callers reach this through rt_pg_connect (runtime/pg.h).
 */
#ifndef RUNTIME_GLOO_H
#define RUNTIME_GLOO_H

#include "runtime/comm.h"
#include "runtime/gloo_shim.h"

/* Rendezvous rank of size through store (which the caller still owns and
 * may close afterwards), listening on bind_addr, and return the communicator
 * in *out. timeout_s (> 0) bounds the rendezvous and every later collective.
 * Release with rt_comm_destroy() on every rank: while the communicator is
 * healthy that is collective (see rt_gloo_ctx_destroy). */
int rt_gloo_connect(rt_store *store, int rank, int size, const char *bind_addr, double timeout_s, rt_comm **out);

#endif

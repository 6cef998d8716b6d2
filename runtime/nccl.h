/*
 * nccl — the NCCL backend of rt_comm: collectives on GPU buffers (device
 * pointers, see runtime/gpu.h), one rank per process and device.
 * rt_nccl_connect makes rank 0 create the ncclUniqueId and publish it in a
 * rendezvous store (the same Gloo FileStore or RedisStore the Gloo backend
 * meets through, runtime/store.h); the other ranks read it from there.
 *
 * Communicators are non-blocking (ncclConfig_t.blocking = 0) so that no
 * NCCL call can hang this process. Every operation — communicator creation,
 * each collective, finalization — is followed by one wait loop, the hang
 * detection of nccl-tests: it polls ncclCommGetAsyncError (until the
 * communicator leaves ncclInProgress) and then cudaStreamQuery on the
 * communicator's stream until the work is done, an error shows up, or
 * timeout_s passes. On a timeout the communicator is aborted
 * (ncclCommAbort) and the call returns CORE_ETIMEDOUT naming the operation,
 * the rank and the timeout. NCCL errors are CORE_ECOMM with
 * ncclGetErrorString and ncclGetLastError; ncclRemoteError (a peer failed or
 * went away) is CORE_EPEER. After any failure the communicator is aborted
 * and every later call returns the first failure's code; destroy it (a
 * local operation then) and connect again under a new store prefix.
 *
 * Data types fp32, fp16 and bf16, for every collective; sums. Broadcast is
 * in place. A barrier is a one-element allreduce.
 *
 * Algorithms. NCCL picks its algorithm per call from the set NCCL_ALGO
 * allowed when the communicator was created; it cannot be switched per
 * call. rt_nccl_connect leaves NCCL_ALGO as the user set it (NCCL's own
 * choice when unset): RT_ALGO_DEFAULT. rt_nccl_connect_algo with RT_ALGO_RING
 * or RT_ALGO_TREE sets NCCL_ALGO to "allreduce:ring" / "allreduce:tree"
 * ("Ring" / "Tree" before NCCL 2.24, which lacked per-collective lists)
 * while that communicator is created and restores it afterwards. Limitation:
 * the environment is process-wide, so no other thread may create an NCCL
 * communicator (or otherwise read or write the environment) during that
 * call. A collective then accepts RT_ALGO_DEFAULT (meaning "the algorithm
 * this communicator was created with") or exactly that algorithm; any other
 * is CORE_EUNSUPPORTED with a message saying to create a communicator with
 * it. Gloo's algorithms (ring_chunked, halving_doubling, bcube) are always
 * CORE_EUNSUPPORTED.
 *
 * libnccl is loaded on first use (runtime/nccl_api.h). Without it
 * rt_nccl_connect and rt_nccl_version return CORE_EUNSUPPORTED ("NCCL not
 * found: cannot load libnccl.so.2 ..."), and without a device (no driver,
 * no GPU) rt_nccl_connect returns CORE_EUNSUPPORTED ("no CUDA device:
 * ..."), both before touching the store; a ddpsim built without NCCL
 * (runtime/nccl_none.c, DDPSIM_HAVE_NCCL undefined) returns
 * CORE_EUNSUPPORTED saying so.
 */
#ifndef RUNTIME_NCCL_H
#define RUNTIME_NCCL_H

#include "runtime/comm.h"
#include "runtime/store.h"

/* Create the communicator of rank of size on CUDA device `device` (made
 * current for this thread), meeting through store under the key
 * "ddpsim_nccl_uid": a store prefix serves one communicator, as for Gloo.
 * timeout_s (> 0) bounds reading the id from the store, then communicator
 * creation, then each later operation. Release with rt_comm_destroy() on
 * every rank: while healthy that is collective (ncclCommFinalize, bounded by
 * the timeout, then ncclCommDestroy); after a failure it is local.
 * rt_comm_abort() is local at once (ncclCommAbort), for a rank that failed
 * on its own. */
int rt_nccl_connect(rt_store *store, int rank, int size, int device, double timeout_s, rt_comm **out);

/* The same with the allreduce algorithm fixed at creation: RT_ALGO_DEFAULT,
 * RT_ALGO_RING or RT_ALGO_TREE (see above); others are CORE_EUNSUPPORTED. */
int rt_nccl_connect_algo(
    rt_store *store, int rank, int size, int device, double timeout_s, enum rt_algo algo, rt_comm **out);

/* The CUDA stream (a cudaStream_t) a communicator from rt_nccl_connect runs
 * its collectives on, so callers can order their own work with them (CUDA
 * events, cudaStreamWaitEvent); NULL for any other communicator. */
void *rt_nccl_stream(rt_comm *c);

/* NCCL's version, e.g. 22809 for 2.28.9 (ncclGetVersion). */
int rt_nccl_version(int *version);

#endif

/* nccl — the NCCL backend of rt_comm (runtime/nccl.h). Built only where the
 * CUDA Toolkit and NCCL >= 2.14 were found; runtime/nccl_none.c otherwise.
 * NCCL and the CUDA runtime are called through the tables of
 * runtime/nccl_api.h and runtime/cuda_api.h, which each communicator keeps.
 *
 * One wait loop serves every operation (nccl-tests' testStreamSynchronize
 * with its hang detection): after NCCL accepted the call (ncclSuccess or,
 * for a non-blocking communicator, ncclInProgress), poll
 * ncclCommGetAsyncError until the communicator is no longer in progress,
 * then cudaStreamQuery on its stream until the work is done; an error on
 * either ends the wait, and so does the deadline, after which the
 * communicator is aborted. Polling spins for the first millisecond (small
 * collectives finish in microseconds and are timed by calibration), then
 * sleeps with a doubling interval up to a millisecond. */
#include "runtime/nccl.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/err.h"
#include "runtime/cuda_api.h"
#include "runtime/gpu.h"
#include "runtime/nccl_api.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "ddpsim's NCCL backend needs NCCL 2.14 or later (non-blocking communicators)"
#endif

#define UID_KEY "ddpsim_nccl_uid"

typedef struct nccl_impl {
  const rt_cudart *cu;
  const rt_nccl_api *nc;
  ncclComm_t comm; /* NULL once aborted or destroyed */
  cudaStream_t stream;
  int device;
  enum rt_algo algo; /* what NCCL_ALGO allowed at creation */
  int failed;        /* 0, or the first failure's code */
  float *one;        /* one device float for the barrier */
  char first_err[768];
} nccl_impl;

static nccl_impl *impl_of(rt_comm *c) { return (nccl_impl *)c->impl; }

/* ---- failures ------------------------------------------------------------ */

/* Record the first failure of c: its message and code, then abort the
 * communicator (ncclGetLastError must be read before, by the caller). */
static int fail(rt_comm *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(rt_comm *c, int code, const char *fmt, ...) {
  nccl_impl *im = impl_of(c);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(im->first_err, sizeof im->first_err, fmt, ap);
  va_end(ap);
  im->failed = code;
  if (im->comm) {
    (void)im->nc->ncclCommAbort(im->comm);
    im->comm = NULL;
  }
  (void)im->cu->cudaGetLastError();
  return core_err_set(code, "%s", im->first_err);
}

static int fail_nccl(rt_comm *c, const char *op, ncclResult_t r) {
  nccl_impl *im = impl_of(c);
  const char *last = im->nc->ncclGetLastError(im->comm);
  char detail[384];
  snprintf(detail, sizeof detail, "%s", last && *last ? last : "no detail from NCCL");
  if (r == ncclRemoteError)
    return fail(c, CORE_EPEER,
        "NCCL %s on rank %d of %d (device %d): a peer failed: %s (%s); check the other "
        "ranks' logs",
        op, c->rank, c->size, im->device, im->nc->ncclGetErrorString(r), detail);
  return fail(c, CORE_ECOMM, "NCCL %s on rank %d of %d (device %d) failed: %s (%s); NCCL_DEBUG=WARN shows more", op,
      c->rank, c->size, im->device, im->nc->ncclGetErrorString(r), detail);
}

/* ---- the wait loop ---------------------------------------------------------- */

/* Wait until what was just issued on c is done: the communicator out of
 * ncclInProgress and, when on_stream, its stream idle. */
static int nccl_wait(rt_comm *c, const char *op, int on_stream) {
  nccl_impl *im = impl_of(c);
  const double t0 = core_now(), deadline = t0 + c->timeout_s;
  long nap_ns = 20 * 1000;
  for (;;) {
    ncclResult_t as = ncclSuccess;
    ncclResult_t r = im->nc->ncclCommGetAsyncError(im->comm, &as);
    if (r != ncclSuccess)
      return fail_nccl(c, op, r);
    if (as != ncclSuccess && as != ncclInProgress)
      return fail_nccl(c, op, as);
    if (as == ncclSuccess) {
      if (!on_stream)
        return 0;
      cudaError_t q = im->cu->cudaStreamQuery(im->stream);
      if (q == cudaSuccess)
        return 0;
      if (q != cudaErrorNotReady)
        return fail(c, CORE_ECOMM, "NCCL %s on rank %d of %d (device %d): CUDA error %s (%s)", op, c->rank, c->size,
            im->device, im->cu->cudaGetErrorString(q), im->cu->cudaGetErrorName(q));
    }
    double t = core_now();
    if (t > deadline)
      return fail(c, CORE_ETIMEDOUT,
          "NCCL %s on rank %d of %d (device %d) did not finish within the %g s "
          "timeout: a peer is hung, dead or never joined; the communicator was "
          "aborted (check the other ranks, or raise the timeout)",
          op, c->rank, c->size, im->device, c->timeout_s);
    if (t - t0 < 1e-3) {
      sched_yield();
    } else {
      struct timespec ts = {0, nap_ns};
      nanosleep(&ts, NULL);
      if (nap_ns < 1000 * 1000)
        nap_ns *= 2;
    }
  }
}

/* After NCCL returned r for op: fail, or wait for it. */
static int issued(rt_comm *c, const char *op, ncclResult_t r) {
  if (r != ncclSuccess && r != ncclInProgress)
    return fail_nccl(c, op, r);
  return nccl_wait(c, op, 1);
}

/* 0 when c can take op; the first failure's code once it has failed. */
static int ready(rt_comm *c, const char *op) {
  nccl_impl *im = impl_of(c);
  if (im->failed)
    return core_err_set(im->failed,
        "NCCL %s on rank %d of %d: the communicator was aborted after an "
        "earlier failure (%s); destroy it and connect again under a new store "
        "prefix",
        op, c->rank, c->size, im->first_err);
  cudaError_t e = im->cu->cudaSetDevice(im->device);
  if (e != cudaSuccess)
    return fail(c, CORE_ECOMM, "NCCL %s on rank %d of %d: cudaSetDevice(%d): %s", op, c->rank, c->size, im->device,
        im->cu->cudaGetErrorString(e));
  return 0;
}

static int dtype_of(rt_comm *c, enum rt_dtype t, const char *op, ncclDataType_t *out) {
  switch (t) {
  case RT_FP32: *out = ncclFloat32; return 0;
  case RT_FP16: *out = ncclFloat16; return 0;
  case RT_BF16: *out = ncclBfloat16; return 0;
  }
  return core_err_set(CORE_EINVAL, "NCCL %s on rank %d of %d: unknown dtype %d", op, c->rank, c->size, (int)t);
}

/* ---- collectives ------------------------------------------------------------- */

static int nccl_allreduce(rt_comm *c, void *buf, size_t count, enum rt_dtype t, enum rt_algo a) {
  nccl_impl *im = impl_of(c);
  char op[128];
  snprintf(op, sizeof op, "allreduce (%s, %zu elements, %s)", rt_dtype_name(t), count, rt_algo_name(a));
  ncclDataType_t dt = ncclFloat32;
  int rc = ready(c, op);
  if (rc || (rc = dtype_of(c, t, op, &dt)))
    return rc;
  if (a != RT_ALGO_DEFAULT && a != im->algo) {
    if (a == RT_ALGO_RING || a == RT_ALGO_TREE)
      return core_err_set(CORE_EUNSUPPORTED,
          "NCCL %s on rank %d of %d: NCCL reads its algorithm (NCCL_ALGO) only "
          "when a communicator is created and this one was created with '%s'; "
          "create a communicator with rt_nccl_connect_algo(..., RT_ALGO_%s, ...) "
          "to run '%s'",
          op, c->rank, c->size, rt_algo_name(im->algo), a == RT_ALGO_RING ? "RING" : "TREE", rt_algo_name(a));
    return core_err_set(CORE_EUNSUPPORTED,
        "NCCL %s on rank %d of %d: '%s' is a Gloo algorithm; NCCL offers "
        "default, ring and tree",
        op, c->rank, c->size, rt_algo_name(a));
  }
  if (count == 0)
    return 0;
  if (!buf)
    return core_err_set(CORE_EINVAL, "NCCL %s: null buffer", op);
  return issued(c, op, im->nc->ncclAllReduce(buf, buf, count, dt, ncclSum, im->comm, im->stream));
}

static int nccl_allgather(rt_comm *c, const void *send, void *recv, size_t count, enum rt_dtype t) {
  nccl_impl *im = impl_of(c);
  char op[128];
  snprintf(op, sizeof op, "allgather (%s, %zu elements per rank)", rt_dtype_name(t), count);
  ncclDataType_t dt = ncclFloat32;
  int rc = ready(c, op);
  if (rc || (rc = dtype_of(c, t, op, &dt)) || count == 0)
    return rc;
  if (!send || !recv)
    return core_err_set(CORE_EINVAL, "NCCL %s: null buffer", op);
  return issued(c, op, im->nc->ncclAllGather(send, recv, count, dt, im->comm, im->stream));
}

static int nccl_reduce_scatter(rt_comm *c, const void *send, void *recv, size_t recvcount, enum rt_dtype t) {
  nccl_impl *im = impl_of(c);
  char op[128];
  snprintf(op, sizeof op, "reduce-scatter (%s, %zu elements per rank)", rt_dtype_name(t), recvcount);
  ncclDataType_t dt = ncclFloat32;
  int rc = ready(c, op);
  if (rc || (rc = dtype_of(c, t, op, &dt)) || recvcount == 0)
    return rc;
  if (!send || !recv)
    return core_err_set(CORE_EINVAL, "NCCL %s: null buffer", op);
  return issued(c, op, im->nc->ncclReduceScatter(send, recv, recvcount, dt, ncclSum, im->comm, im->stream));
}

static int nccl_broadcast(rt_comm *c, void *buf, size_t count, enum rt_dtype t, int root) {
  nccl_impl *im = impl_of(c);
  char op[128];
  snprintf(op, sizeof op, "broadcast (%s, %zu elements, root %d)", rt_dtype_name(t), count, root);
  ncclDataType_t dt = ncclFloat32;
  int rc = ready(c, op);
  if (rc || (rc = dtype_of(c, t, op, &dt)))
    return rc;
  if (root < 0 || root >= c->size)
    return core_err_set(CORE_EINVAL, "NCCL %s on rank %d of %d: root out of range", op, c->rank, c->size);
  if (count == 0)
    return 0;
  if (!buf)
    return core_err_set(CORE_EINVAL, "NCCL %s: null buffer", op);
  return issued(c, op, im->nc->ncclBroadcast(buf, buf, count, dt, root, im->comm, im->stream));
}

/* NCCL has no barrier: a one-element allreduce, as torch.distributed does. */
static int nccl_barrier(rt_comm *c) {
  nccl_impl *im = impl_of(c);
  int rc = ready(c, "barrier");
  if (rc)
    return rc;
  return issued(c, "barrier", im->nc->ncclAllReduce(im->one, im->one, 1, ncclFloat32, ncclSum, im->comm, im->stream));
}

/* ---- lifetime ---------------------------------------------------------------- */

/* Free what connect made. cudaFree synchronizes the device; after a failure
 * the device may still hold work that never ends, so the 4-byte scratch is
 * then left to the process's CUDA context. Destroying a stream does not
 * wait. */
static void release(rt_comm *c, int free_scratch) {
  nccl_impl *im = impl_of(c);
  if (free_scratch)
    (void)im->cu->cudaFree(im->one);
  if (im->stream)
    (void)im->cu->cudaStreamDestroy(im->stream);
  (void)im->cu->cudaGetLastError();
  free(im);
  free(c);
}

static void nccl_destroy(rt_comm *c) {
  nccl_impl *im = impl_of(c);
  if (!im) {
    free(c);
    return;
  }
  int healthy = im->comm && !im->failed;
  if (healthy) {
    (void)im->cu->cudaSetDevice(im->device);
    /* Collective: flushes every rank's outstanding work, bounded by the
     * timeout (nccl_wait aborts on a timeout or an error). */
    ncclResult_t r = im->nc->ncclCommFinalize(im->comm);
    int rc = r == ncclSuccess || r == ncclInProgress ? nccl_wait(c, "finalize", 0) : fail_nccl(c, "finalize", r);
    if (rc == 0) {
      (void)im->nc->ncclCommDestroy(im->comm);
      im->comm = NULL;
    }
    healthy = rc == 0;
  } else if (im->comm) {
    (void)im->nc->ncclCommAbort(im->comm);
    im->comm = NULL;
  }
  release(c, healthy);
}

/* Local and at once: peers see this rank go and fail their own calls. */
static void nccl_abort(rt_comm *c) {
  nccl_impl *im = impl_of(c);
  if (!im) {
    free(c);
    return;
  }
  /* Every call waits for its own work, so a communicator that has not
   * failed has nothing in flight and its scratch can be freed. */
  int quiet = !im->failed;
  if (im->comm) {
    (void)im->cu->cudaSetDevice(im->device);
    (void)im->nc->ncclCommAbort(im->comm);
    im->comm = NULL;
  }
  release(c, quiet);
}

static const rt_comm_ops nccl_ops = {
    .name = "nccl",
    .allreduce = nccl_allreduce,
    .allgather = nccl_allgather,
    .reduce_scatter = nccl_reduce_scatter,
    .broadcast = nccl_broadcast,
    .barrier = nccl_barrier,
    .destroy = nccl_destroy,
    .abort = nccl_abort,
};

void *rt_nccl_stream(rt_comm *c) { return c && c->ops == &nccl_ops && c->impl ? (void *)impl_of(c)->stream : NULL; }

int rt_nccl_version(int *version) {
  if (!version)
    return core_err_set(CORE_EINVAL, "rt_nccl_version: no output pointer");
  *version = 0;
  const rt_nccl_api *nc;
  int rc = rt_nccl_api_load(&nc);
  if (rc)
    return rc;
  ncclResult_t r = nc->ncclGetVersion(version);
  if (r != ncclSuccess)
    return core_err_set(CORE_ECOMM, "ncclGetVersion: %s", nc->ncclGetErrorString(r));
  return 0;
}

/* ---- connecting ------------------------------------------------------------- */

/* Rank 0 creates the unique id and publishes it; the others wait for it. */
static int exchange_id(const rt_nccl_api *nc, rt_store *store, int rank, int size, int timeout_ms, ncclUniqueId *id) {
  if (rank == 0) {
    ncclResult_t r = nc->ncclGetUniqueId(id);
    if (r != ncclSuccess)
      return core_err_set(CORE_ECOMM, "NCCL rank 0 of %d: ncclGetUniqueId: %s (%s)", size, nc->ncclGetErrorString(r),
          nc->ncclGetLastError(NULL));
    int rc = rt_store_set(store, UID_KEY, id, sizeof *id);
    return rc ? core_err_wrap(rc, "NCCL rank 0 of %d publishing its unique id: ", size) : 0;
  }
  void *v = NULL;
  size_t len = 0;
  int rc = rt_store_get(store, UID_KEY, timeout_ms, &v, &len);
  if (rc)
    return core_err_wrap(rc, "NCCL rank %d of %d waiting for rank 0's unique id: ", rank, size);
  if (len != sizeof *id) {
    free(v);
    return core_err_set(CORE_EINVAL,
        "NCCL rank %d of %d: the store's %s has %zu bytes, not the %zu of an "
        "ncclUniqueId (a prefix shared with another program?)",
        rank, size, UID_KEY, len, sizeof *id);
  }
  memcpy(id, v, sizeof *id);
  free(v);
  return 0;
}

/* Sets NCCL_ALGO for algo while a communicator is created, and restores
 * the user's value afterwards (see runtime/nccl.h for the limitation). */
typedef struct algo_env {
  int changed;
  char *saved; /* the previous value, or NULL when it was unset */
} algo_env;

static int algo_env_set(const rt_nccl_api *nc, algo_env *ae, enum rt_algo algo) {
  memset(ae, 0, sizeof *ae);
  if (algo == RT_ALGO_DEFAULT)
    return 0;
  int v = 0;
  /* Per-collective lists ("allreduce:ring") arrived in NCCL 2.24. */
  int per_coll = nc->ncclGetVersion(&v) == ncclSuccess && v >= 22400;
  const char *value =
      algo == RT_ALGO_RING ? (per_coll ? "allreduce:ring" : "Ring") : (per_coll ? "allreduce:tree" : "Tree");
  const char *old = getenv("NCCL_ALGO");
  if (old && !(ae->saved = strdup(old)))
    return core_err_set(CORE_ENOMEM, "saving NCCL_ALGO: out of memory");
  if (setenv("NCCL_ALGO", value, 1) != 0) {
    free(ae->saved);
    ae->saved = NULL;
    return core_err_errno(errno, "setting NCCL_ALGO=%s", value);
  }
  ae->changed = 1;
  return 0;
}

static void algo_env_restore(algo_env *ae) {
  if (!ae->changed)
    return;
  if (ae->saved)
    setenv("NCCL_ALGO", ae->saved, 1);
  else
    unsetenv("NCCL_ALGO");
  free(ae->saved);
  ae->saved = NULL;
  ae->changed = 0;
}

/* The arguments, NCCL and the device, checked before the store is touched;
 * device made current. The libraries' tables in *nc and *cu. */
static int connect_checks(rt_store *store, int rank, int size, int device, double timeout_s, enum rt_algo algo,
    const rt_nccl_api **nc, const rt_cudart **cu) {
  if (!store)
    return core_err_set(CORE_EINVAL, "rt_nccl_connect: no rendezvous store");
  if (size < 1 || rank < 0 || rank >= size)
    return core_err_set(CORE_EINVAL, "rt_nccl_connect: rank %d of %d is out of range", rank, size);
  if (!(timeout_s > 0) || timeout_s > INT_MAX / 1000.0)
    return core_err_set(CORE_EINVAL, "NCCL timeout %g s is out of range (0, %d]", timeout_s, INT_MAX / 1000);
  if (algo != RT_ALGO_DEFAULT && algo != RT_ALGO_RING && algo != RT_ALGO_TREE)
    return core_err_set(CORE_EUNSUPPORTED,
        "NCCL communicator: '%s' is a Gloo algorithm; NCCL offers default, "
        "ring and tree",
        rt_algo_name(algo));
  int ndev = 0;
  int rc = rt_nccl_api_load(nc);
  if (rc || (rc = rt_gpu_count(&ndev)))
    return core_err_wrap(rc, "NCCL rank %d of %d: ", rank, size);
  if (device < 0 || device >= ndev)
    return core_err_set(
        CORE_EINVAL, "NCCL rank %d of %d: CUDA device %d does not exist (this host has %d)", rank, size, device, ndev);
  if ((rc = rt_gpu_set_device(device)) || (rc = rt_cudart_load(cu)))
    return core_err_wrap(rc, "NCCL rank %d of %d: ", rank, size);
  return 0;
}

/* The stream and scratch float of a new communicator. */
static int stream_and_scratch(rt_comm *c) {
  nccl_impl *im = impl_of(c);
  const rt_cudart *cu = im->cu;
  cudaError_t e = cu->cudaStreamCreateWithFlags(&im->stream, cudaStreamNonBlocking);
  if (e != cudaSuccess)
    return core_err_set(CORE_ECOMM, "NCCL rank %d of %d: cudaStreamCreate on device %d: %s", c->rank, c->size,
        im->device, cu->cudaGetErrorString(e));
  if ((e = cu->cudaMalloc((void **)&im->one, sizeof *im->one)) != cudaSuccess) {
    int rc = core_err_set(e == cudaErrorMemoryAllocation ? CORE_ENOMEM : CORE_ECOMM,
        "NCCL rank %d of %d: cudaMalloc on device %d: %s", c->rank, c->size, im->device, cu->cudaGetErrorString(e));
    (void)cu->cudaStreamDestroy(im->stream);
    im->stream = NULL;
    return rc;
  }
  return 0;
}

/* Create c's NCCL communicator with NCCL_ALGO set for algo meanwhile. */
static int create_comm(rt_comm *c, ncclUniqueId id, enum rt_algo algo) {
  nccl_impl *im = impl_of(c);
  algo_env ae;
  int rc = algo_env_set(im->nc, &ae, algo);
  if (rc)
    return rc;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclResult_t r = im->nc->ncclCommInitRankConfig(&im->comm, c->size, id, c->rank, &cfg);
  /* Non-blocking: creation goes on in the background (NCCL reads NCCL_ALGO
   * there), so the environment is restored only once it has ended. */
  if (r != ncclSuccess && r != ncclInProgress)
    rc = fail_nccl(c, "communicator creation", r);
  else
    rc = nccl_wait(c, "communicator creation", 0);
  algo_env_restore(&ae);
  return rc; /* after a failure, fail() has aborted the communicator */
}

int rt_nccl_connect_algo(
    rt_store *store, int rank, int size, int device, double timeout_s, enum rt_algo algo, rt_comm **out) {
  if (!out)
    return core_err_set(CORE_EINVAL, "rt_nccl_connect: no output pointer");
  *out = NULL;
  const rt_nccl_api *nc = NULL;
  const rt_cudart *cu = NULL;
  /* No NCCL or no device: say so before touching the store. */
  int rc = connect_checks(store, rank, size, device, timeout_s, algo, &nc, &cu);
  if (rc)
    return rc;
  int timeout_ms = (int)(timeout_s * 1000.0 + 0.5);
  if (timeout_ms < 1)
    timeout_ms = 1;
  ncclUniqueId id;
  if ((rc = exchange_id(nc, store, rank, size, timeout_ms, &id)))
    return rc;

  rt_comm *c = calloc(1, sizeof *c);
  nccl_impl *im = calloc(1, sizeof *im);
  if (!c || !im) {
    rc = core_err_set(CORE_ENOMEM, "rt_nccl_connect: out of memory");
    goto free_comm;
  }
  *c = (rt_comm){.ops = &nccl_ops, .rank = rank, .size = size, .timeout_s = timeout_s, .impl = im};
  im->cu = cu;
  im->nc = nc;
  im->device = device;
  im->algo = algo;
  if ((rc = stream_and_scratch(c)))
    goto free_comm;
  if ((rc = create_comm(c, id, algo)))
    goto free_scratch;
  *out = c;
  return 0;

free_scratch:
  cu->cudaFree(im->one);
  cu->cudaStreamDestroy(im->stream);
free_comm:
  (void)cu->cudaGetLastError();
  free(im);
  free(c);
  return rc;
}

int rt_nccl_connect(rt_store *store, int rank, int size, int device, double timeout_s, rt_comm **out) {
  return rt_nccl_connect_algo(store, rank, size, device, timeout_s, RT_ALGO_DEFAULT, out);
}

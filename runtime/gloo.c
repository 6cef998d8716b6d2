#include "runtime/gloo.h"

#include <limits.h>
#include <netdb.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "core/err.h"

static rt_gloo_ctx *ctx_of(rt_comm *c) { return (rt_gloo_ctx *)c->impl; }

static int gloo_allreduce(rt_comm *c, void *buf, size_t count, enum rt_dtype t, enum rt_algo a) {
  if (a == RT_ALGO_TREE)
    return core_err_set(CORE_EUNSUPPORTED,
        "allreduce on rank %d of %d: the tree algorithm is NCCL's; Gloo offers "
        "default, ring, ring_chunked, halving_doubling and bcube",
        c->rank, c->size);
  return rt_gloo_ctx_allreduce(ctx_of(c), buf, count, t, a);
}

static int gloo_allgather(rt_comm *c, const void *send, void *recv, size_t count, enum rt_dtype t) {
  return rt_gloo_ctx_allgather(ctx_of(c), send, recv, count, t);
}

static int gloo_reduce_scatter(rt_comm *c, const void *send, void *recv, size_t recvcount, enum rt_dtype t) {
  return rt_gloo_ctx_reduce_scatter(ctx_of(c), send, recv, recvcount, t);
}

static int gloo_broadcast(rt_comm *c, void *buf, size_t count, enum rt_dtype t, int root) {
  return rt_gloo_ctx_broadcast(ctx_of(c), buf, count, t, root);
}

static int gloo_barrier(rt_comm *c) { return rt_gloo_ctx_barrier(ctx_of(c)); }

static void gloo_abort(rt_comm *c) {
  rt_gloo_ctx_abort(ctx_of(c));
  free(c);
}

static void gloo_destroy(rt_comm *c) {
  rt_gloo_ctx_destroy(ctx_of(c));
  free(c);
}

static const rt_comm_ops gloo_ops = {
    .name = "gloo",
    .allreduce = gloo_allreduce,
    .allgather = gloo_allgather,
    .reduce_scatter = gloo_reduce_scatter,
    .broadcast = gloo_broadcast,
    .barrier = gloo_barrier,
    .destroy = gloo_destroy,
    .abort = gloo_abort,
};

/* An address to bind that does not resolve is refused here: Gloo's TCP
 * device does not check getaddrinfo's failure and crashes on it. */
static int check_bind(const char *addr) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
  int rc = getaddrinfo(addr, NULL, &hints, &res);
  if (rc != 0)
    return core_err_set(CORE_EUSAGE,
        "the address to bind, '%s' (--bind, or DDPSIM_BIND_ADDR), does not resolve: %s; give an address of this host "
        "(see `ip addr`) that the other ranks reach",
        addr, gai_strerror(rc));
  freeaddrinfo(res);
  return 0;
}

int rt_gloo_connect(rt_store *store, int rank, int size, const char *bind_addr, double timeout_s, rt_comm **out) {
  if (!out)
    return core_err_set(CORE_EINVAL, "rt_gloo_connect: no output pointer");
  *out = NULL;
  int rc;
  if (bind_addr && *bind_addr && (rc = check_bind(bind_addr)) != 0)
    return rc;
  /* Gloo takes milliseconds in an int-sized count. */
  if (!(timeout_s > 0) || timeout_s > INT_MAX / 1000.0)
    return core_err_set(CORE_EINVAL, "Gloo timeout %g s is out of range (0, %d]", timeout_s, INT_MAX / 1000);
  int timeout_ms = (int)(timeout_s * 1000.0 + 0.5);
  if (timeout_ms < 1)
    timeout_ms = 1;

  rt_comm *c = calloc(1, sizeof *c);
  if (!c)
    return core_err_set(CORE_ENOMEM, "rt_gloo_connect: out of memory");
  rt_gloo_ctx *ctx = NULL;
  rc = rt_gloo_ctx_create(store, rank, size, bind_addr, timeout_ms, &ctx);
  if (rc)
    goto free_comm;
  c->ops = &gloo_ops;
  c->rank = rank;
  c->size = size;
  c->timeout_s = timeout_s;
  c->impl = ctx;
  *out = c;
  return 0;

free_comm:
  free(c);
  return rc;
}

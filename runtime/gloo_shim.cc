// gloo_shim — the extern "C" boundary over Gloo's C++ API (see gloo_shim.h):
// contexts and collectives here, the stores in gloo_store.cc. The only C++
// in ddpsim: keep it thin. Every entry point catches every exception and
// turns it into a core_err code and message.

#include "runtime/gloo_shim_int.hpp"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

using gloo_shim::classify;
using gloo_shim::contains_ci;
using gloo_shim::guarded;

// ---- contexts -------------------------------------------------------------

struct rt_gloo_ctx {
  std::shared_ptr<gloo::Context> ctx;
  int rank = 0, size = 1, timeout_ms = 0;
  // Tags of the unbound-buffer collectives: the same sequence on every rank
  // because every rank issues the same collectives in the same order.
  uint32_t tag = 0;
  int failed = 0; // code of the first failure; the context is unusable after it
  std::string first_error;
};

static void ignore_sigpipe(void) {
  struct sigaction old;
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, nullptr);
  }
}

// The message of a failed connectFullMesh, by its cause; returns the code.
static int connect_failed(
    int rc, const std::string &what, const rt_store *store, int rank, int size, int timeout_ms, const char *bind_addr) {
  if (rc == CORE_ETIMEDOUT)
    return core_err_set(rc,
        "rendezvous of rank %d through %s: not all %d ranks connected within "
        "%d ms: %s; start every rank with the same store, prefix and world "
        "size, or raise the timeout",
        rank, store->desc.c_str(), size, timeout_ms, what.c_str());
  if (what.find("File already exists") != std::string::npos)
    return core_err_set(CORE_EUSAGE,
        "rendezvous of rank %d of %d through %s: the store holds this rank's key from an earlier run (%s); give "
        "every run an empty rendezvous directory (`ddpsim launch` makes one per attempt), or empty this one",
        rank, size, store->desc.c_str(), what.c_str());
  if (rc == CORE_EPEER)
    return core_err_set(rc,
        "rendezvous of rank %d of %d through %s: a peer closed its connection "
        "(rank died?): %s; restart the group under a new prefix",
        rank, size, store->desc.c_str(), what.c_str());
  return core_err_set(rc,
      "rendezvous of rank %d of %d through %s (binding %s): %s; use a fresh "
      "prefix per run and an address the other ranks can reach",
      rank, size, store->desc.c_str(), bind_addr, what.c_str());
}

// The arguments of rt_gloo_ctx_create checked; 0 or the error.
static int check_ctx_args(const rt_store *store, int rank, int size, const char *bind_addr, int timeout_ms) {
  if (!store)
    return core_err_set(CORE_EINVAL, "Gloo rendezvous: no store");
  if (size < 1 || rank < 0 || rank >= size)
    return core_err_set(CORE_EINVAL,
        "Gloo rendezvous: rank %d of world size %d is out of "
        "range (need 0 <= rank < size)",
        rank, size);
  if (timeout_ms <= 0)
    return core_err_set(CORE_EINVAL, "Gloo rendezvous: timeout %d ms must be positive", timeout_ms);
  if (!bind_addr || !*bind_addr)
    return core_err_set(CORE_EINVAL, "Gloo rendezvous: no address to bind (give this host's "
                                     "address on the network the ranks share)");
  return 0;
}

extern "C" int rt_gloo_ctx_create(
    rt_store *store, int rank, int size, const char *bind_addr, int timeout_ms, rt_gloo_ctx **out) {
  if (!out)
    return core_err_set(CORE_EINVAL, "rt_gloo_ctx_create: no output pointer");
  *out = nullptr;
  int arg_rc = check_ctx_args(store, rank, size, bind_addr, timeout_ms);
  if (arg_rc)
    return arg_rc;
  ignore_sigpipe();

  rt_gloo_ctx *c = new (std::nothrow) rt_gloo_ctx;
  if (!c)
    return core_err_set(CORE_ENOMEM, "Gloo rendezvous: out of memory");
  c->rank = rank;
  c->size = size;
  c->timeout_ms = timeout_ms;

  std::shared_ptr<gloo::transport::Device> dev;
  std::string what;
  int rc = guarded(
      [&] {
        gloo::transport::tcp::attr attr;
        attr.hostname = bind_addr;
        dev = gloo::transport::tcp::CreateDevice(attr);
      },
      &what);
  if (rc) {
    core_err_set(CORE_ECOMM,
        "Gloo TCP device on rank %d of %d cannot bind '%s': %s; give an "
        "address of this host (see `ip addr`) that the other ranks reach",
        rank, size, bind_addr, what.c_str());
    delete c;
    return CORE_ECOMM;
  }

  rc = guarded(
      [&] {
        auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
        // Set before connecting: connectFullMesh hands it to the transport
        // (pair and buffer timeouts) and uses it for the store waits.
        ctx->setTimeout(std::chrono::milliseconds(timeout_ms));
        ctx->connectFullMesh(*store->top, dev);
        c->ctx = ctx;
      },
      &what);
  if (rc) {
    rc = connect_failed(rc, what, store, rank, size, timeout_ms, bind_addr);
    delete c;
    return rc;
  }
  *out = c;
  return 0;
}

extern "C" void rt_gloo_ctx_abort(rt_gloo_ctx *c) {
  if (!c)
    return;
  c->failed = CORE_ECOMM; // skips the barrier: peers learn from the closed sockets
  rt_gloo_ctx_destroy(c);
}

extern "C" void rt_gloo_ctx_destroy(rt_gloo_ctx *c) {
  if (!c)
    return;
  try {
    // Gloo's classic buffers check their pair's error before their
    // completion count, so a message followed at once by the sender's close
    // can be reported as "Connection closed by peer" on a rank still inside
    // its last collective (seen with ReduceScatterHalvingDoubling). A final
    // barrier on unbound buffers, which only fail pending receives, means
    // nobody closes before every rank has returned from its collectives.
    if (!c->failed && c->size > 1) {
      gloo::BarrierOptions opts(c->ctx);
      opts.setTag(c->tag++);
      opts.setTimeout(std::chrono::milliseconds(c->timeout_ms));
      gloo::barrier(opts);
    }
  } catch (...) {
    // Going away anyway: a peer that left or hangs cannot be helped here.
  }
  try {
    c->ctx.reset();
  } catch (...) {
    // Gloo's destructors may throw after a failure (noexcept(false)); the
    // sockets are closed either way.
  }
  delete c;
}

// ---- collectives ----------------------------------------------------------

namespace {

// Reports a collective's failure and marks the context unusable.
int op_fail(rt_gloo_ctx *c, const std::string &op, int code, const std::string &what) {
  switch (code) {
  case CORE_EPEER:
    core_err_set(code,
        "%s on rank %d of %d: peer closed the connection (rank died?): %s; "
        "find the rank that failed first, then restart the group",
        op.c_str(), c->rank, c->size, what.c_str());
    break;
  case CORE_ETIMEDOUT:
    core_err_set(code,
        "%s on rank %d of %d: no answer from a peer within %d ms (a rank is "
        "hung, stopped or far slower): %s; find the stuck rank, or raise the "
        "timeout if this collective is legitimately that long",
        op.c_str(), c->rank, c->size, c->timeout_ms, what.c_str());
    break;
  case CORE_ENOMEM: core_err_set(code, "%s on rank %d of %d: out of memory", op.c_str(), c->rank, c->size); break;
  default: core_err_set(code, "%s on rank %d of %d: Gloo error: %s", op.c_str(), c->rank, c->size, what.c_str()); break;
  }
  if (!c->failed) {
    c->failed = code;
    c->first_error = core_err_msg();
    // Close every connection now, as NCCL's abort does: peers still waiting
    // on this rank learn of the failure at once (CORE_EPEER) instead of
    // after their own timeout, and the launcher sees the group fail fast.
    try {
      c->ctx->closeConnections();
    } catch (...) {
      // Already failing; the pairs are closed or unusable either way.
    }
  }
  return code;
}

// Common entry checks; returns 0 when the collective may run.
int op_check(rt_gloo_ctx *c, const char *op) {
  if (!c)
    return core_err_set(CORE_EINVAL, "%s: no Gloo context", op);
  if (c->failed)
    return core_err_set(c->failed,
        "%s on rank %d of %d: this communicator already failed "
        "and cannot be used again (first failure: %s); destroy it "
        "and rendezvous again under a new prefix",
        op, c->rank, c->size, c->first_error.c_str());
  return 0;
}

std::string describe(const char *op, enum rt_algo a, enum rt_dtype t, size_t count) {
  std::string s = op;
  s += " (";
  if (a != RT_N_ALGOS) {
    s += rt_algo_name(a);
    s += ", ";
  }
  s += rt_dtype_name(t);
  s += ", " + std::to_string(count) + " elements)";
  return s;
}

// The classic algorithm classes keep counts and byte sizes in int.
bool fits_int(size_t count, size_t elsize) { return count <= (size_t)INT_MAX / elsize; }

int unsupported_dtype(const char *op, enum rt_dtype t) {
  return core_err_set(CORE_EUNSUPPORTED,
      "%s: Gloo 0.5 has no %s arithmetic (gloo/types.h "
      "defines float16 only) and ddpsim adds it for "
      "allreduce only; reduce in fp32 or fp16, or use the "
      "NCCL backend",
      op, rt_dtype_name(t));
}

// ---- bf16 ----------------------------------------------------------------
// Gloo has no bf16 type; PyTorch's ProcessGroupGloo reduces bf16 with
// gloo::sum<c10::BFloat16> (torch/csrc/distributed/c10d/ProcessGroupGloo.cpp,
// GENERATE_ALL_TYPES maps ScalarType::BFloat16 to c10::BFloat16), whose "+"
// adds the two values as float and rounds the sum back to bf16 with
// c10::detail::round_to_nearest_even (c10/util/BFloat16.h): NaN becomes
// 0x7FC0, anything else rounds to nearest, ties to even. The same here, on
// the raw 16-bit patterns.

float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t float_to_bf16(float f) {
  if (f != f)
    return UINT16_C(0x7FC0);
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return static_cast<uint16_t>((u + (((u >> 16) & 1u) + UINT32_C(0x7FFF))) >> 16);
}

void sum_bf16(void *c_, const void *a_, const void *b_, size_t n) {
  uint16_t *c = static_cast<uint16_t *>(c_);
  const uint16_t *a = static_cast<const uint16_t *>(a_);
  const uint16_t *b = static_cast<const uint16_t *>(b_);
  for (size_t i = 0; i < n; i++)
    c[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}

// What ProcessGroupGloo::allreduce runs for a bf16 tensor: gloo::allreduce
// over unbound buffers with the bf16 sum above.
void allreduce_bf16(rt_gloo_ctx *c, uint16_t *p, size_t count) {
  gloo::AllreduceOptions opts(c->ctx);
  opts.setOutput(p, count);
  opts.setReduceFunction(gloo::AllreduceOptions::Func(&sum_bf16));
  opts.setTag(c->tag++);
  opts.setTimeout(std::chrono::milliseconds(c->timeout_ms));
  gloo::allreduce(opts);
}

template <typename T> void allreduce_typed(rt_gloo_ctx *c, T *p, size_t count, enum rt_algo a) {
  const std::vector<T *> ptrs{p};
  const int n = static_cast<int>(count);
  switch (a) {
  case RT_ALGO_DEFAULT: {
    // What ProcessGroupGloo::allreduce runs: gloo::allreduce over unbound
    // buffers with an untyped sum and a per-call tag.
    gloo::AllreduceOptions opts(c->ctx);
    opts.setOutput(p, count);
    opts.setReduceFunction(
        gloo::AllreduceOptions::Func(static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<T>)));
    opts.setTag(c->tag++);
    opts.setTimeout(std::chrono::milliseconds(c->timeout_ms));
    gloo::allreduce(opts);
    break;
  }
  case RT_ALGO_RING: gloo::AllreduceRing<T>(c->ctx, ptrs, n).run(); break;
  case RT_ALGO_RING_CHUNKED: gloo::AllreduceRingChunked<T>(c->ctx, ptrs, n).run(); break;
  case RT_ALGO_HALVING_DOUBLING: gloo::AllreduceHalvingDoubling<T>(c->ctx, ptrs, n).run(); break;
  case RT_ALGO_BCUBE: gloo::AllreduceBcube<T>(c->ctx, ptrs, n).run(); break;
  default: GLOO_THROW_INVALID_OPERATION_EXCEPTION("unreachable algorithm ", static_cast<int>(a));
  }
}

// What ProcessGroupGloo's reduce_scatter_tensor runs: an allreduce of the
// whole input, then this rank's chunk (pytorch/pytorch#118911), twice the
// bytes of a true reduce-scatter. Gloo's own ReduceScatterHalvingDoubling is
// not used: it returned wrong sums from 128 KiB up on 2 ranks over loopback
// here (compare pytorch/gloo#303), and PyTorch does not run it either.
template <typename T> void reduce_scatter_typed(rt_gloo_ctx *c, const T *send, T *recv, size_t recvcount) {
  const size_t total = recvcount * static_cast<size_t>(c->size);
  std::vector<T> scratch(send, send + total);
  allreduce_typed(c, scratch.data(), total, RT_ALGO_DEFAULT);
  const auto first = scratch.begin() + static_cast<std::ptrdiff_t>(recvcount * static_cast<size_t>(c->rank));
  std::copy(first, first + static_cast<std::ptrdiff_t>(recvcount), recv);
}

template <typename T> void allgather_typed(rt_gloo_ctx *c, const void *send, void *recv, size_t count) {
  gloo::AllgatherOptions opts(c->ctx);
  // Without an input Gloo gathers in place; with one it memcpy's it into
  // the output, which must not be the very same bytes.
  T *mine = static_cast<T *>(recv) + static_cast<size_t>(c->rank) * count;
  if (send != mine)
    opts.setInput(static_cast<T *>(const_cast<void *>(send)), count);
  opts.setOutput(static_cast<T *>(recv), count * static_cast<size_t>(c->size));
  opts.setTag(c->tag++);
  opts.setTimeout(std::chrono::milliseconds(c->timeout_ms));
  gloo::allgather(opts);
}

template <typename T> void broadcast_typed(rt_gloo_ctx *c, void *buf, size_t count, int root) {
  gloo::BroadcastOptions opts(c->ctx);
  opts.setOutput(static_cast<T *>(buf), count);
  opts.setRoot(root);
  opts.setTag(c->tag++);
  opts.setTimeout(std::chrono::milliseconds(c->timeout_ms));
  gloo::broadcast(opts);
}

} // namespace

extern "C" int rt_gloo_ctx_allreduce(rt_gloo_ctx *c, void *buf, size_t count, enum rt_dtype t, enum rt_algo a) {
  int rc = op_check(c, "allreduce");
  if (rc)
    return rc;
  if ((unsigned)a >= RT_N_ALGOS)
    return core_err_set(CORE_EINVAL, "allreduce: unknown algorithm %d", (int)a);
  if (a == RT_ALGO_TREE)
    return core_err_set(CORE_EUNSUPPORTED, "allreduce: Gloo has no tree algorithm (tree is "
                                           "NCCL's); use default, ring, ring_chunked, "
                                           "halving_doubling or bcube");
  if ((unsigned)t > RT_BF16)
    return core_err_set(CORE_EINVAL, "allreduce: unknown dtype %d", (int)t);
  // The classic algorithm classes are templates over a type with
  // arithmetic, which Gloo defines for float and float16 only.
  if (t == RT_BF16 && a != RT_ALGO_DEFAULT)
    return core_err_set(CORE_EUNSUPPORTED,
        "allreduce (%s, bf16): Gloo's classic algorithm "
        "classes have no bf16 arithmetic; bf16 reduces with "
        "the default algorithm (gloo::allreduce with a bf16 "
        "sum, as PyTorch's ProcessGroupGloo), or use fp16",
        rt_algo_name(a));
  if (count == 0)
    return 0;
  if (!buf)
    return core_err_set(CORE_EINVAL, "allreduce: NULL buffer for %zu elements", count);
  if (a != RT_ALGO_DEFAULT && !fits_int(count, rt_dtype_size(t)))
    return core_err_set(CORE_EINVAL,
        "allreduce (%s): %zu elements exceed what Gloo's classic "
        "algorithms address (2 GiB per buffer); split the buffer "
        "or use the default algorithm",
        rt_algo_name(a), count);
  // Gloo's AllreduceBcube documents that the world size must be divisible
  // by its base (2); otherwise it returns wrong sums without an error (seen
  // on 3 ranks with Gloo 0.5), so refuse instead.
  if (a == RT_ALGO_BCUBE && c->size > 1 && c->size % c->ctx->base != 0)
    return core_err_set(CORE_EUNSUPPORTED,
        "allreduce (bcube) on %d ranks: Gloo's "
        "AllreduceBcube needs a world size divisible by its "
        "base %d; use halving_doubling or ring",
        c->size, c->ctx->base);
  std::string what;
  rc = guarded(
      [&] {
        if (t == RT_FP32)
          allreduce_typed(c, static_cast<float *>(buf), count, a);
        else if (t == RT_FP16)
          allreduce_typed(c, static_cast<gloo::float16 *>(buf), count, a);
        else
          allreduce_bf16(c, static_cast<uint16_t *>(buf), count);
      },
      &what);
  return rc ? op_fail(c, describe("allreduce", a, t, count), rc, what) : 0;
}

extern "C" int rt_gloo_ctx_allgather(rt_gloo_ctx *c, const void *send, void *recv, size_t count, enum rt_dtype t) {
  int rc = op_check(c, "allgather");
  if (rc)
    return rc;
  if ((unsigned)t > RT_BF16)
    return core_err_set(CORE_EINVAL, "allgather: unknown dtype %d", (int)t);
  if (count == 0)
    return 0;
  if (!send || !recv)
    return core_err_set(CORE_EINVAL, "allgather: NULL buffer for %zu elements", count);
  if (count > SIZE_MAX / rt_dtype_size(t) / (size_t)c->size)
    return core_err_set(CORE_EINVAL, "allgather: %zu elements on %d ranks overflow", count, c->size);
  {
    // send may be this rank's block of recv (in place), but no other overlap.
    const size_t es = rt_dtype_size(t);
    const char *sb = static_cast<const char *>(send), *rb = static_cast<const char *>(recv);
    const char *mine = rb + (size_t)c->rank * count * es;
    if (sb != mine && sb < rb + count * es * (size_t)c->size && rb < sb + count * es)
      return core_err_set(CORE_EINVAL,
          "allgather on rank %d: send overlaps recv other than at "
          "this rank's block (offset rank * count)",
          c->rank);
  }
  std::string what;
  rc = guarded(
      [&] {
        // Only bytes move, so bf16 rides on any 2-byte type.
        if (t == RT_FP32)
          allgather_typed<float>(c, send, recv, count);
        else
          allgather_typed<uint16_t>(c, send, recv, count);
      },
      &what);
  return rc ? op_fail(c, describe("allgather", RT_N_ALGOS, t, count), rc, what) : 0;
}

extern "C" int rt_gloo_ctx_reduce_scatter(
    rt_gloo_ctx *c, const void *send, void *recv, size_t recvcount, enum rt_dtype t) {
  int rc = op_check(c, "reduce_scatter");
  if (rc)
    return rc;
  if (t != RT_FP32 && t != RT_FP16)
    return t == RT_BF16 ? unsupported_dtype("reduce_scatter", t)
                        : core_err_set(CORE_EINVAL, "reduce_scatter: unknown dtype %d", (int)t);
  if (recvcount == 0)
    return 0;
  if (!send || !recv)
    return core_err_set(CORE_EINVAL, "reduce_scatter: NULL buffer for %zu elements", recvcount);
  if (recvcount > SIZE_MAX / (size_t)c->size || !fits_int(recvcount * (size_t)c->size, rt_dtype_size(t)))
    return core_err_set(CORE_EINVAL,
        "reduce_scatter: %zu elements per rank on %d ranks exceed "
        "what one Gloo allreduce addresses (2 GiB); split "
        "the buffer",
        recvcount, c->size);
  std::string what;
  rc = guarded(
      [&] {
        if (t == RT_FP32)
          reduce_scatter_typed(c, static_cast<const float *>(send), static_cast<float *>(recv), recvcount);
        else
          reduce_scatter_typed(
              c, static_cast<const gloo::float16 *>(send), static_cast<gloo::float16 *>(recv), recvcount);
      },
      &what);
  return rc ? op_fail(c, describe("reduce_scatter", RT_N_ALGOS, t, recvcount), rc, what) : 0;
}

extern "C" int rt_gloo_ctx_broadcast(rt_gloo_ctx *c, void *buf, size_t count, enum rt_dtype t, int root) {
  int rc = op_check(c, "broadcast");
  if (rc)
    return rc;
  if ((unsigned)t > RT_BF16)
    return core_err_set(CORE_EINVAL, "broadcast: unknown dtype %d", (int)t);
  if (root < 0 || root >= c->size)
    return core_err_set(CORE_EINVAL, "broadcast: root %d is not a rank of this group of %d", root, c->size);
  if (count == 0)
    return 0;
  if (!buf)
    return core_err_set(CORE_EINVAL, "broadcast: NULL buffer for %zu elements", count);
  std::string what;
  rc = guarded(
      [&] {
        if (t == RT_FP32)
          broadcast_typed<float>(c, buf, count, root);
        else
          broadcast_typed<uint16_t>(c, buf, count, root);
      },
      &what);
  if (rc)
    return op_fail(c, describe("broadcast", RT_N_ALGOS, t, count) + " from root " + std::to_string(root), rc, what);
  return 0;
}

extern "C" int rt_gloo_ctx_barrier(rt_gloo_ctx *c) {
  int rc = op_check(c, "barrier");
  if (rc)
    return rc;
  std::string what;
  rc = guarded(
      [&] {
        gloo::BarrierOptions opts(c->ctx);
        opts.setTag(c->tag++);
        opts.setTimeout(std::chrono::milliseconds(c->timeout_ms));
        gloo::barrier(opts);
      },
      &what);
  return rc ? op_fail(c, "barrier", rc, what) : 0;
}

extern "C" int rt_gloo_sum(enum rt_dtype t, void *out, const void *a, const void *b, size_t n) {
  switch (t) {
  case RT_FP32: gloo::sum<float>(out, a, b, n); return 0;
  case RT_FP16: gloo::sum<gloo::float16>(out, a, b, n); return 0;
  case RT_BF16: sum_bf16(out, a, b, n); return 0;
  default: return core_err_set(CORE_EINVAL, "sum: unknown dtype %d", (int)t);
  }
}

extern "C" const char *rt_gloo_version(void) {
#define RT_STR2(x) #x
#define RT_STR(x) RT_STR2(x)
  return "Gloo " RT_STR(GLOO_VERSION_MAJOR) "." RT_STR(GLOO_VERSION_MINOR) "." RT_STR(GLOO_VERSION_PATCH);
}

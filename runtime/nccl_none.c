/* nccl_none — runtime/nccl.h for a ddpsim built without NCCL (or CUDA):
 * connecting says so with CORE_EUNSUPPORTED, before touching the store. */
#include "runtime/nccl.h"

#include "core/err.h"

static int unsupported(const char *what) {
  return core_err_set(CORE_EUNSUPPORTED,
      "%s: this ddpsim was built without CUDA/NCCL; rebuild where the CUDA "
      "Toolkit and NCCL are installed (cmake -DDDPSIM_WITH_CUDA=ON), or use "
      "the Gloo backend",
      what);
}

int rt_nccl_connect_algo(
    rt_store *store, int rank, int size, int device, double timeout_s, enum rt_algo algo, rt_comm **out) {
  (void)store, (void)rank, (void)size, (void)device, (void)timeout_s, (void)algo;
  if (out)
    *out = NULL;
  return unsupported("NCCL communicator");
}

int rt_nccl_connect(rt_store *store, int rank, int size, int device, double timeout_s, rt_comm **out) {
  return rt_nccl_connect_algo(store, rank, size, device, timeout_s, RT_ALGO_DEFAULT, out);
}

void *rt_nccl_stream(rt_comm *c) {
  (void)c;
  return NULL;
}

int rt_nccl_version(int *version) {
  if (version)
    *version = 0;
  return unsupported("NCCL version");
}

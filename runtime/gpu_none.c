/* gpu_none — runtime/gpu.h for a ddpsim built without the CUDA Toolkit:
 * every function says so with CORE_EUNSUPPORTED (and clears its outputs),
 * so callers and tests behave as on a machine without a GPU. */
#include "runtime/gpu.h"

#include <string.h>

#include "core/err.h"

static int unsupported(const char *what) {
  return core_err_set(CORE_EUNSUPPORTED,
      "%s: this ddpsim was built without CUDA/NCCL; rebuild where the CUDA "
      "Toolkit and NCCL are installed (cmake -DDDPSIM_WITH_CUDA=ON)",
      what);
}

int rt_gpu_count(int *n) {
  if (n)
    *n = 0;
  return unsupported("counting CUDA devices");
}

int rt_gpu_get_info(int device, rt_gpu_info *out) {
  (void)device;
  if (out)
    memset(out, 0, sizeof *out);
  return unsupported("CUDA device properties");
}

int rt_gpu_set_device(int device) {
  (void)device;
  return unsupported("selecting a CUDA device");
}

int rt_gpu_versions(char *buf, size_t len) {
  if (buf && len)
    buf[0] = '\0';
  return unsupported("CUDA versions");
}

int rt_gpu_alloc(size_t bytes, void **dptr) {
  (void)bytes;
  if (dptr)
    *dptr = NULL;
  return unsupported("allocating device memory");
}

void rt_gpu_free(void *dptr) { (void)dptr; }

int rt_gpu_host_alloc(size_t bytes, void **hptr) {
  (void)bytes;
  if (hptr)
    *hptr = NULL;
  return unsupported("allocating pinned host memory");
}

void rt_gpu_host_free(void *hptr) { (void)hptr; }

int rt_gpu_memset(void *dptr, int byte, size_t bytes) {
  (void)dptr, (void)byte, (void)bytes;
  return unsupported("setting device memory");
}

int rt_gpu_copy_to_device(void *dst, const void *src, size_t bytes) {
  (void)dst, (void)src, (void)bytes;
  return unsupported("copying to the device");
}

int rt_gpu_copy_to_host(void *dst, const void *src, size_t bytes) {
  (void)dst, (void)src, (void)bytes;
  return unsupported("copying from the device");
}

int rt_gpu_copy_on_device(void *dst, const void *src, size_t bytes) {
  (void)dst, (void)src, (void)bytes;
  return unsupported("copying on the device");
}

int rt_gpu_sync(void) { return unsupported("synchronizing the device"); }

int rt_gpu_fill(void *dptr, size_t count, enum rt_dtype t, const rt_gpu_pattern *p) {
  (void)dptr, (void)count, (void)t, (void)p;
  return unsupported("filling a device buffer");
}

int rt_gpu_check(const void *dptr, size_t count, enum rt_dtype t, const rt_gpu_pattern *p, size_t *nbad) {
  (void)dptr, (void)count, (void)t, (void)p;
  if (nbad)
    *nbad = 0;
  return unsupported("checking a device buffer");
}

int rt_gpu_gemm_rate(int device, enum core_prec math, int m, int n, int k, int warmup, int iters, double *flops_per_s) {
  (void)device, (void)math, (void)m, (void)n, (void)k, (void)warmup, (void)iters;
  if (flops_per_s)
    *flops_per_s = 0;
  return unsupported("cuBLAS GEMM rate");
}

int rt_gpu_dtod_bandwidth(int device, size_t bytes, int warmup, int iters, double *bytes_per_s) {
  (void)device, (void)bytes, (void)warmup, (void)iters;
  if (bytes_per_s)
    *bytes_per_s = 0;
  return unsupported("device memory bandwidth");
}

int rt_gpu_host_bandwidth(int device, size_t bytes, int warmup, int iters, double *h2d_per_s, double *d2h_per_s) {
  (void)device, (void)bytes, (void)warmup, (void)iters;
  if (h2d_per_s)
    *h2d_per_s = 0;
  if (d2h_per_s)
    *d2h_per_s = 0;
  return unsupported("host-device copy bandwidth");
}

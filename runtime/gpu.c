/* gpu — CUDA runtime and cuBLAS implementation of runtime/gpu.h. Built
 * only where the CUDA Toolkit was found; runtime/gpu_none.c otherwise. Both
 * libraries are called through runtime/cuda_api.h's tables, loaded by the
 * first function that needs them (cuBLAS by GEMMs and versions only).
 *
 * Patterns are generated and checked on the host and moved through one
 * pinned staging buffer (no CUDA kernel, so no CUDA compiler is needed):
 * checks are for correctness runs, not for the timed loops. */
#include "runtime/gpu.h"

#include <library_types.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "runtime/cuda_api.h"

enum { STAGE_BYTES = 8 << 20 };

/* ---- errors ------------------------------------------------------------ */

/* CUDA errors that mean "there is no usable device here". */
static int no_device_error(cudaError_t e) {
  return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary ||
         e == cudaErrorDevicesUnavailable || e == cudaErrorSystemDriverMismatch ||
         e == cudaErrorCompatNotSupportedOnDevice;
}

/* Record a failed CUDA call (what) and clear CUDA's last error. */
static int cuda_fail(const rt_cudart *cu, cudaError_t e, const char *what) {
  (void)cu->cudaGetLastError();
  if (no_device_error(e))
    return core_err_set(
        CORE_EUNSUPPORTED, "no CUDA device: %s: %s (%s)", what, cu->cudaGetErrorString(e), cu->cudaGetErrorName(e));
  int code = CORE_EIO;
  if (e == cudaErrorMemoryAllocation)
    code = CORE_ENOMEM;
  else if (e == cudaErrorInvalidValue || e == cudaErrorInvalidDevice)
    code = CORE_EINVAL;
  return core_err_set(code, "%s: %s (%s)", what, cu->cudaGetErrorString(e), cu->cudaGetErrorName(e));
}

static int cublas_fail(const rt_cublas *cb, cublasStatus_t s, const char *what) {
  int code = CORE_EIO;
  if (s == CUBLAS_STATUS_ALLOC_FAILED)
    code = CORE_ENOMEM;
  else if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_ARCH_MISMATCH)
    code = CORE_EUNSUPPORTED;
  return core_err_set(code, "%s: %s (%s)", what, cb->cublasGetStatusString(s), cb->cublasGetStatusName(s));
}

/* ---- devices ------------------------------------------------------------- */

int rt_gpu_count(int *n) {
  if (!n)
    return core_err_set(CORE_EINVAL, "rt_gpu_count: no output pointer");
  *n = 0;
  const rt_cudart *cu;
  int rc = rt_cudart_load(&cu);
  if (rc)
    return rc;
  int c = 0;
  cudaError_t e = cu->cudaGetDeviceCount(&c);
  if (e != cudaSuccess) {
    (void)cu->cudaGetLastError();
    return core_err_set(CORE_EUNSUPPORTED,
        "no CUDA device: cudaGetDeviceCount: %s (%s); GPU measurements and "
        "the NCCL backend need an NVIDIA GPU with its driver",
        cu->cudaGetErrorString(e), cu->cudaGetErrorName(e));
  }
  if (c <= 0) {
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    return core_err_set(
        CORE_EUNSUPPORTED, "no CUDA device: the driver reports none (CUDA_VISIBLE_DEVICES=%s)", vis ? vis : "unset");
  }
  *n = c;
  return 0;
}

/* 0 with the CUDA runtime's table when device exists; CORE_EUNSUPPORTED or
 * CORE_EINVAL otherwise. */
static int check_device(int device, const rt_cudart **cu) {
  int n = 0;
  int rc = rt_gpu_count(&n);
  if (rc)
    return rc;
  if (device < 0 || device >= n)
    return core_err_set(CORE_EINVAL, "CUDA device %d does not exist: this host has %d (0..%d)", device, n, n - 1);
  return rt_cudart_load(cu);
}

int rt_gpu_set_device(int device) {
  const rt_cudart *cu;
  int rc = check_device(device, &cu);
  if (rc)
    return rc;
  cudaError_t e = cu->cudaSetDevice(device);
  if (e != cudaSuccess) {
    char what[64];
    snprintf(what, sizeof what, "cudaSetDevice(%d)", device);
    return cuda_fail(cu, e, what);
  }
  return 0;
}

/* Free memory of device: it needs a context there; borrow it, then restore. */
static int free_memory(const rt_cudart *cu, int device, size_t *free_mem) {
  int cur = 0;
  cudaError_t e = cu->cudaGetDevice(&cur);
  if (e != cudaSuccess)
    return cuda_fail(cu, e, "cudaGetDevice");
  if ((e = cu->cudaSetDevice(device)) != cudaSuccess)
    return cuda_fail(cu, e, "cudaSetDevice");
  size_t tot = 0;
  e = cu->cudaMemGetInfo(free_mem, &tot);
  cudaError_t e2 = cu->cudaSetDevice(cur);
  if (e != cudaSuccess)
    return cuda_fail(cu, e, "cudaMemGetInfo");
  if (e2 != cudaSuccess)
    return cuda_fail(cu, e2, "cudaSetDevice (restoring the current device)");
  return 0;
}

int rt_gpu_get_info(int device, rt_gpu_info *out) {
  if (!out)
    return core_err_set(CORE_EINVAL, "rt_gpu_get_info: no output pointer");
  memset(out, 0, sizeof *out);
  const rt_cudart *cu;
  int rc = check_device(device, &cu);
  if (rc)
    return rc;
  struct cudaDeviceProp p;
  cudaError_t e = cu->cudaGetDeviceProperties(&p, device);
  if (e != cudaSuccess)
    return cuda_fail(cu, e, "cudaGetDeviceProperties");
  out->device = device;
  snprintf(out->name, sizeof out->name, "%s", p.name);
  out->cc_major = p.major;
  out->cc_minor = p.minor;
  out->sm_count = p.multiProcessorCount;
  out->total_mem = p.totalGlobalMem;
  e = cu->cudaDeviceGetPCIBusId(out->pci_bus_id, (int)sizeof out->pci_bus_id, device);
  if (e != cudaSuccess)
    return cuda_fail(cu, e, "cudaDeviceGetPCIBusId");
  return free_memory(cu, device, &out->free_mem);
}

int rt_gpu_versions(char *buf, size_t len) {
  if (!buf || len == 0)
    return core_err_set(CORE_EINVAL, "rt_gpu_versions: no buffer");
  buf[0] = '\0';
  const rt_cudart *cu;
  const rt_cublas *cb;
  int rc = rt_cudart_load(&cu);
  if (rc || (rc = rt_cublas_load(&cb)))
    return rc;
  int rt = 0, drv = 0, v[3] = {0, 0, 0};
  (void)cu->cudaRuntimeGetVersion(&rt);
  (void)cu->cudaDriverGetVersion(&drv);
  (void)cb->cublasGetProperty(MAJOR_VERSION, &v[0]);
  (void)cb->cublasGetProperty(MINOR_VERSION, &v[1]);
  (void)cb->cublasGetProperty(PATCH_LEVEL, &v[2]);
  char d[32];
  if (drv > 0)
    snprintf(d, sizeof d, "%d.%d", drv / 1000, drv % 1000 / 10);
  else
    snprintf(d, sizeof d, "none");
  snprintf(buf, len, "CUDA runtime %d.%d, driver %s, cuBLAS %d.%d.%d", rt / 1000, rt % 1000 / 10, d, v[0], v[1], v[2]);
  /* Say what is known even without a device, but report its absence. */
  int n = 0;
  return rt_gpu_count(&n);
}

/* ---- buffers -------------------------------------------------------------- */

int rt_gpu_alloc(size_t bytes, void **dptr) {
  if (!dptr)
    return core_err_set(CORE_EINVAL, "rt_gpu_alloc: no output pointer");
  *dptr = NULL;
  if (bytes == 0)
    return core_err_set(CORE_EINVAL, "rt_gpu_alloc: zero bytes");
  const rt_cudart *cu;
  int rc = rt_cudart_load(&cu);
  if (rc)
    return rc;
  cudaError_t e = cu->cudaMalloc(dptr, bytes);
  if (e != cudaSuccess) {
    *dptr = NULL;
    char what[80];
    snprintf(what, sizeof what, "cudaMalloc of %zu bytes", bytes);
    return cuda_fail(cu, e, what);
  }
  return 0;
}

/* A buffer exists only once the CUDA runtime was loaded. */
void rt_gpu_free(void *dptr) {
  const rt_cudart *cu = rt_cudart_loaded();
  if (dptr && cu) {
    (void)cu->cudaFree(dptr);
    (void)cu->cudaGetLastError();
  }
}

int rt_gpu_host_alloc(size_t bytes, void **hptr) {
  if (!hptr)
    return core_err_set(CORE_EINVAL, "rt_gpu_host_alloc: no output pointer");
  *hptr = NULL;
  if (bytes == 0)
    return core_err_set(CORE_EINVAL, "rt_gpu_host_alloc: zero bytes");
  const rt_cudart *cu;
  int rc = rt_cudart_load(&cu);
  if (rc)
    return rc;
  cudaError_t e = cu->cudaMallocHost(hptr, bytes);
  if (e != cudaSuccess) {
    *hptr = NULL;
    char what[80];
    snprintf(what, sizeof what, "cudaMallocHost of %zu bytes", bytes);
    return cuda_fail(cu, e, what);
  }
  return 0;
}

void rt_gpu_host_free(void *hptr) {
  const rt_cudart *cu = rt_cudart_loaded();
  if (hptr && cu) {
    (void)cu->cudaFreeHost(hptr);
    (void)cu->cudaGetLastError();
  }
}

int rt_gpu_memset(void *dptr, int byte, size_t bytes) {
  if (!dptr && bytes)
    return core_err_set(CORE_EINVAL, "rt_gpu_memset: null buffer");
  const rt_cudart *cu;
  int rc = rt_cudart_load(&cu);
  if (rc)
    return rc;
  cudaError_t e = cu->cudaMemset(dptr, byte, bytes);
  return e == cudaSuccess ? 0 : cuda_fail(cu, e, "cudaMemset");
}

static int copy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind, const char *what) {
  if ((!dst || !src) && bytes)
    return core_err_set(CORE_EINVAL, "%s: null buffer", what);
  const rt_cudart *cu;
  int rc = rt_cudart_load(&cu);
  if (rc)
    return rc;
  cudaError_t e = cu->cudaMemcpy(dst, src, bytes, kind);
  return e == cudaSuccess ? 0 : cuda_fail(cu, e, what);
}

int rt_gpu_copy_to_device(void *dst, const void *src, size_t bytes) {
  return copy(dst, src, bytes, cudaMemcpyHostToDevice, "cudaMemcpy host to device");
}

int rt_gpu_copy_to_host(void *dst, const void *src, size_t bytes) {
  return copy(dst, src, bytes, cudaMemcpyDeviceToHost, "cudaMemcpy device to host");
}

int rt_gpu_copy_on_device(void *dst, const void *src, size_t bytes) {
  return copy(dst, src, bytes, cudaMemcpyDeviceToDevice, "cudaMemcpy device to device");
}

int rt_gpu_sync(void) {
  const rt_cudart *cu;
  int rc = rt_cudart_load(&cu);
  if (rc)
    return rc;
  cudaError_t e = cu->cudaDeviceSynchronize();
  return e == cudaSuccess ? 0 : cuda_fail(cu, e, "cudaDeviceSynchronize");
}

/* ---- element conversions (round to nearest even) -------------------------- */

static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  int32_t exp = (int32_t)((x >> 23) & 0xffu);
  if (exp == 0xff)
    return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  exp = exp - 127 + 15;
  if (exp >= 0x1f)
    return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) { /* subnormal half, or zero */
    if (exp < -10)
      return (uint16_t)sign;
    mant |= 0x800000u;
    unsigned shift = (unsigned)(14 - exp);
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (h & 1u)))
      h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    h++; /* a carry into the exponent is the right rounding, up to inf */
  return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    float v = ldexpf((float)mant, -24);
    return sign ? -v : v;
  }
  uint32_t x = exp == 0x1f ? sign | 0x7f800000u | (mant << 13) : sign | ((exp + 112u) << 23) | (mant << 13);
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
    return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

static void put(void *buf, enum rt_dtype t, size_t i, float v) {
  if (t == RT_FP32)
    ((float *)buf)[i] = v;
  else if (t == RT_FP16)
    ((uint16_t *)buf)[i] = f32_to_f16(v);
  else
    ((uint16_t *)buf)[i] = f32_to_bf16(v);
}

static float get(const void *buf, enum rt_dtype t, size_t i) {
  if (t == RT_FP32)
    return ((const float *)buf)[i];
  if (t == RT_FP16)
    return f16_to_f32(((const uint16_t *)buf)[i]);
  return bf16_to_f32(((const uint16_t *)buf)[i]);
}

/* The pattern's element i, rounded to t and back. */
static float expected(const rt_gpu_pattern *p, enum rt_dtype t, size_t i) {
  float v = (float)(p->scale * (double)((i + p->offset) % p->period + 1));
  if (t == RT_FP16)
    return f16_to_f32(f32_to_f16(v));
  if (t == RT_BF16)
    return bf16_to_f32(f32_to_bf16(v));
  return v;
}

/* ---- patterns --------------------------------------------------------------- */

static int pattern_args(const void *dptr, size_t count, enum rt_dtype t, const rt_gpu_pattern *p, const char *fn) {
  if (rt_dtype_size(t) == 0)
    return core_err_set(CORE_EINVAL, "%s: unknown dtype %d", fn, (int)t);
  if (!p || p->period < 1)
    return core_err_set(CORE_EINVAL, "%s: no pattern, or a period below 1", fn);
  if (!dptr && count)
    return core_err_set(CORE_EINVAL, "%s: null buffer", fn);
  return 0;
}

/* A pinned staging buffer of at most STAGE_BYTES for count elements. */
static int stage_alloc(size_t count, size_t esize, void **stage, size_t *chunk) {
  size_t bytes = count * esize < STAGE_BYTES ? count * esize : STAGE_BYTES;
  *chunk = bytes / esize;
  return rt_gpu_host_alloc(bytes, stage);
}

int rt_gpu_fill(void *dptr, size_t count, enum rt_dtype t, const rt_gpu_pattern *p) {
  int rc = pattern_args(dptr, count, t, p, "rt_gpu_fill");
  if (rc || count == 0)
    return rc;
  size_t es = rt_dtype_size(t), chunk = 0;
  void *stage = NULL;
  if ((rc = stage_alloc(count, es, &stage, &chunk)))
    return rc;
  for (size_t done = 0; done < count && !rc; done += chunk) {
    size_t n = count - done < chunk ? count - done : chunk;
    for (size_t i = 0; i < n; i++)
      put(stage, t, i, expected(p, t, done + i));
    rc = rt_gpu_copy_to_device((char *)dptr + done * es, stage, n * es);
  }
  rt_gpu_host_free(stage);
  return rc;
}

int rt_gpu_check(const void *dptr, size_t count, enum rt_dtype t, const rt_gpu_pattern *p, size_t *nbad) {
  if (nbad)
    *nbad = 0;
  int rc = pattern_args(dptr, count, t, p, "rt_gpu_check");
  if (rc || count == 0)
    return rc;
  size_t es = rt_dtype_size(t), chunk = 0, bad = 0, first = 0;
  float first_got = 0, first_want = 0;
  void *stage = NULL;
  if ((rc = stage_alloc(count, es, &stage, &chunk)))
    return rc;
  for (size_t done = 0; done < count && !rc; done += chunk) {
    size_t n = count - done < chunk ? count - done : chunk;
    rc = rt_gpu_copy_to_host(stage, (const char *)dptr + done * es, n * es);
    for (size_t i = 0; !rc && i < n; i++) {
      float got = get(stage, t, i), want = expected(p, t, done + i);
      if (got != want && bad++ == 0) {
        first = done + i;
        first_got = got;
        first_want = want;
      }
    }
  }
  rt_gpu_host_free(stage);
  if (rc)
    return rc;
  if (nbad)
    *nbad = bad;
  if (bad)
    return core_err_set(CORE_ECORRUPT,
        "data check: element %zu of %zu (%s) is %g, expected %g; %zu of %zu "
        "elements differ",
        first, count, rt_dtype_name(t), (double)first_got, (double)first_want, bad, count);
  return 0;
}

/* ---- measurements --------------------------------------------------------- */

typedef struct ev_timer {
  const rt_cudart *cu;
  cudaEvent_t start, stop;
} ev_timer;

static int ev_timer_create(ev_timer *tm) {
  int rc = rt_cudart_load(&tm->cu);
  if (rc)
    return rc;
  const rt_cudart *cu = tm->cu;
  cudaError_t e = cu->cudaEventCreate(&tm->start);
  if (e != cudaSuccess)
    return cuda_fail(cu, e, "cudaEventCreate");
  if ((e = cu->cudaEventCreate(&tm->stop)) != cudaSuccess) {
    cu->cudaEventDestroy(tm->start);
    return cuda_fail(cu, e, "cudaEventCreate");
  }
  return 0;
}

static void ev_timer_destroy(ev_timer *tm) {
  tm->cu->cudaEventDestroy(tm->start);
  tm->cu->cudaEventDestroy(tm->stop);
}

/* Seconds between the two events once stop has happened. */
static int ev_timer_seconds(ev_timer *tm, double *s) {
  const rt_cudart *cu = tm->cu;
  cudaError_t e = cu->cudaEventSynchronize(tm->stop);
  if (e != cudaSuccess)
    return cuda_fail(cu, e, "cudaEventSynchronize");
  float ms = 0;
  if ((e = cu->cudaEventElapsedTime(&ms, tm->start, tm->stop)) != cudaSuccess)
    return cuda_fail(cu, e, "cudaEventElapsedTime");
  if (!(ms > 0))
    return core_err_set(CORE_EIO, "CUDA events measured %g ms; use more iterations", (double)ms);
  *s = ms / 1e3;
  return 0;
}

static int loop_args(int warmup, int iters, const char *fn) {
  if (warmup < 0 || iters < 1)
    return core_err_set(CORE_EINVAL, "%s: warm-up %d must be >= 0 and iterations %d >= 1", fn, warmup, iters);
  return 0;
}

/* Time iters GEMMs C = A·B (column-major, no transposes) after warmup. */
static int time_gemms(const rt_cublas *cb, enum core_prec math, int m, int n, int k, const void *a, const void *b,
    void *c, int warmup, int iters, double *seconds) {
  cudaDataType_t dt = CUDA_R_32F;
  cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
  if (math == CORE_PREC_TF32)
    ct = CUBLAS_COMPUTE_32F_FAST_TF32;
  else if (math == CORE_PREC_FP16)
    dt = CUDA_R_16F;
  else if (math == CORE_PREC_BF16)
    dt = CUDA_R_16BF;
  char what[96];
  snprintf(what, sizeof what, "cublasGemmEx %s %dx%dx%d", core_prec_name(math), m, n, k);

  cublasHandle_t h;
  cublasStatus_t st = cb->cublasCreate(&h);
  if (st != CUBLAS_STATUS_SUCCESS)
    return cublas_fail(cb, st, "cublasCreate");
  ev_timer tm;
  int rc = ev_timer_create(&tm);
  if (rc)
    goto destroy_handle;
  const float alpha = 1.0f, beta = 0.0f;
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < warmup + iters; i++) {
    if (i == warmup && (e = tm.cu->cudaEventRecord(tm.start, 0)) != cudaSuccess)
      break;
    st = cb->cublasGemmEx(
        h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, dt, m, b, dt, k, &beta, c, dt, m, ct, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
      rc = cublas_fail(cb, st, what);
      goto destroy_timer;
    }
  }
  if (e == cudaSuccess)
    e = tm.cu->cudaEventRecord(tm.stop, 0);
  rc = e == cudaSuccess ? ev_timer_seconds(&tm, seconds) : cuda_fail(tm.cu, e, "cudaEventRecord");
destroy_timer:
  ev_timer_destroy(&tm);
destroy_handle:
  cb->cublasDestroy(h);
  return rc;
}

int rt_gpu_gemm_rate(int device, enum core_prec math, int m, int n, int k, int warmup, int iters, double *flops_per_s) {
  if (!flops_per_s)
    return core_err_set(CORE_EINVAL, "rt_gpu_gemm_rate: no output pointer");
  *flops_per_s = 0;
  int rc = loop_args(warmup, iters, "rt_gpu_gemm_rate");
  if (rc)
    return rc;
  if (m < 1 || n < 1 || k < 1)
    return core_err_set(CORE_EINVAL, "rt_gpu_gemm_rate: shape %dx%dx%d must be positive", m, n, k);
  if ((unsigned)math >= CORE_N_PREC)
    return core_err_set(CORE_EINVAL, "rt_gpu_gemm_rate: unknown precision %d", (int)math);
  const rt_cublas *cb;
  rt_gpu_info info;
  if ((rc = rt_gpu_get_info(device, &info)) || (rc = rt_gpu_set_device(device)) || (rc = rt_cublas_load(&cb)))
    return rc;
  /* TF32 and bf16 need Ampere tensor cores; cuBLAS would quietly fall back
   * to fp32 math and this would measure the wrong thing. */
  if ((math == CORE_PREC_TF32 || math == CORE_PREC_BF16) && info.cc_major < 8)
    return core_err_set(CORE_EUNSUPPORTED, "%s GEMMs need compute capability 8.0 or later; device %d (%s) is %d.%d",
        core_prec_name(math), device, info.name, info.cc_major, info.cc_minor);

  enum rt_dtype et = math == CORE_PREC_FP16 ? RT_FP16 : math == CORE_PREC_BF16 ? RT_BF16 : RT_FP32;

  void *a = NULL, *b = NULL, *c = NULL;
  size_t es = rt_dtype_size(et);
  if ((rc = rt_gpu_alloc((size_t)m * (size_t)k * es, &a)))
    goto free_bufs;
  if ((rc = rt_gpu_alloc((size_t)k * (size_t)n * es, &b)))
    goto free_bufs;
  if ((rc = rt_gpu_alloc((size_t)m * (size_t)n * es, &c)))
    goto free_bufs;
  /* Small values: sums of k products stay finite in fp16. */
  rt_gpu_pattern pa = {1.0 / 64, 7, 0}, pb = {1.0 / 64, 5, 3};
  if ((rc = rt_gpu_fill(a, (size_t)m * (size_t)k, et, &pa)) || (rc = rt_gpu_fill(b, (size_t)k * (size_t)n, et, &pb)) ||
      (rc = rt_gpu_memset(c, 0, (size_t)m * (size_t)n * es)))
    goto free_bufs;

  double s = 0;
  if ((rc = time_gemms(cb, math, m, n, k, a, b, c, warmup, iters, &s)))
    goto free_bufs;
  *flops_per_s = 2.0 * m * (double)n * k * iters / s;

free_bufs:
  rt_gpu_free(a);
  rt_gpu_free(b);
  rt_gpu_free(c);
  return rc;
}

/* Time iters copies of bytes from src to dst after warmup ones. */
static int time_copies(
    void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind, int warmup, int iters, double *seconds) {
  ev_timer tm;
  int rc = ev_timer_create(&tm);
  if (rc)
    return rc;
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < warmup + iters && e == cudaSuccess; i++) {
    if (i == warmup)
      e = tm.cu->cudaEventRecord(tm.start, 0);
    if (e == cudaSuccess)
      e = tm.cu->cudaMemcpyAsync(dst, src, bytes, kind, 0);
  }
  if (e == cudaSuccess)
    e = tm.cu->cudaEventRecord(tm.stop, 0);
  rc = e == cudaSuccess ? ev_timer_seconds(&tm, seconds) : cuda_fail(tm.cu, e, "timed cudaMemcpyAsync");
  ev_timer_destroy(&tm);
  return rc;
}

int rt_gpu_dtod_bandwidth(int device, size_t bytes, int warmup, int iters, double *bytes_per_s) {
  if (!bytes_per_s)
    return core_err_set(CORE_EINVAL, "rt_gpu_dtod_bandwidth: no output pointer");
  *bytes_per_s = 0;
  int rc = loop_args(warmup, iters, "rt_gpu_dtod_bandwidth");
  if (rc)
    return rc;
  if ((rc = rt_gpu_set_device(device)))
    return rc;
  void *a = NULL, *b = NULL;
  double s = 0;
  if ((rc = rt_gpu_alloc(bytes, &a)) || (rc = rt_gpu_alloc(bytes, &b)) || (rc = rt_gpu_memset(a, 1, bytes)))
    goto free_bufs;
  if ((rc = time_copies(b, a, bytes, cudaMemcpyDeviceToDevice, warmup, iters, &s)))
    goto free_bufs;
  *bytes_per_s = 2.0 * (double)bytes * iters / s;
free_bufs:
  rt_gpu_free(a);
  rt_gpu_free(b);
  return rc;
}

int rt_gpu_host_bandwidth(int device, size_t bytes, int warmup, int iters, double *h2d_per_s, double *d2h_per_s) {
  if (h2d_per_s)
    *h2d_per_s = 0;
  if (d2h_per_s)
    *d2h_per_s = 0;
  int rc = loop_args(warmup, iters, "rt_gpu_host_bandwidth");
  if (rc)
    return rc;
  if ((rc = rt_gpu_set_device(device)))
    return rc;
  void *h = NULL, *d = NULL;
  double s = 0;
  if ((rc = rt_gpu_host_alloc(bytes, &h)) || (rc = rt_gpu_alloc(bytes, &d)))
    goto free_bufs;
  memset(h, 1, bytes);
  if ((rc = time_copies(d, h, bytes, cudaMemcpyHostToDevice, warmup, iters, &s)))
    goto free_bufs;
  if (h2d_per_s)
    *h2d_per_s = (double)bytes * iters / s;
  if ((rc = time_copies(h, d, bytes, cudaMemcpyDeviceToHost, warmup, iters, &s)))
    goto free_bufs;
  if (d2h_per_s)
    *d2h_per_s = (double)bytes * iters / s;
free_bufs:
  rt_gpu_host_free(h);
  rt_gpu_free(d);
  return rc;
}

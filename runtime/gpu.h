/*
 * gpu — what calibration and the NCCL backend need from a CUDA device, in
 * plain C: the devices present, device and pinned host buffers, known data
 * patterns to fill collective buffers with and check them against (as
 * nccl-tests does on every rank), and timed measurements: cuBLAS GEMM rates
 * per precision, device memory bandwidth and host-device copy bandwidth.
 * Nothing here exposes a CUDA type; device pointers are void *.
 *
 * Two implementations share this header and exactly one is built:
 * runtime/gpu.c against the CUDA runtime and cuBLAS where the CUDA Toolkit
 * was found (DDPSIM_HAVE_CUDA is defined), runtime/gpu_none.c elsewhere.
 * runtime/gpu.c loads both libraries on first use (runtime/cuda_api.h).
 *
 * Every function returns 0 or a negative core_err code with a message:
 *   CORE_EUNSUPPORTED  no usable device: built without CUDA, no driver, no
 *                      GPU, or CUDA_VISIBLE_DEVICES hides them all
 *                      ("no CUDA device: <what CUDA said>"); or the CUDA
 *                      runtime (cuBLAS, for GEMMs and versions) cannot be
 *                      loaded ("CUDA runtime not found: ...");
 *   CORE_EINVAL        a bad argument (device index, size, null pointer);
 *   CORE_ENOMEM        device or pinned host memory exhausted;
 *   CORE_ECORRUPT      rt_gpu_check found elements that differ;
 *   CORE_EIO           any other CUDA or cuBLAS failure, with its name.
 * A process that has used CUDA must not fork() children that use it too;
 * tests probe devices in a child first (tests/runtime/test_rt_nccl.c).
 */
#ifndef RUNTIME_GPU_H
#define RUNTIME_GPU_H

#include <stddef.h>

#include "core/vocab.h"
#include "runtime/comm.h"

/* ---- devices ------------------------------------------------------------ */

typedef struct rt_gpu_info {
  int device;
  char name[256];
  char pci_bus_id[32];    /* "0000:19:00.0" */
  int cc_major, cc_minor; /* compute capability, e.g. 9.0 for H100/H200 */
  int sm_count;
  size_t total_mem, free_mem; /* bytes, free at the time of the call */
} rt_gpu_info;

/* Number of devices in *n (> 0 on success). No device is CORE_EUNSUPPORTED
 * with *n = 0; it never crashes, with or without a driver. */
int rt_gpu_count(int *n);
int rt_gpu_get_info(int device, rt_gpu_info *out);
/* Make device current for this thread (buffers below live on it). */
int rt_gpu_set_device(int device);
/* "CUDA runtime 13.0, driver 13.0, cuBLAS 13.0.2" for profiles and logs. */
int rt_gpu_versions(char *buf, size_t len);

/* ---- buffers (on the current device) ------------------------------------ */

int rt_gpu_alloc(size_t bytes, void **dptr);
void rt_gpu_free(void *dptr); /* NULL is fine */
/* Page-locked host memory, for fast and asynchronous copies. */
int rt_gpu_host_alloc(size_t bytes, void **hptr);
void rt_gpu_host_free(void *hptr);
int rt_gpu_memset(void *dptr, int byte, size_t bytes);
/* Synchronous copies; any direction between host and device memory. */
int rt_gpu_copy_to_device(void *dst, const void *src, size_t bytes);
int rt_gpu_copy_to_host(void *dst, const void *src, size_t bytes);
int rt_gpu_copy_on_device(void *dst, const void *src, size_t bytes);
/* Wait for all work on the current device. */
int rt_gpu_sync(void);

/* ---- patterns for data checks ------------------------------------------- */

/* Element i of a pattern is scale * ((i + offset) % period + 1). With small
 * integer scales these are exact in every dtype (integers up to 2048 in fp16
 * and 256 in bf16 always are), so sums over ranks are checked for equality:
 * rank r fills scale r + 1 and an allreduce of p ranks must give scale
 * p(p+1)/2; the block of rank r after a reduce-scatter of n elements per
 * rank is that sum at offset r * n. */
typedef struct rt_gpu_pattern {
  double scale;
  unsigned period; /* >= 1 */
  size_t offset;
} rt_gpu_pattern;

/* Write count elements of pattern p into device buffer dptr. */
int rt_gpu_fill(void *dptr, size_t count, enum rt_dtype t, const rt_gpu_pattern *p);
/* Compare count elements of dptr with pattern p (each expected value
 * rounded to t, compared exactly). 0 when all match; CORE_ECORRUPT with the
 * first differing index, its value, the expected value and the number of
 * differing elements otherwise. *nbad (may be NULL) gets that number. */
int rt_gpu_check(const void *dptr, size_t count, enum rt_dtype t, const rt_gpu_pattern *p, size_t *nbad);

/* ---- measurements ------------------------------------------------------- */

/* Achieved FLOP/s (2·m·n·k per GEMM) of C = A·B with cublasGemmEx on device
 * at precision math (core/vocab.h),
 * m×k times k×n, column-major, over iters GEMMs after warmup untimed ones,
 * timed with CUDA events. Buffers are allocated, filled and freed here. */
int rt_gpu_gemm_rate(int device, enum core_prec math, int m, int n, int k, int warmup, int iters, double *flops_per_s);

/* Device memory bandwidth from device-to-device cudaMemcpy of bytes, in
 * bytes of memory traffic per second (read + write: 2 × bytes per copy, as
 * CUDA's bandwidthTest counts it). */
int rt_gpu_dtod_bandwidth(int device, size_t bytes, int warmup, int iters, double *bytes_per_s);

/* Host-to-device and device-to-host copy bandwidth from pinned host memory,
 * bytes per second each way (either output may be NULL). */
int rt_gpu_host_bandwidth(int device, size_t bytes, int warmup, int iters, double *h2d_per_s, double *d2h_per_s);

#endif

/*
 * cuda_api — the CUDA runtime and cuBLAS functions ddpsim calls, as tables
 * of function pointers filled on first use (core/dl.h), so that only GPU
 * work loads libcudart and libcublas. Used by runtime/gpu.c and
 * runtime/nccl.c (and the GPU tests); built where the CUDA Toolkit's
 * headers were found (DDPSIM_HAVE_CUDA).
 *
 * Where: $DDPSIM_CUDART / $DDPSIM_CUBLAS when set; otherwise the sonames
 * the build found (e.g. libcudart.so.13), then the files it found, then
 * libcudart.so / libcublas.so. A library that cannot be loaded, or lacks a
 * function, is CORE_EUNSUPPORTED ("CUDA runtime not found: cannot load
 * libcudart.so.13 (...); ... or set DDPSIM_CUDART=/path/libcudart.so.13").
 */
#ifndef RUNTIME_CUDA_API_H
#define RUNTIME_CUDA_API_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/dl.h"

/* Every CUDA runtime function called through rt_cudart (cudaLaunchHostFunc
 * for the tests' stalled streams). */
#define RT_CUDART_FUNCS(X)                                                                                             \
  X(cudaDeviceGetPCIBusId)                                                                                             \
  X(cudaDeviceSynchronize)                                                                                             \
  X(cudaDriverGetVersion)                                                                                              \
  X(cudaEventCreate)                                                                                                   \
  X(cudaEventDestroy)                                                                                                  \
  X(cudaEventElapsedTime)                                                                                              \
  X(cudaEventRecord)                                                                                                   \
  X(cudaEventSynchronize)                                                                                              \
  X(cudaFree)                                                                                                          \
  X(cudaFreeHost)                                                                                                      \
  X(cudaGetDevice)                                                                                                     \
  X(cudaGetDeviceCount)                                                                                                \
  X(cudaGetDeviceProperties)                                                                                           \
  X(cudaGetErrorName)                                                                                                  \
  X(cudaGetErrorString)                                                                                                \
  X(cudaGetLastError)                                                                                                  \
  X(cudaLaunchHostFunc)                                                                                                \
  X(cudaMalloc)                                                                                                        \
  X(cudaMallocHost)                                                                                                    \
  X(cudaMemGetInfo)                                                                                                    \
  X(cudaMemcpy)                                                                                                        \
  X(cudaMemcpyAsync)                                                                                                   \
  X(cudaMemset)                                                                                                        \
  X(cudaRuntimeGetVersion)                                                                                             \
  X(cudaSetDevice)                                                                                                     \
  X(cudaStreamCreateWithFlags)                                                                                         \
  X(cudaStreamDestroy)                                                                                                 \
  X(cudaStreamQuery)

#define RT_CUBLAS_FUNCS(X)                                                                                             \
  X(cublasCreate)                                                                                                      \
  X(cublasDestroy)                                                                                                     \
  X(cublasGemmEx)                                                                                                      \
  X(cublasGetProperty)                                                                                                 \
  X(cublasGetStatusName)                                                                                               \
  X(cublasGetStatusString)

typedef struct rt_cudart {
  RT_CUDART_FUNCS(CORE_DL_FN)
} rt_cudart;

typedef struct rt_cublas {
  RT_CUBLAS_FUNCS(CORE_DL_FN)
} rt_cublas;

/* The loaded table in *api (loading it on the first call; thread-safe), or
 * CORE_EUNSUPPORTED with the message above on every call. */
int rt_cudart_load(const rt_cudart **api);
int rt_cublas_load(const rt_cublas **api);

/* The CUDA runtime's table when it is loaded, NULL otherwise; sets no
 * message (for releasing resources in clean-up paths). */
const rt_cudart *rt_cudart_loaded(void);

#endif

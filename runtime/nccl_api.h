/*
 * nccl_api — the NCCL functions the NCCL backend (runtime/nccl.c) calls, as
 * a table of function pointers filled on first use (core/dl.h), so that
 * only `--backend nccl` loads libnccl. Built where NCCL's header was found
 * (DDPSIM_HAVE_NCCL).
 *
 * Where: $DDPSIM_NCCL when set; otherwise the soname the build found
 * (libnccl.so.2), then the file it found, then libnccl.so. A library that
 * cannot be loaded, or lacks a function (NCCL before 2.14), is
 * CORE_EUNSUPPORTED: "NCCL not found: cannot load libnccl.so.2 (...);
 * install NCCL or set DDPSIM_NCCL=/path/libnccl.so.2".
 */
#ifndef RUNTIME_NCCL_API_H
#define RUNTIME_NCCL_API_H

#include <nccl.h>

#include "core/dl.h"

#define RT_NCCL_FUNCS(X)                                                                                               \
  X(ncclAllGather)                                                                                                     \
  X(ncclAllReduce)                                                                                                     \
  X(ncclBroadcast)                                                                                                     \
  X(ncclCommAbort)                                                                                                     \
  X(ncclCommDestroy)                                                                                                   \
  X(ncclCommFinalize)                                                                                                  \
  X(ncclCommGetAsyncError)                                                                                             \
  X(ncclCommInitRankConfig)                                                                                            \
  X(ncclGetErrorString)                                                                                                \
  X(ncclGetLastError)                                                                                                  \
  X(ncclGetUniqueId)                                                                                                   \
  X(ncclGetVersion)                                                                                                    \
  X(ncclReduceScatter)

typedef struct rt_nccl_api {
  RT_NCCL_FUNCS(CORE_DL_FN)
} rt_nccl_api;

/* The loaded table in *api (loading it on the first call; thread-safe), or
 * CORE_EUNSUPPORTED with the message above on every call. */
int rt_nccl_api_load(const rt_nccl_api **api);

#endif

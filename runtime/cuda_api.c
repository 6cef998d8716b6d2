/* cuda_api — loading the CUDA runtime and cuBLAS on first use
 * (runtime/cuda_api.h). The build passes the sonames and files it found as
 * DDPSIM_CUDART_SONAME, DDPSIM_CUDART_PATH, DDPSIM_CUBLAS_SONAME and
 * DDPSIM_CUBLAS_PATH; without them only the unversioned names are tried. */
#include "runtime/cuda_api.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

#ifndef DDPSIM_CUDART_SONAME
#define DDPSIM_CUDART_SONAME NULL
#endif
#ifndef DDPSIM_CUDART_PATH
#define DDPSIM_CUDART_PATH NULL
#endif
#ifndef DDPSIM_CUBLAS_SONAME
#define DDPSIM_CUBLAS_SONAME NULL
#endif
#ifndef DDPSIM_CUBLAS_PATH
#define DDPSIM_CUBLAS_PATH NULL
#endif

static const core_dl_lib cudart_lib = {
    .what = "CUDA runtime",
    .env = "DDPSIM_CUDART",
    .names = {DDPSIM_CUDART_SONAME, DDPSIM_CUDART_PATH, "libcudart.so"},
    .hint = "install the CUDA runtime (libcudart, part of the CUDA Toolkit)",
};

static const core_dl_lib cublas_lib = {
    .what = "cuBLAS",
    .env = "DDPSIM_CUBLAS",
    .names = {DDPSIM_CUBLAS_SONAME, DDPSIM_CUBLAS_PATH, "libcublas.so"},
    .hint = "install cuBLAS (libcublas, part of the CUDA Toolkit)",
};

static rt_cudart cudart;
static rt_cublas cublas;
static core_dl_once cudart_state = CORE_DL_ONCE_INIT;
static core_dl_once cublas_state = CORE_DL_ONCE_INIT;

static void load_cudart(void) {
  void *h = NULL;
  const char *as = NULL;
  int rc = core_dl_open(&cudart_lib, &h, &as);
#define RESOLVE(f) CORE_DL_RESOLVE(&cudart_lib, as, h, &cudart, rc, f)
  RT_CUDART_FUNCS(RESOLVE)
#undef RESOLVE
  core_dl_settle(&cudart_state, rc);
}

static void load_cublas(void) {
  void *h = NULL;
  const char *as = NULL;
  int rc = core_dl_open(&cublas_lib, &h, &as);
#define RESOLVE(f) CORE_DL_RESOLVE(&cublas_lib, as, h, &cublas, rc, f)
  RT_CUBLAS_FUNCS(RESOLVE)
#undef RESOLVE
  core_dl_settle(&cublas_state, rc);
}

int rt_cudart_load(const rt_cudart **api) {
  int rc = core_dl_load_once(&cudart_state, load_cudart);
  *api = rc ? NULL : &cudart;
  return rc;
}

int rt_cublas_load(const rt_cublas **api) {
  int rc = core_dl_load_once(&cublas_state, load_cublas);
  *api = rc ? NULL : &cublas;
  return rc;
}

const rt_cudart *rt_cudart_loaded(void) { return core_dl_loaded(&cudart_state) ? &cudart : NULL; }

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

static const rt_dl_lib cudart_lib = {
    .what = "CUDA runtime",
    .env = "DDPSIM_CUDART",
    .names = {DDPSIM_CUDART_SONAME, DDPSIM_CUDART_PATH, "libcudart.so"},
    .hint = "install the CUDA runtime (libcudart, part of the CUDA Toolkit)",
};

static const rt_dl_lib cublas_lib = {
    .what = "cuBLAS",
    .env = "DDPSIM_CUBLAS",
    .names = {DDPSIM_CUBLAS_SONAME, DDPSIM_CUBLAS_PATH, "libcublas.so"},
    .hint = "install cuBLAS (libcublas, part of the CUDA Toolkit)",
};

/* One library's table, filled once; a failure is kept with its message
 * and repeated to every caller (messages are per thread). */
typedef struct once_state {
  pthread_once_t once;
  int rc;
  char msg[1024];
  atomic_int ok;
} once_state;

static rt_cudart cudart;
static rt_cublas cublas;
static once_state cudart_state = {.once = PTHREAD_ONCE_INIT};
static once_state cublas_state = {.once = PTHREAD_ONCE_INIT};

static void settle(once_state *s, int rc) {
  s->rc = rc;
  if (rc)
    snprintf(s->msg, sizeof s->msg, "%s", core_err_msg());
  else
    atomic_store(&s->ok, 1);
}

static void load_cudart(void) {
  void *h = NULL;
  const char *as = NULL;
  int rc = rt_dl_open(&cudart_lib, &h, &as);
#define RESOLVE(f) RT_DL_RESOLVE(&cudart_lib, as, h, &cudart, rc, f)
  RT_CUDART_FUNCS(RESOLVE)
#undef RESOLVE
  settle(&cudart_state, rc);
}

static void load_cublas(void) {
  void *h = NULL;
  const char *as = NULL;
  int rc = rt_dl_open(&cublas_lib, &h, &as);
#define RESOLVE(f) RT_DL_RESOLVE(&cublas_lib, as, h, &cublas, rc, f)
  RT_CUBLAS_FUNCS(RESOLVE)
#undef RESOLVE
  settle(&cublas_state, rc);
}

static int result(once_state *s) { return s->rc ? core_err_set(s->rc, "%s", s->msg) : 0; }

int rt_cudart_load(const rt_cudart **api) {
  pthread_once(&cudart_state.once, load_cudart);
  *api = cudart_state.rc ? NULL : &cudart;
  return result(&cudart_state);
}

int rt_cublas_load(const rt_cublas **api) {
  pthread_once(&cublas_state.once, load_cublas);
  *api = cublas_state.rc ? NULL : &cublas;
  return result(&cublas_state);
}

const rt_cudart *rt_cudart_loaded(void) { return atomic_load(&cudart_state.ok) ? &cudart : NULL; }

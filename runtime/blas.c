/* blas — loading OpenBLAS on first use (runtime/blas.h). The build passes the
 * soname and file it found as DDPSIM_OPENBLAS_SONAME and DDPSIM_OPENBLAS_PATH;
 * without them only libopenblas.so.0 and libopenblas.so are tried. */
#include "runtime/blas.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/err.h"
#include "core/dl.h"

#ifndef DDPSIM_OPENBLAS_SONAME
#define DDPSIM_OPENBLAS_SONAME "libopenblas.so.0"
#endif
#ifndef DDPSIM_OPENBLAS_PATH
#define DDPSIM_OPENBLAS_PATH NULL
#endif

#define RT_BLAS_FUNCS(X)                                                                                               \
  X(cblas_sgemm)                                                                                                       \
  X(cblas_saxpy)                                                                                                       \
  X(openblas_get_config)                                                                                               \
  X(openblas_set_num_threads)

typedef struct blas_api {
  RT_BLAS_FUNCS(CORE_DL_FN)
} blas_api;

static const core_dl_lib blas_lib = {
    .what = "OpenBLAS",
    .env = "DDPSIM_OPENBLAS",
    .names = {DDPSIM_OPENBLAS_SONAME, DDPSIM_OPENBLAS_PATH, "libopenblas.so"},
    .hint = "install libopenblas0 (scripts/setup.sh does)",
};

static blas_api table;
static core_dl_once loaded = CORE_DL_ONCE_INIT;

static void load(void) {
  void *h = NULL;
  const char *as = NULL;
  int rc = core_dl_open(&blas_lib, &h, &as);
#define RESOLVE(f) CORE_DL_RESOLVE(&blas_lib, as, h, &table, rc, f)
  RT_BLAS_FUNCS(RESOLVE)
#undef RESOLVE
  core_dl_settle(&loaded, rc);
}

int rt_blas_load(void) { return core_dl_load_once(&loaded, load); }

int rt_blas_threads(int n) {
  int rc = rt_blas_load();
  if (!rc)
    table.openblas_set_num_threads(n > 0 ? n : 1);
  return rc;
}

/* The table of a process that loaded OpenBLAS; calling without loading is a
 * bug in the caller, not an input error. */
static const blas_api *api(void) {
  if (!core_dl_loaded(&loaded)) {
    fprintf(stderr, "ddpsim: internal error: OpenBLAS used before rt_blas_load()\n");
    abort();
  }
  return &table;
}

static enum CBLAS_TRANSPOSE cblas_trans(enum rt_blas_trans t) { return t == RT_BLAS_T ? CblasTrans : CblasNoTrans; }

void rt_blas_sgemm(enum rt_blas_trans ta, enum rt_blas_trans tb, int m, int n, int k, float alpha, const float *a,
    int lda, const float *b, int ldb, float beta, float *c, int ldc) {
  api()->cblas_sgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void rt_blas_saxpy(int n, float alpha, const float *x, int incx, float *y, int incy) {
  api()->cblas_saxpy(n, alpha, x, incx, y, incy);
}

const char *rt_blas_config(void) { return api()->openblas_get_config(); }

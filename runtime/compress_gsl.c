#include "runtime/compress_gsl.h"

#include "core/err.h"

#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <stdlib.h>

size_t rt_compress_ortho_work(int rows, int cols) {
  if (rows < 1 || cols < 1)
    return 0;
  /* The matrix (then its QR), the thin Q, and the Householder scalars. */
  return 2 * (size_t)rows * (size_t)cols + (size_t)cols;
}

int rt_compress_orthogonalize(float *a, int rows, int cols, double *work) {
  if (!a || !work || rows < 1 || cols < 1 || cols > rows)
    return core_err_set(CORE_EINVAL,
        "orthogonalizing a %d x %d matrix: need 1 <= cols <= rows "
        "and a buffer (a bug in the PowerSGD hook)",
        rows, cols);
  const size_t rc = (size_t)rows * (size_t)cols;
  gsl_matrix_view A = gsl_matrix_view_array(work, (size_t)rows, (size_t)cols);
  gsl_matrix_view Q = gsl_matrix_view_array(work + rc, (size_t)rows, (size_t)cols);
  gsl_vector_view tau = gsl_vector_view_array(work + 2 * rc, (size_t)cols);
  /* Both are row-major with the same leading dimension: copy straight. */
  for (size_t i = 0; i < rc; i++)
    work[i] = (double)a[i];
  int g = gsl_linalg_QR_decomp(&A.matrix, &tau.vector);
  /* The thin Q, column j = Q e_j: gsl_linalg_QR_unpack would build the
   * whole rows x rows Q, and P of a 4096-row layer is 4096 x r. */
  gsl_matrix_set_zero(&Q.matrix);
  for (size_t j = 0; g == 0 && j < (size_t)cols; j++) {
    gsl_vector_view col = gsl_matrix_column(&Q.matrix, j);
    gsl_vector_set(&col.vector, j, 1.0);
    g = gsl_linalg_QR_Qvec(&A.matrix, &tau.vector, &col.vector);
  }
  if (g != 0)
    return core_err_set(CORE_EINTERNAL, "QR decomposition of a %d x %d matrix failed: %s", rows, cols, gsl_strerror(g));
  const double *q = work + rc;
  for (size_t i = 0; i < rc; i++)
    a[i] = (float)q[i];
  return 0;
}

struct rt_compress_rng {
  gsl_rng *g;
};

int rt_compress_rng_create(uint64_t seed, rt_compress_rng **out) {
  *out = NULL;
  rt_compress_rng *r = malloc(sizeof *r);
  if (!r)
    return core_err_set(CORE_ENOMEM, "out of memory for PowerSGD's random generator");
  if (!(r->g = gsl_rng_alloc(gsl_rng_mt19937))) {
    free(r);
    return core_err_set(CORE_ENOMEM, "out of memory for PowerSGD's random generator");
  }
  gsl_rng_set(r->g, (unsigned long)seed);
  *out = r;
  return 0;
}

void rt_compress_rng_free(rt_compress_rng *r) {
  if (!r)
    return;
  gsl_rng_free(r->g);
  free(r);
}

void rt_compress_rng_reseed(rt_compress_rng *r, uint64_t seed) { gsl_rng_set(r->g, (unsigned long)seed); }

uint64_t rt_compress_rng_draw_seed(rt_compress_rng *r) {
  /* numpy's randint(1_000_000_000): PowerSGDState draws a seed this size. */
  return (uint64_t)gsl_rng_uniform_int(r->g, 1000000000UL);
}

void rt_compress_rng_normal(rt_compress_rng *r, float *out, size_t n) {
  for (size_t i = 0; i < n; i++)
    out[i] = (float)gsl_ran_gaussian_ziggurat(r->g, 1.0);
}

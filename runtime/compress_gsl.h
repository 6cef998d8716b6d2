/*
 * compress_gsl — the GSL half of the PowerSGD hook (runtime/compress.h):
 * orthogonalization of the low-rank factors P and Q by a Householder QR
 * decomposition, and the seeded random numbers that initialize Q. It lives
 * apart from compress.c because GSL's matrix and linear-algebra headers pull
 * in gsl/gsl_cblas.h, whose declarations clash with OpenBLAS's <cblas.h>,
 * which compress.c needs for its GEMMs. Used only by compress.c.
 */
#ifndef RUNTIME_COMPRESS_GSL_H
#define RUNTIME_COMPRESS_GSL_H

#include <stddef.h>
#include <stdint.h>

/* ---- orthogonalization ----------------------------------------------------- */

/* Doubles of scratch rt_compress_orthogonalize needs for a rows x cols
 * matrix. */
size_t rt_compress_ortho_work(int rows, int cols);

/* Replace the columns of a (rows x cols, row-major fp32, cols <= rows) by an
 * orthonormal basis of their span: the thin Q of a = QR, computed in double
 * by gsl_linalg_QR_decomp (Householder) and gsl_linalg_QR_Qvec. What
 * PyTorch's _orthogonalize gives up to the signs of the columns (its
 * Gram-Schmidt with epsilon 0 "is equivalent to torch.qr"). work holds
 * rt_compress_ortho_work(rows, cols) doubles. CORE_EINVAL for a bad shape,
 * CORE_EINTERNAL if GSL reports an error. */
int rt_compress_orthogonalize(float *a, int rows, int cols, double *work);

/* ---- random numbers ------------------------------------------------------------ */

typedef struct rt_compress_rng rt_compress_rng;

/* A GSL MT19937 generator seeded with seed (GSL maps seed 0 to its default
 * seed 4357, a fixed value, so 0 is as deterministic as any other). */
int rt_compress_rng_create(uint64_t seed, rt_compress_rng **out);
void rt_compress_rng_free(rt_compress_rng *r);
void rt_compress_rng_reseed(rt_compress_rng *r, uint64_t seed);
/* A seed for one initialization of Q: uniform in [0, 10^9), as PyTorch
 * draws state.rng.randint(1_000_000_000) for torch.manual_seed. */
uint64_t rt_compress_rng_draw_seed(rt_compress_rng *r);
/* n draws of the standard normal distribution (gsl_ran_gaussian_ziggurat),
 * as torch.randn fills Q. */
void rt_compress_rng_normal(rt_compress_rng *r, float *out, size_t n);

#endif

/*
 * blas — OpenBLAS opened on first use (core/dl.h), like the GPU
 * libraries: only real training steps (the MLP's GEMMs, PowerSGD) and the
 * CPU calibration sweeps need a fast BLAS, and loading OpenBLAS at start-up
 * starts its thread pool in every command (a simulation, a plot, --version).
 * GSL keeps its own CBLAS (libgslcblas), which GSL's library already names.
 *
 * Where: $DDPSIM_OPENBLAS when set; otherwise the soname the build found
 * (libopenblas.so.0), then the file it found, then libopenblas.so. A library
 * that cannot be loaded is CORE_EUNSUPPORTED: "OpenBLAS not found: cannot
 * load libopenblas.so.0 (...); install libopenblas0 or set
 * DDPSIM_OPENBLAS=/path/libopenblas.so.0".
 *
 * rt_blas_load() (or rt_blas_threads()) must have succeeded in this process
 * before the other functions are called; they abort otherwise.
 */
#ifndef RUNTIME_BLAS_H
#define RUNTIME_BLAS_H

/* Whether a GEMM operand is used as stored or transposed. */
enum rt_blas_trans { RT_BLAS_N, RT_BLAS_T };

/* Load OpenBLAS (once; thread-safe). 0, or the error above on every call. */
int rt_blas_load(void);

/* Load OpenBLAS and give it n threads for this process (1 when n < 1). */
int rt_blas_threads(int n);

/* OpenBLAS's cblas_sgemm on row-major matrices (c = alpha op(a) op(b) +
 * beta c) and its cblas_saxpy. The header keeps cblas.h out of its users,
 * whose GSL headers declare the same CBLAS names. */
void rt_blas_sgemm(enum rt_blas_trans ta, enum rt_blas_trans tb, int m, int n, int k, float alpha, const float *a,
    int lda, const float *b, int ldb, float beta, float *c, int ldc);
void rt_blas_saxpy(int n, float alpha, const float *x, int incx, float *y, int incy);

/* OpenBLAS's description of its build (openblas_get_config). */
const char *rt_blas_config(void);

#endif

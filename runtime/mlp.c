#include "mlp.h"

#include "core/err.h"

#include "runtime/blas.h"
#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void rt_matmul_nt(const float *x, const float *w, float *y, int rows, int in, int out) {
  rt_blas_sgemm(RT_BLAS_N, RT_BLAS_T, rows, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
}

void rt_mlp_free(rt_mlp *n) {
  if (!n)
    return;
  if (n->act)
    for (int l = 0; l <= n->n_layers; l++)
      free(n->act[l]);
  free(n->act);
  free(n->dbuf[0]);
  free(n->dbuf[1]);
  free(n->params);
  free(n->grads);
  free(n->offset);
  free(n);
}

/* n's parameters, gradients, offsets and activation buffers for its
 * model at batch; 0, or -1 when memory ran out (n keeps what it got). */
static int alloc_buffers(rt_mlp *n, int batch) {
  const core_model *m = n->model;
  n->offset = malloc(sizeof *n->offset * (size_t)m->n_tensors);
  n->params = malloc(sizeof *n->params * (size_t)m->n_params);
  n->grads = calloc((size_t)m->n_params, sizeof *n->grads);
  n->act = calloc((size_t)m->n_layers + 1, sizeof *n->act);
  int width = m->layers[0].in;
  for (int l = 0; l < m->n_layers; l++)
    if (m->layers[l].out > width)
      width = m->layers[l].out;
  n->dbuf[0] = malloc(sizeof(float) * (size_t)batch * (size_t)width);
  n->dbuf[1] = malloc(sizeof(float) * (size_t)batch * (size_t)width);
  if (!n->offset || !n->params || !n->grads || !n->act || !n->dbuf[0] || !n->dbuf[1])
    return -1;
  n->act[0] = malloc(sizeof(float) * (size_t)batch * (size_t)m->layers[0].in);
  if (!n->act[0])
    return -1;
  for (int l = 0; l < m->n_layers; l++)
    if (!(n->act[l + 1] = malloc(sizeof(float) * (size_t)batch * (size_t)m->layers[l].out)))
      return -1;
  size_t off = 0;
  for (int t = 0; t < m->n_tensors; t++) {
    n->offset[t] = off;
    off += (size_t)m->tensor_elems[t];
  }
  return 0;
}

/* torch.nn.Linear.reset_parameters: kaiming_uniform_(a=sqrt(5)) on the
 * weight is U(-1/sqrt(in), 1/sqrt(in)), and the bias uses the same bound.
 * 0, or -1 without memory for the generator. */
static int init_params(rt_mlp *n, uint64_t seed) {
  const core_model *m = n->model;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!rng)
    return -1;
  gsl_rng_set(rng, (unsigned long)seed);
  for (int l = 0; l < m->n_layers; l++) {
    const core_layer *L = &m->layers[l];
    double bound = 1.0 / sqrt((double)L->in);
    for (int t = 0; t < L->n_tensors; t++) {
      float *p = n->params + n->offset[L->first_tensor + t];
      for (int64_t i = 0; i < m->tensor_elems[L->first_tensor + t]; i++)
        p[i] = (float)((2.0 * gsl_rng_uniform(rng) - 1.0) * bound);
    }
  }
  gsl_rng_free(rng);
  return 0;
}

int rt_mlp_create(const core_model *m, int batch, uint64_t seed, rt_mlp **out) {
  int rc = core_model_check_runnable(m);
  if (rc || (rc = rt_blas_load()) != 0)
    return rc;
  if (batch < 1)
    return core_err_set(CORE_EINVAL, "batch must be at least 1 (got %d)", batch);
  rt_mlp *n = calloc(1, sizeof *n);
  if (!n)
    return core_err_set(CORE_ENOMEM, "out of memory building the MLP");
  n->model = m;
  n->n_layers = m->n_layers;
  n->batch = batch;
  n->n_params = m->n_params;
  if (alloc_buffers(n, batch) != 0 || init_params(n, seed) != 0)
    goto fail_nomem;
  *out = n;
  return 0;
fail_nomem:
  rt_mlp_free(n);
  return core_err_set(
      CORE_ENOMEM, "out of memory building the MLP (%lld parameters, batch %d)", (long long)m->n_params, batch);
}

void rt_mlp_forward_layer(rt_mlp *n, int l) {
  const core_layer *L = &n->model->layers[l];
  const float *x = n->act[l];
  float *y = n->act[l + 1];
  const float *w = n->params + n->offset[L->first_tensor];
  const float *b = n->params + n->offset[L->first_tensor + 1];
  /* y = b broadcast over the batch, then y += x W^T. */
  for (int i = 0; i < n->batch; i++)
    memcpy(y + (size_t)i * L->out, b, sizeof(float) * (size_t)L->out);
  rt_blas_sgemm(RT_BLAS_N, RT_BLAS_T, n->batch, L->out, L->in, 1.0f, x, L->in, w, L->in, 1.0f, y, L->out);
  if (L->act == CORE_ACT_RELU) {
    size_t k = (size_t)n->batch * (size_t)L->out;
    for (size_t i = 0; i < k; i++)
      y[i] = y[i] > 0 ? y[i] : 0;
  }
}

double rt_mlp_loss(rt_mlp *n, const float *target) {
  const core_layer *L = &n->model->layers[n->n_layers - 1];
  const float *y = n->act[n->n_layers];
  size_t k = (size_t)n->batch * (size_t)L->out;
  float *g = n->dbuf[0];
  double sum = 0;
  /* torch.nn.MSELoss (mean over all elements): dL/dy = 2 (y - t) / k. */
  float scale = 2.0f / (float)k;
  for (size_t i = 0; i < k; i++) {
    float d = y[i] - target[i];
    sum += (double)d * d;
    g[i] = scale * d;
  }
  n->cur = 0;
  n->loss = sum / (double)k;
  return n->loss;
}

void rt_mlp_backward_layer(rt_mlp *n, int l) {
  const core_layer *L = &n->model->layers[l];
  float *g = n->dbuf[n->cur];
  const float *x = n->act[l];
  const float *y = n->act[l + 1];
  size_t k = (size_t)n->batch * (size_t)L->out;
  if (L->act == CORE_ACT_RELU)
    for (size_t i = 0; i < k; i++)
      if (!(y[i] > 0))
        g[i] = 0;
  float *gw = n->grads + n->offset[L->first_tensor];
  float *gb = n->grads + n->offset[L->first_tensor + 1];
  /* dW = G^T X  [out x in];  db = column sums of G;  dX = G W  [batch x in]. */
  rt_blas_sgemm(RT_BLAS_T, RT_BLAS_N, L->out, L->in, n->batch, 1.0f, g, L->out, x, L->in, 0.0f, gw, L->in);
  memset(gb, 0, sizeof(float) * (size_t)L->out);
  for (int i = 0; i < n->batch; i++)
    rt_blas_saxpy(L->out, 1.0f, g + (size_t)i * L->out, 1, gb, 1);
  if (l > 0) {
    const float *w = n->params + n->offset[L->first_tensor];
    float *gx = n->dbuf[1 - n->cur];
    rt_blas_sgemm(RT_BLAS_N, RT_BLAS_N, n->batch, L->in, L->out, 1.0f, g, L->out, w, L->in, 0.0f, gx, L->in);
    n->cur = 1 - n->cur;
  }
}

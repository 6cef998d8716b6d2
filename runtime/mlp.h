/*
 * mlp — the network the CPU runtime trains for real: the linear layers of a
 * model file (core/model.h), with ReLU where the file says, and an MSE loss,
 * computed with CBLAS (OpenBLAS) in fp32. Parameters live in one contiguous
 * array in PyTorch's parameter order (layer by layer, weight [out x in] then
 * bias [out]), gradients in another with the same layout, so tensor t of the
 * model is params + offset[t] — the layout the DDP engine's buckets index.
 *
 * Backward is exposed one layer at a time (last layer first) so that the DDP
 * engine can hand each layer's gradients to its buckets as soon as they
 * exist, as PyTorch's autograd hooks do.
 */
#ifndef RUNTIME_MLP_H
#define RUNTIME_MLP_H

#include "core/model.h"

#include <stddef.h>
#include <stdint.h>

typedef struct rt_mlp {
  const core_model *model;
  int n_layers;
  int batch;
  int64_t n_params;
  size_t *offset; /* [n_tensors] element offset of each tensor in params/grads */
  float *params;
  float *grads;
  float **act;    /* [n_layers + 1]: act[0] = input batch, act[l+1] = output of layer l */
  float *dbuf[2]; /* gradient w.r.t. activations, ping-pong, batch x max width */
  int cur;        /* which dbuf holds the gradient flowing into the next layer down */
  double loss;
} rt_mlp;

/* Allocate for a batch size; parameters initialized like torch.nn.Linear
 * (uniform in +-1/sqrt(in), weights and biases) from seed. */
int rt_mlp_create(const core_model *m, int batch, uint64_t seed, rt_mlp **out);
void rt_mlp_free(rt_mlp *n);

/* Forward one layer: act[l+1] = act(act[l] W^T + b). Input goes in act[0]. */
void rt_mlp_forward_layer(rt_mlp *n, int l);
/* MSE loss against target (batch x out); seeds backward with dL/dY. */
double rt_mlp_loss(rt_mlp *n, const float *target);
/* Backward of layer l (call for l = n_layers-1 down to 0): writes the
 * gradients of its weight and bias into grads; the input gradient only when
 * l > 0 (the data needs none). */
void rt_mlp_backward_layer(rt_mlp *n, int l);

/* Parameters of the whole model as one float array of n_params. */
static inline float *rt_mlp_tensor(rt_mlp *n, float *base, int t) { return base + n->offset[t]; }

/* y [rows x out] = x [rows x in] times w^T, w being [out x in] (CBLAS). */
void rt_matmul_nt(const float *x, const float *w, float *y, int rows, int in, int out);

#endif

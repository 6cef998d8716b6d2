#include "compute.h"

#include "sim/memfit.h"

#include "core/err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Constants of the per-operation model (docs/compute-model.md). The
 * efficiencies and effective passes were fitted on the per-op device times
 * of one H200 (bench/data/h200-gpu-ops.csv: ResNet-50 at batch 128 in
 * channels_last, BERT-large at 16 sequences of 512 tokens, fp32, tf32 and
 * bf16 autocast) and are checked on the other batches of
 * bench/data/h200-gpu-steps.csv (bench/validate-gpu.sh). */

/* Achieved share of the profile's best GEMM rate (compute[], the cuBLAS
 * sweep) by the layers' own kernels, per math: fp32, tf32, half. Linear:
 * BERT-large's aten::mm and aten::addmm; conv: ResNet-50's cuDNN
 * convolutions, forward and backward; attention: PyTorch's fused attention
 * (efficient attention in fp32 and tf32, which does not use TF32; cuDNN
 * attention in bf16) against its score and context FLOPs. */
static const double eta_linear[3] = {0.985, 0.578, 0.711};
static const double eta_conv[3] = {0.592, 0.411, 0.444};
static const double eta_attn[3] = {0.474, 0.474, 0.192};
/* The same shares where the profile gives its SM count and each GEMM's rate
 * also carries its shape's quantization (shape_factor): refitted so that
 * the fitted layers take the time they took without it. */
static const double eta_linear_shaped[3] = {0.974, 0.581, 0.715};
static const double eta_conv_shaped[3] = {0.578, 0.407, 0.439};
/* Elementwise kernels stream this share of the datasheet bandwidth (ReLU,
 * its backward and the residual adds of ResNet-50 in fp32: 4.3 of the
 * H200's 4.8 TB/s); autocast's dtype conversions this share of that. */
#define STREAM_EFF 0.896
#define CAST_EFF 0.686
/* Effective passes of the output through memory: batch norm (forward,
 * backward; at 4 bytes an element whatever the precision, as measured),
 * layer/group norm, a bias gradient's reduction over the tokens, pooling
 * (of input plus output). */
#define BN_FWD_PASSES 4.0
#define BN_BWD_PASSES 5.5
#define LN_FWD_PASSES 3.8
#define LN_BWD_PASSES 9.0
#define BIAS_GRAD_PASSES 3.0
#define POOL_FWD_PASSES 3.7
#define POOL_BWD_PASSES 7.6
/* The device's gap between kernels queued back to back, and the shortest
 * kernel: the compute-stream gaps of the four GPU traces of Meta's Holistic
 * Trace Analysis test data (V100 and A100: 0.92, 1.30, 1.42, 2.27 us) and
 * the one-element fills of the H200 steps (1.4 us). */
#define KERNEL_GAP_S 1.36e-6
#define KERNEL_MIN_S 2.0e-6
/* A conversion reads 4 or 2 bytes and writes 2 or 4. */
#define CAST_BYTES 6.0

enum { MATH_FP32, MATH_TF32, MATH_HALF };

typedef struct ctx {
  const core_model *m;
  const core_profile *pr;
  double b;                /* batch */
  enum core_prec cp;       /* GEMM precision */
  int math, amp, half;     /* math class; autocast; a model in half */
  enum sim_attention attn; /* training.attention */
  double bw;               /* streaming bytes/s */
  double *width;           /* [n_layers] bytes an element of each layer's output */
  double dev;              /* this layer's device time so far */
  int kernels, casts;
} ctx;

/* A layer's GEMM of flops: the best rate of the profile's sweep once it is
 * as large as the sweep's smallest GEMM, else that one's rate. The sweep's
 * square GEMMs between its sizes lose rate to wave quantization that the
 * layers' tall GEMMs, many tiles deep, do not: BERT-large's at 16 and 32
 * sequences ran at one rate. *ref: the cube side of the sweep's GEMM that
 * rate came from. */
static double gemm_rate(const core_profile *pr, enum core_prec p, double flops, double *ref) {
  const core_prof_rate *r = &pr->rate[p];
  if (!r->present || r->n == 0)
    return 0;
  double best = r->tflops[0];
  *ref = cbrt(r->gemm_flops[0] / 2);
  for (int i = 1; i < r->n && flops >= r->gemm_flops[0]; i++)
    if (r->tflops[i] > best)
      best = r->tflops[i], *ref = cbrt(r->gemm_flops[i] / 2);
  return best * 1e12;
}

/* Thread-block tiles cuBLAS chooses among for tensor-core GEMMs, from most
 * to least efficient, and the quantization of an M x N output into them:
 * tile quantization (a dimension not a multiple of the tile's pads the last
 * tile) and wave quantization (ceil(tiles / SMs) waves of one tile an SM),
 * as NVIDIA's Matrix Multiplication Background User's Guide describes them
 * (docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication).
 * A GEMM's share is the best over the tiles (cuBLAS's heuristics pick one).
 * A batched GEMM of count outputs runs all their tiles in its waves. */
static const double tiles[][2] = {{256, 128}, {128, 256}, {128, 128}, {256, 64}, {64, 256}, {128, 64}, {64, 128}};

static double quantization(double M, double N, double count, int sms) {
  double best = 0;
  for (size_t i = 0; i < sizeof tiles / sizeof *tiles; i++) {
    double tm = ceil(M / tiles[i][0]), tn = ceil(N / tiles[i][1]), t = tm * tn, all = t * count;
    double q = M * N / (t * tiles[i][0] * tiles[i][1]) * all / (ceil(all / sms) * sms);
    if (q > best)
      best = q;
  }
  return best;
}

/* Quantization of a GEMM with an M x N output relative to the sweep's
 * square GEMM of side ref that its rate came from (on the GPU that ran the
 * sweep: device.sweep_sms), so that what the sweep measured at its own
 * shape is not counted twice. M = 0: a GEMM split over its long reduction
 * (a weight's gradient; split-K, CUTLASS's media/docs/efficient_gemm.md),
 * which fills every SM. 1 without the profile's SM count or a shape. A
 * small K is memory-bound, which kern's bytes already charge. count: the
 * outputs of a batched GEMM (1 for a layer's). */
static double shape_factor(const core_profile *pr, double M, double N, double count, double ref) {
  if (pr->sms <= 0 || !(ref >= 1) || !(M == 0 || (M >= 1 && N >= 1)))
    return 1;
  int ref_sms = pr->sweep_sms > 0 ? pr->sweep_sms : pr->sms;
  return (M == 0 ? 1 : quantization(M, N, count, pr->sms)) / quantization(ref, ref, 1, ref_sms);
}

/* n kernels doing flops at rate and moving bytes at bw * eff. */
static double kern(ctx *c, double flops, double rate, double bytes, double eff, int n) {
  double t = flops > 0 && rate > 0 ? flops / rate : 0, m = bytes / (c->bw * eff);
  t = (t > m ? t : m) + n * KERNEL_GAP_S;
  if (t < n * KERNEL_MIN_S)
    t = n * KERNEL_MIN_S;
  c->dev += t;
  c->kernels += n;
  return t;
}

static double cast(ctx *c, double elems) {
  c->casts++;
  c->kernels--; /* counted apart: autocast issues it inside the operator's own call */
  return kern(c, 0, 0, elems * CAST_BYTES, CAST_EFF, 1);
}

static double elems(const ctx *c, int l) { return c->m->layers[l].act_bytes / 4.0 * c->b; }

/* Elements a layer reads per step, and with each input's width the bytes;
 * the batch's data is fp32. gemm: a GEMM reads half copies under autocast. */
static double in_bytes(const ctx *c, int l, int gemm, double *el) {
  const core_layer *L = &c->m->layers[l];
  double bytes = 0;
  *el = 0;
  if (L->n_inputs == 0) {
    *el = L->in_bytes / 4.0 * c->b;
    return *el * (c->half || (gemm && c->amp) ? 2 : 4);
  }
  for (int k = 0; k < L->n_inputs; k++) {
    int j = c->m->inputs[L->first_input + k];
    *el += elems(c, j);
    bytes += elems(c, j) * (gemm && c->amp ? 2 : c->width[j]);
  }
  return bytes;
}

/* Under autocast, each fp32 input of an op of the half list (or half input
 * of the fp32 list) is cast in forward, and its gradient back in backward:
 * one direction's casts. */
static double input_casts(ctx *c, int l, double from_width) {
  const core_layer *L = &c->m->layers[l];
  double t = 0;
  if (L->n_inputs == 0 && from_width == 4 && L->in_bytes > 0)
    return cast(c, L->in_bytes / 4.0 * c->b);
  for (int k = 0; k < L->n_inputs; k++) {
    int j = c->m->inputs[L->first_input + k];
    if (c->width[j] == from_width)
      t += cast(c, elems(c, j));
  }
  return t;
}

static int math_of(enum core_prec p) {
  return p == CORE_PREC_FP32 ? MATH_FP32 : p == CORE_PREC_TF32 ? MATH_TF32 : MATH_HALF;
}

/* The output of layer l's forward GEMM, M x N, and its reduction K, from
 * its weight (N x K; a convolution's as an implicit GEMM: N output
 * channels, K input channels times the kernel's area), FLOPs (2 M N K) and
 * output (M x N); 0 when they do not give one. */
static void gemm_shape(const ctx *c, const core_layer *L, double *M, double *N, double *K) {
  double W = L->n_tensors > 0 ? (double)c->m->tensor_elems[L->first_tensor] : 0;
  double Ms = W > 0 ? L->fwd_flops / (2 * W) : 0;
  *M = *N = *K = 0;
  if (!(Ms >= 1) || !(L->act_bytes / 4.0 / Ms >= 1))
    return;
  *N = L->act_bytes / 4.0 / Ms;
  *K = W / *N;
  *M = Ms * c->b;
}

/* conv, linear: the forward GEMM; backward, bwd_flops / fwd_flops GEMMs of
 * the forward's size (the weight's gradient, and the input's: the first
 * layer's needs none); a bias's gradient, a reduction; autocast's casts.
 * Each GEMM's rate carries its shape's quantization (shape_factor). */
static void gemm_layer(ctx *c, int l, double *fwd, double *bwd) {
  const core_layer *L = &c->m->layers[l];
  const core_model *m = c->m;
  double F = L->fwd_flops * c->b, Fb = L->bwd_flops * c->b, in_el, ref = 0, M, N, K;
  int conv = L->op == CORE_OP_CONV, shaped = c->pr->sms > 0;
  double eta = (shaped ? conv ? eta_conv_shaped : eta_linear_shaped : conv ? eta_conv : eta_linear)[c->math];
  double rate = gemm_rate(c->pr, c->cp, F, &ref) * eta, pw = c->half || c->amp ? 2 : 4;
  double in = in_bytes(c, l, 1, &in_el), out = elems(c, l) * c->width[l];
  double w = L->n_tensors > 0 ? (double)m->tensor_elems[L->first_tensor] * pw : 0;
  int nb = F > 0 ? (int)lround(Fb / F) : 0;
  gemm_shape(c, L, &M, &N, &K);
  *fwd = kern(c, F, rate * shape_factor(c->pr, M, N, 1, ref), in + out + w, 1, 1);
  *bwd = 0;
  for (int k = 0; k < nb; k++) { /* the weight's gradient (split-K) also writes it; the input's, M x K */
    double q = k == 0 ? shape_factor(c->pr, 0, 0, 1, ref) : shape_factor(c->pr, M, K, 1, ref);
    *bwd += kern(c, Fb / nb, rate * q, in + out + w + (k == 0 ? w : 0), 1, 1);
  }
  for (int t = 1; t < L->n_tensors; t++)
    *bwd += kern(c, 0, 0, BIAS_GRAD_PASSES * out, 1, 1);
  if (c->amp) {
    for (int t = 0; t < L->n_tensors; t++) {
      *fwd += cast(c, (double)m->tensor_elems[L->first_tensor + t]);
      *bwd += cast(c, (double)m->tensor_elems[L->first_tensor + t]);
    }
    *fwd += input_casts(c, l, 4);
    *bwd += input_casts(c, l, 4);
  }
}

/* Fused attention: its FLOPs at the attention kernels' rate (fp32 math in
 * fp32 and tf32), reading its inputs and writing its output; backward, two
 * kernels that read and write twice that. */
static void attention(ctx *c, int l, double *fwd, double *bwd) {
  const core_layer *L = &c->m->layers[l];
  enum core_prec p = c->math == MATH_HALF ? c->cp : CORE_PREC_FP32;
  double F = L->fwd_flops * c->b, ref, rate = gemm_rate(c->pr, p, F, &ref) * eta_attn[c->math], el;
  double io = in_bytes(c, l, 1, &el) + elems(c, l) * c->width[l];
  *fwd = kern(c, F, rate, io, 1, 1);
  *bwd = kern(c, L->bwd_flops * c->b, rate, 2 * io, 1, 2);
}

/* Bytes a score of PyTorch's unfused (math) attention moves in its
 * memory-bound kernels, all fp32 (_scaled_dot_product_attention_math in
 * aten/src/ATen/native/transformers/attention.cpp computes in fp32 whatever
 * its inputs' type). Forward, _safe_softmax: softmax reads and writes 4,
 * eq(-inf) reads 4 and writes a 1-byte bool, all() reads that, where()
 * reads 4 and writes 4. Dropout (native_dropout on a GPU) reads 4, writes 4
 * and a 1-byte mask; its backward reads the gradient and the mask, writes
 * 4. Softmax's backward (_softmax_backward_data, autograd's rule for
 * _safe_softmax) reads the gradient and the output, writes 4. */
#define SCORE_SOFTMAX_FWD_BYTES 22.0
#define SCORE_SOFTMAX_FWD_KERNELS 4
#define SCORE_DROPOUT_BYTES 9.0
#define SCORE_SOFTMAX_BWD_BYTES 12.0

/* A batched GEMM of math attention: flops over count outputs of M x N,
 * moving bytes, at the profile's rate for its size and shape (the linear
 * layers' share of the sweep; a small K is memory-bound, which its bytes
 * charge). */
static double score_gemm(ctx *c, enum core_prec p, double flops, double M, double N, double count, double bytes) {
  int mc = math_of(p), shaped = c->pr->sms > 0;
  double ref = 0, rate = gemm_rate(c->pr, p, flops, &ref) * (shaped ? eta_linear_shaped : eta_linear)[mc];
  return kern(c, flops, rate * shape_factor(c->pr, M, N, count, ref), bytes, 1, 1);
}

/* Unfused attention (training.attention resolving to math), as
 * _scaled_dot_product_attention_math runs it: half inputs cast to fp32;
 * the query and the key scaled by sqrt(scale) each; both, and the value,
 * copied contiguous by at::matmul, which cannot fold the batch and head
 * dimensions of the projections' head-strided views; the batched GEMMs
 * Q K^T (seq x seq outputs) and P V (seq x head_dim), one a head and
 * sample, in fp32 (TF32 where matmuls allow it: the tf32 precision); the
 * score passes above; the output cast back. Backward: the output's
 * gradient cast, four GEMMs (dP, dV, dQ, dK), dropout's and softmax's
 * backwards, the scales' backwards, the inputs' gradients cast back.
 * Needs heads (and so seq_len); without them the layer is timed fused. */
static void attention_math(ctx *c, int l, double *fwd, double *bwd) {
  const core_layer *L = &c->m->layers[l];
  enum core_prec p = c->cp == CORE_PREC_TF32 ? CORE_PREC_TF32 : CORE_PREC_FP32;
  if (!c->pr->rate[p].present)
    p = c->cp;
  double S = L->seq_len, BH = c->b * L->heads, scores = BH * S * S, E = elems(c, l);
  double G = L->fwd_flops * c->b / 2, d = L->fwd_flops / (4.0 * L->heads * S * S);
  int drop = L->dropout > 0, half = c->width[l] < 4;
  *fwd = *bwd = 0;
  for (int k = 0; half && k < 3; k++)
    *fwd += cast(c, E);
  *fwd += kern(c, 0, 0, 2 * E * 8, 1, 2) + kern(c, 0, 0, 2 * E * 8, 1, 2); /* scale q and k; copy them */
  *fwd += score_gemm(c, p, G, S, S, BH, 2 * E * 4 + scores * 4);
  *fwd += kern(c, 0, 0, scores * SCORE_SOFTMAX_FWD_BYTES, 1, SCORE_SOFTMAX_FWD_KERNELS);
  if (drop)
    *fwd += kern(c, 0, 0, scores * SCORE_DROPOUT_BYTES, 1, 1);
  *fwd += kern(c, 0, 0, E * 8, 1, 1); /* copy v */
  *fwd += score_gemm(c, p, G, S, d, BH, scores * 4 + 2 * E * 4);
  if (half)
    *fwd += cast(c, E);
  if (half)
    *bwd += cast(c, E);
  *bwd += score_gemm(c, p, G, S, S, BH, 2 * E * 4 + scores * 4); /* dP = dO V^T */
  *bwd += score_gemm(c, p, G, S, d, BH, scores * 4 + 2 * E * 4); /* dV = P^T dO */
  if (drop)
    *bwd += kern(c, 0, 0, scores * SCORE_DROPOUT_BYTES, 1, 1);
  *bwd += kern(c, 0, 0, scores * SCORE_SOFTMAX_BWD_BYTES, 1, 1);
  *bwd += score_gemm(c, p, G, S, d, BH, scores * 4 + 2 * E * 4); /* dQ = dS K */
  *bwd += score_gemm(c, p, G, S, d, BH, scores * 4 + 2 * E * 4); /* dK = dS^T Q */
  *bwd += kern(c, 0, 0, 2 * E * 8, 1, 2);                        /* the scales' backwards */
  for (int k = 0; half && k < 3; k++)
    *bwd += cast(c, E);
}

/* Memory-bound layers. */
static void streaming(ctx *c, int l, double *fwd, double *bwd) {
  const core_layer *L = &c->m->layers[l];
  double E = elems(c, l), w = c->width[l], in_el, in = in_bytes(c, l, 0, &in_el);
  double P = L->n_tensors > 0 ? (double)c->m->tensor_elems[L->first_tensor] : 0;
  switch (L->op) {
  case CORE_OP_BATCH_NORM:
    *fwd = kern(c, 0, 0, BN_FWD_PASSES * E * 4, 1, 1);
    *bwd = kern(c, 0, 0, BN_BWD_PASSES * E * 4, 1, 1);
    return;
  case CORE_OP_LAYER_NORM:
  case CORE_OP_GROUP_NORM:
    *fwd = kern(c, 0, 0, LN_FWD_PASSES * E * w, 1, 1) + (c->amp ? input_casts(c, l, 2) : 0);
    *bwd = kern(c, 0, 0, LN_BWD_PASSES * E * w, 1, 2) + (c->amp ? input_casts(c, l, 2) : 0);
    return;
  case CORE_OP_POOLING:
    *fwd = kern(c, 0, 0, POOL_FWD_PASSES * (in + E * w), 1, 1);
    *bwd = kern(c, 0, 0, POOL_BWD_PASSES * (in + E * w), 1, 2);
    return;
  case CORE_OP_EMBEDDING: /* a gather; backward zeroes and fills the whole weight's gradient */
    *fwd = kern(c, 0, 0, 2 * E * 4, 1, 1);
    *bwd = kern(c, 0, 0, 2 * E * 4 + 2 * P * 4, 1, 3);
    return;
  case CORE_OP_LOSS: /* log-softmax reads its input twice and writes it; backward as much */
    *fwd = kern(c, 0, 0, 3 * in_el * 4, 1, 2) + (c->amp ? input_casts(c, l, 2) : 0);
    *bwd = kern(c, 0, 0, 3 * in_el * 4, 1, 2) + (c->amp ? input_casts(c, l, 2) : 0);
    return;
  default: /* activation: reads its inputs and writes; backward reads the gradient and what it saved */
    *fwd = kern(c, 0, 0, in + E * w, 1, 1);
    *bwd = kern(c, 0, 0, 3 * E * w, 1, 1);
    if (c->amp && L->n_inputs > 1 && in != in_el * w) /* mixed types: the half input's gradient is cast */
      *bwd += cast(c, E);
    return;
  }
}

/* Bytes an element of layer l's output takes (see the header). */
static double out_width(const ctx *c, int l) {
  const core_layer *L = &c->m->layers[l];
  if (!c->amp)
    return c->half ? 2 : 4;
  switch (L->op) {
  case CORE_OP_CONV:
  case CORE_OP_LINEAR:
  case CORE_OP_ATTENTION: return 2;
  case CORE_OP_LAYER_NORM:
  case CORE_OP_GROUP_NORM:
  case CORE_OP_LOSS:
  case CORE_OP_EMBEDDING:
  case CORE_OP_OTHER: return 4;
  default: break;
  }
  double w = L->n_inputs ? 2 : 4;
  for (int k = 0; k < L->n_inputs; k++)
    if (c->width[c->m->inputs[L->first_input + k]] > w)
      w = c->width[c->m->inputs[L->first_input + k]];
  return w;
}

/* The generic rule (header): a GEMM of the layer's FLOPs, its activation's
 * elementwise passes at memory_GBps. */
static void generic(const ctx *c, const core_layer *L, double *fwd, double *bwd) {
  double ff = L->fwd_flops * c->b, bf = L->bwd_flops * c->b;
  double act_s = L->act_bytes * c->b / (c->pr->memory_GBps * 1e9);
  *fwd = ff > 0 ? ff / core_profile_flops(c->pr, c->cp, ff) : 0;
  /* Backward is two GEMMs the size of the forward one (input and weight
   * gradients), so its rate is that of half its FLOPs. */
  *bwd = bf > 0 ? bf / core_profile_flops(c->pr, c->cp, bf / 2) : 0;
  *fwd += SIM_ELEMENTWISE_FWD_PASSES * act_s;
  *bwd += SIM_ELEMENTWISE_BWD_PASSES * act_s;
}

/* Bytes a parameter torch.optim's foreach implementations move in one step
 * (torch/optim/sgd.py _multi_tensor_sgd, adam.py _multi_tensor_adam):
 * SGD's add_ reads param and grad and writes param (12); momentum adds
 * mul_ and add_ on the buffer (8 + 12); Adam's lerp_, mul_, addcmul_,
 * sqrt, div_, add_ and addcdiv_ (72); and the foreach calls they make. */
static double optimizer_step(ctx *c, enum sim_optimizer o, int64_t params) {
  double bytes = o == SIM_OPT_ADAM ? 72.0 : o == SIM_OPT_SGD_MOMENTUM ? 32.0 : 12.0;
  int calls = o == SIM_OPT_ADAM ? 7 : o == SIM_OPT_SGD_MOMENTUM ? 3 : 1;
  return kern(c, 0, 0, (double)params * bytes, 1, calls);
}

static int per_op(const core_profile *pr, const core_layer *L) {
  return L->op != CORE_OP_OTHER && strcmp(pr->device_kind, "gpu") == 0;
}

/* Layer l on its rule; c->dev and the counts grow by its kernels. */
static void layer(ctx *c, int l, double *fwd, double *bwd) {
  const core_layer *L = &c->m->layers[l];
  c->width[l] = out_width(c, l);
  if (!per_op(c->pr, L)) {
    generic(c, L, fwd, bwd);
    c->dev += *fwd + *bwd;
    c->kernels += 2;
    return;
  }
  if (L->op == CORE_OP_CONV || L->op == CORE_OP_LINEAR)
    gemm_layer(c, l, fwd, bwd);
  else if (L->op == CORE_OP_ATTENTION && L->heads > 0 && sim_memfit_attention_math(L, c->attn, 0))
    attention_math(c, l, fwd, bwd);
  else if (L->op == CORE_OP_ATTENTION)
    attention(c, l, fwd, bwd);
  else
    streaming(c, l, fwd, bwd);
}

int sim_compute_layers(const core_model *m, const core_profile *pr, enum sim_precision p, double batch,
    enum sim_optimizer o, enum sim_attention attn, sim_compute_out *out) {
  ctx c = {.m = m, .pr = pr, .b = batch, .cp = sim_precision_compute(p), .attn = attn};
  c.math = math_of(c.cp);
  c.amp = p == SIM_PREC_AMP_FP16 || p == SIM_PREC_AMP_BF16;
  c.half = p == SIM_PREC_FP16 || p == SIM_PREC_BF16;
  c.bw = pr->peak_memory_GBps > 0 ? pr->peak_memory_GBps * 1e9 * STREAM_EFF : pr->memory_GBps * 1e9;
  if (!(c.width = calloc((size_t)m->n_layers + 1, sizeof *c.width)))
    return core_err_set(CORE_ENOMEM, "out of memory costing %s's layers", m->name);
  int any = 0;
  for (int l = 0; l < m->n_layers; l++) {
    layer(&c, l, &out->fwd_s[l], &out->bwd_s[l]);
    any |= per_op(pr, &m->layers[l]);
  }
  out->optimizer_s = any ? optimizer_step(&c, o, m->n_params) : -1;
  out->device_s = c.dev;
  out->kernels = c.kernels;
  out->host_s = any ? c.kernels * pr->launch_us * 1e-6 : 0;
  if (out->host_s > out->device_s) {
    /* Host-bound: the device waits for launches; each layer takes its share. */
    double k = out->host_s / out->device_s;
    for (int l = 0; l < m->n_layers; l++)
      out->fwd_s[l] *= k, out->bwd_s[l] *= k;
    out->optimizer_s *= k;
  }
  free(c.width);
  return 0;
}

int sim_compute_check(const core_model *m, const core_profile *pr, enum sim_precision p) {
  int half = p != SIM_PREC_FP32 && p != SIM_PREC_TF32;
  (void)pr;
  if (m->measured || !half)
    return 0;
  for (int l = 0; l < m->n_layers; l++) {
    const core_layer *L = &m->layers[l];
    if (L->op == CORE_OP_OTHER && L->act_bytes > 0)
      return core_err_set(CORE_EINVAL,
          "%s:%d: layer '%s' has kind \"other\", which has no cost rule at %s: the generic rule counts its act_bytes "
          "as fp32 traffic; set its kind (conv, linear, attention, embedding, batch_norm, layer_norm, group_norm, "
          "activation, pooling, loss), or give every layer measured times (fwd_ms, bwd_ms)",
          m->path, L->line, L->name, sim_precision_name(p));
  }
  return 0;
}

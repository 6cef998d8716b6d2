#include "memfit.h"

#include "core/traced.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of one weight: pure fp16/bf16 models (model.half()) hold 2, the
 * others, autocast's included, fp32's 4. */
static double weight_bytes(enum sim_precision prec) {
  return prec == SIM_PREC_FP16 || prec == SIM_PREC_BF16 ? 2.0 : 4.0;
}

/* Activations' bytes per element: half width wherever the GEMMs run in
 * fp16 or bf16 (autocast's outputs of them included). */
static double act_bytes(enum sim_precision prec) { return prec == SIM_PREC_FP32 || prec == SIM_PREC_TF32 ? 4.0 : 2.0; }

/* torch.optim's state per parameter, in weights: momentum_buffer for SGD
 * with momentum, exp_avg and exp_avg_sq for Adam. */
static double optimizer_slots(enum sim_optimizer opt) {
  return opt == SIM_OPT_ADAM ? 2.0 : opt == SIM_OPT_SGD_MOMENTUM ? 1.0 : 0.0;
}

/* Temporaries of optimizer.step(), in weights: the foreach implementation
 * (torch.optim's default on CUDA) keeps Adam's sqrt(exp_avg_sq) of every
 * parameter at once ("~ sizeof(params) more peak memory", torch/optim/
 * optimizer.py, _foreach_doc; _multi_tensor_adam in torch/optim/adam.py);
 * SGD's updates are in place. */
static double step_temp_slots(enum sim_optimizer opt) { return opt == SIM_OPT_ADAM ? 1.0 : 0.0; }

/* A layer's activation bytes per sample at fp32 that take memory: none for
 * an in-place op, which writes over its input. */
static double layer_act(const core_layer *L) { return L->inplace ? 0.0 : L->act_bytes; }

/* What decides what a layer saves besides its output: the activations'
 * width against fp32's, the attention kernel asked for and the device. */
typedef struct saved_ctx {
  double scale;
  enum sim_attention attn;
  int cpu;
} saved_ctx;

/* Auto is PyTorch's choice in scaled_dot_product_attention: on a GPU a
 * fused kernel (flash for fp16 and bf16, memory-efficient for fp32, both
 * with dropout: use_flash_attention and use_mem_efficient_attention in
 * aten/src/ATen/native/transformers/cuda/sdp_utils.cpp); on a CPU the fused
 * flash kernel only without dropout (use_flash_attention_cpp's
 * check_for_dropout in aten/src/ATen/native/transformers/sdp_utils_cpp.cpp),
 * else the math kernel. https://pytorch.org/docs/stable/generated/
 * torch.nn.functional.scaled_dot_product_attention.html */
int sim_memfit_attention_math(const core_layer *L, enum sim_attention attn, int cpu) {
  if (attn != SIM_ATTN_AUTO)
    return attn == SIM_ATTN_MATH;
  return cpu && L->dropout > 0;
}

static int attention_math(const core_layer *L, const saved_ctx *c) {
  return sim_memfit_attention_math(L, c->attn, c->cpu);
}

/* Bytes per sample attention layer L saves for backward besides its
 * output and its inputs' (the projections'). Fused, the softmax's
 * log-sum-exp, fp32, a head and token. The math kernel
 * (_scaled_dot_product_attention_math, aten/src/ATen/native/transformers/
 * attention.cpp) computes in fp32 whatever the inputs' type (it upcasts
 * fp16 and bf16 unless torch.backends.cuda.
 * allow_fp16_bf16_reduction_math_sdp) and keeps its batched matmuls'
 * inputs: fp32 copies of the query, key and value, which replace the
 * projections' outputs as what is held (nothing else keeps those; more
 * only where they are half width), and, heads x seq_len^2 each, the
 * softmax's output and, with dropout, the dropped weights and what dropped
 * them: a bool mask on a GPU (native_dropout), a multiplier in the
 * weights' type on a CPU (aten/src/ATen/native/Dropout.cpp). */
static double attention_saved(const core_layer *L, const saved_ctx *c) {
  if (L->op != CORE_OP_ATTENTION || L->heads <= 0)
    return 0.0;
  double tokens = L->seq_len, heads = L->heads;
  if (!attention_math(L, c))
    return heads * tokens * 4.0;
  double scores = heads * tokens * tokens, drop = L->dropout > 0;
  return 3.0 * L->act_bytes * (1.0 - c->scale) + scores * (4.0 + drop * ((c->cpu ? 4.0 : 1.0) + 4.0));
}

/* Bytes per sample layer L holds from its forward to its backward. */
static double layer_saved(const core_layer *L, const saved_ctx *c) {
  return layer_act(L) * c->scale + attention_saved(L, c);
}

/* Bytes of the saved activations and gradients live together at the worst
 * point of backward, for batch samples. Autograd frees what a layer saved
 * once its backward has run, and each gradient appears when its layer's
 * backward runs (optimizer.zero_grad() sets them to None, PyTorch 2's
 * default), so while backward is at layer l the activations of layers
 * 0..l and the gradients of layers l..n-1 are held. */
static double backward_live(const core_model *m, const saved_ctx *c, double grad_bytes, int batch) {
  double acts = 0, grads = 0, worst = 0;
  for (int l = 0; l < m->n_layers; l++)
    acts += layer_saved(&m->layers[l], c) * batch;
  for (int l = m->n_layers - 1; l >= 0; l--) {
    const core_layer *L = &m->layers[l];
    for (int t = L->first_tensor; t < L->first_tensor + L->n_tensors; t++)
      grads += (double)m->tensor_elems[t] * grad_bytes;
    worst = fmax(worst, acts + grads);
    acts -= layer_saved(L, c) * batch;
  }
  return worst;
}

void sim_memfit_estimate(const core_model *m, enum sim_precision prec, int batch, enum sim_optimizer opt,
    int bucket_view, int ddp, sim_memfit *out) {
  sim_memfit_estimate_shard(m, prec, batch, opt, bucket_view, ddp, 1.0, SIM_ATTN_AUTO, 0, out);
}

void sim_memfit_estimate_shard(const core_model *m, enum sim_precision prec, int batch, enum sim_optimizer opt,
    int bucket_view, int ddp, double opt_share, enum sim_attention attn, int cpu, sim_memfit *out) {
  double n = (double)m->n_params, w = weight_bytes(prec), g = sim_precision_grad_bytes(prec);
  int amp = prec == SIM_PREC_AMP_FP16 || prec == SIM_PREC_AMP_BF16;
  memset(out, 0, sizeof *out);
  out->weights = n * w;
  out->grads = n * g;
  out->optimizer = n * opt_share * w * optimizer_slots(opt);
  out->buckets = ddp && !bucket_view ? n * g : 0.0;
  out->casts = amp ? n * 2.0 : 0.0;
  out->step_temps = n * opt_share * w * step_temp_slots(opt);
  saved_ctx c = {act_bytes(prec) / 4.0, attn, cpu};
  for (int l = 0; l < m->n_layers; l++) {
    out->attn_per_sample += attention_saved(&m->layers[l], &c);
    out->act_per_sample += layer_saved(&m->layers[l], &c);
  }
  out->activations = out->act_per_sample * batch;
  out->state = out->weights + out->grads + out->optimizer + out->buckets + out->casts;
  double held = out->weights + out->optimizer + out->buckets;
  /* With gradient_as_bucket_view the gradients are views of DDP's buckets,
   * which it allocates once: they are held all step. */
  int resident = ddp && bucket_view;
  double live = backward_live(m, &c, resident ? 0.0 : g, batch);
  out->backward_peak = held + out->casts + (resident ? out->grads : 0.0) + live;
  out->step_peak = held + out->grads + out->step_temps;
  out->total = fmax(out->backward_peak, out->step_peak);
  out->prec = prec;
  out->opt = opt;
  out->bucket_view = bucket_view;
  out->ddp = ddp;
  out->opt_share = opt_share;
  out->attention = attn;
  out->cpu = cpu;
}

static int by_size_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x < y) - (x > y);
}

double sim_memfit_zero_share(const core_model *m, int world) {
  int n = m->n_tensors, ranks = world < n ? world : n; /* ranks past the n-th get no tensor */
  if (world <= 1 || n <= 0)
    return 1.0;
  int64_t *el = malloc(sizeof *el * (size_t)n), *sizes = calloc((size_t)ranks, sizeof *sizes), total = 0, most = 0;
  if (!el || !sizes) { /* out of memory: no sharding, an estimate on the safe side */
    free(el);
    free(sizes);
    return 1.0;
  }
  memcpy(el, m->tensor_elems, sizeof *el * (size_t)n);
  qsort(el, (size_t)n, sizeof *el, by_size_desc);
  for (int t = 0; t < n; t++) {
    int r = 0;
    for (int k = 1; k < ranks; k++)
      if (sizes[k] < sizes[r])
        r = k;
    sizes[r] += el[t];
    total += el[t];
  }
  for (int k = 0; k < ranks; k++)
    if (sizes[k] > most)
      most = sizes[k];
  free(el);
  free(sizes);
  return total > 0 ? (double)most / (double)total : 1.0;
}

void sim_memfit_point(const sim_scenario *s, const sim_point *p, sim_memfit *out) {
  int ddp = !p->model->traced || p->model->traced->ddp;
  double share = s->zero_optimizer ? sim_memfit_zero_share(p->model, p->nodes * p->per_node) : 1.0;
  int cpu = strcmp(s->profile->device_kind, "cpu") == 0;
  sim_memfit_estimate_shard(
      p->model, p->precision, p->batch, s->optimizer, s->gradient_as_bucket_view, ddp, share, s->attention, cpu, out);
}

int sim_memfit_over(const sim_memfit *f, const core_profile *pr) {
  return pr->memory_GB > 0 && f->total > pr->memory_GB * 1e9;
}

/* The largest batch below f's whose estimate is within cap bytes (the
 * estimate grows with the batch); 0 when not even one sample is. */
static int largest_batch(const sim_memfit *f, const core_model *m, int batch, double cap) {
  int lo = 0, hi = batch; /* lo fits (0: nothing yet), hi does not */
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    sim_memfit g;
    sim_memfit_estimate_shard(m, f->prec, mid, f->opt, f->bucket_view, f->ddp, f->opt_share, f->attention, f->cpu, &g);
    if (g.total > cap)
      hi = mid;
    else
      lo = mid;
  }
  return lo;
}

/* "; or shard the optimizer state (...)" where ZeroRedundancyOptimizer would
 * hold less of it than f does: an optimizer with state, on several ranks,
 * not sharded already; else "". */
static void zero_hint(const sim_memfit *f, const sim_point *p, char *buf, size_t n) {
  int world = p->nodes * p->per_node;
  double share = optimizer_slots(f->opt) > 0 ? sim_memfit_zero_share(p->model, world) : 1.0;
  if (share >= f->opt_share)
    return;
  sim_memfit z;
  sim_memfit_estimate_shard(
      p->model, f->prec, p->batch, f->opt, f->bucket_view, f->ddp, share, f->attention, f->cpu, &z);
  snprintf(buf, n, "; or shard the optimizer state across the %d ranks (ddp.zero_optimizer = true: about %.3g GB)",
      world, z.total / 1e9);
}

void sim_memfit_note(const sim_memfit *f, const core_profile *pr, const sim_point *p, char *buf, size_t n) {
  double cap = pr->memory_GB * 1e9;
  int k = snprintf(buf, n,
      "point %ld (model %s, %s, batch %d) needs about %.3g GB per GPU at its peak (model state %.3g, activations "
      "%.3g, not all held at once), more than the profile's %.4g GB (device.memory_GB): ",
      p->index, p->model->name, sim_precision_name(p->precision), p->batch, f->total / 1e9, f->state / 1e9,
      f->activations / 1e9, pr->memory_GB);
  if (k < 0 || (size_t)k >= n)
    return;
  buf += k;
  n -= (size_t)k;
  sim_memfit none;
  sim_memfit_estimate_shard(
      p->model, f->prec, 0, f->opt, f->bucket_view, f->ddp, f->opt_share, f->attention, f->cpu, &none);
  int fit = none.total > cap ? -1 : largest_batch(f, p->model, p->batch, cap);
  int half = p->precision == SIM_PREC_FP32 || p->precision == SIM_PREC_TF32;
  if (fit < 0)
    k = snprintf(
        buf, n, "the model state alone does not fit; use GPUs with more memory or an optimizer with less state");
  else if (fit >= 1)
    k = snprintf(buf, n, "lower the batch to %d or less%s, or use GPUs with more memory", fit,
        half ? ", train under autocast (amp_bf16, amp_fp16: half-width activations)" : "");
  else
    k = snprintf(buf, n, "not even one sample fits; use GPUs with more memory");
  if (k >= 0 && (size_t)k < n)
    zero_hint(f, p, buf + k, n - (size_t)k);
}

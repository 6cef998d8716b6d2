#include "memfit.h"

#include "core/traced.h"

#include <math.h>
#include <stdio.h>
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

void sim_memfit_estimate(const core_model *m, enum sim_precision prec, int batch, enum sim_optimizer opt,
    int bucket_view, int ddp, sim_memfit *out) {
  double n = (double)m->n_params, w = weight_bytes(prec), g = sim_precision_grad_bytes(prec);
  int amp = prec == SIM_PREC_AMP_FP16 || prec == SIM_PREC_AMP_BF16;
  memset(out, 0, sizeof *out);
  out->weights = n * w;
  out->grads = n * g;
  out->optimizer = n * w * optimizer_slots(opt);
  out->buckets = ddp && !bucket_view ? n * g : 0.0;
  out->casts = amp ? n * 2.0 : 0.0;
  for (int l = 0; l < m->n_layers; l++)
    out->act_per_sample += m->layers[l].act_bytes;
  out->act_per_sample *= act_bytes(prec) / 4.0;
  out->activations = out->act_per_sample * batch;
  out->state = out->weights + out->grads + out->optimizer + out->buckets + out->casts;
  out->total = out->state + out->activations;
}

void sim_memfit_point(const sim_scenario *s, const sim_point *p, sim_memfit *out) {
  int ddp = !p->model->traced || p->model->traced->ddp;
  sim_memfit_estimate(p->model, p->precision, p->batch, s->optimizer, s->gradient_as_bucket_view, ddp, out);
}

int sim_memfit_over(const sim_memfit *f, const core_profile *pr) {
  return pr->memory_GB > 0 && f->total > pr->memory_GB * 1e9;
}

void sim_memfit_note(const sim_memfit *f, const core_profile *pr, const sim_point *p, char *buf, size_t n) {
  double cap = pr->memory_GB * 1e9;
  int k = snprintf(buf, n,
      "point %ld (model %s, %s, batch %d) needs about %.3g GB per GPU (model state %.3g, activations %.3g), more than "
      "the profile's %.4g GB (device.memory_GB): ",
      p->index, p->model->name, sim_precision_name(p->precision), p->batch, f->total / 1e9, f->state / 1e9,
      f->activations / 1e9, pr->memory_GB);
  if (k < 0 || (size_t)k >= n)
    return;
  buf += k;
  n -= (size_t)k;
  if (f->state >= cap) {
    snprintf(buf, n, "the model state alone does not fit; use GPUs with more memory or an optimizer with less state");
    return;
  }
  double fit = f->act_per_sample > 0 ? floor((cap - f->state) / f->act_per_sample) : 0;
  int half = p->precision == SIM_PREC_FP32 || p->precision == SIM_PREC_TF32;
  if (fit >= 1)
    snprintf(buf, n, "lower the batch to %.0f or less%s, or use GPUs with more memory", fit,
        half ? ", train under autocast (amp_bf16, amp_fp16: half-width activations)" : "");
  else
    snprintf(buf, n, "not even one sample fits; use GPUs with more memory");
}

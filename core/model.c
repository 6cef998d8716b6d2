#include "model.h"

#include "cfg.h"
#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest layer dimensions and counts we accept; far above any real model but
 * small enough that products cannot overflow. */
enum { MODEL_MAX_LAYERS = 100000, MODEL_MAX_TENSORS = 1000000 };
#define MODEL_MAX_DIM 1000000LL
#define MODEL_MAX_ELEMS 1e13

static const char *const model_keys[] = {"name", "source", "loss", "sample", "layers",
                                         "measured_batch", "seq_len", "image", "psgd_sync_us",
                                         NULL};
static const char *const layer_keys[] = {"name", "type", "in", "out", "activation", "params", "rows",
                                         "fwd_flops", "bwd_flops", "act_bytes", "fwd_ms",
                                         "bwd_ms", NULL};
static const char *const layer_types[] = {"generic", "linear", NULL};
static const char *const activations[] = {"none", "relu", NULL};
static const char *const losses[] = {"mse", "none", NULL};

void core_model_free(core_model *m) {
  if (!m)
    return;
  free(m->layers);
  free(m->tensor_elems);
  free(m->tensor_rows);
  free(m->tensor_layer);
  free(m);
}

static int count_tensors(const config_setting_t *layers, int *total) {
  char w[4200];
  *total = 0;
  for (int i = 0; i < config_setting_length(layers); i++) {
    const config_setting_t *l = config_setting_get_elem(layers, (unsigned)i);
    const config_setting_t *p = config_setting_get_member(l, "params");
    const char *type = "generic";
    config_setting_lookup_string(l, "type", &type);
    int n;
    if (strcmp(type, "linear") == 0)
      n = 2;
    else if (p && config_setting_is_array(p))
      n = config_setting_length(p);
    else
      n = 0; /* reported with its line by the layer parser */
    if (*total > MODEL_MAX_TENSORS - n)
      return core_err_set(CORE_EINVAL, "%s: more than %d parameter tensors; split the model or merge tensors",
                          core_cfg_where(l, w, sizeof w), MODEL_MAX_TENSORS);
    *total += n;
  }
  return 0;
}

static int parse_layer(const config_setting_t *l, core_model *m, int idx, int *tensor_pos) {
  char w[4200];
  core_layer *L = &m->layers[idx];
  int rc;
  const char *s;
  if ((rc = core_cfg_check_keys(l, layer_keys, "a model layer")) != 0)
    return rc;
  if ((rc = core_cfg_string(l, "name", 1, NULL, NULL, &s)) != 0)
    return rc;
  snprintf(L->name, sizeof L->name, "%s", s);
  if ((rc = core_cfg_string(l, "type", 0, "generic", layer_types, &s)) != 0)
    return rc;
  L->kind = strcmp(s, "linear") == 0 ? CORE_LAYER_LINEAR : CORE_LAYER_GENERIC;
  L->first_tensor = *tensor_pos;
  L->fwd_s = L->bwd_s = -1.0;

  if (L->kind == CORE_LAYER_LINEAR) {
    long long in, out;
    if ((rc = core_cfg_int(l, "in", 1, 0, 1, MODEL_MAX_DIM, &in)) != 0 ||
        (rc = core_cfg_int(l, "out", 1, 0, 1, MODEL_MAX_DIM, &out)) != 0)
      return rc;
    if (config_setting_get_member(l, "params"))
      return core_err_set(CORE_EINVAL, "%s: layer '%s' is linear, so its params follow from in and out; remove 'params'",
                          core_cfg_where(config_setting_get_member(l, "params"), w, sizeof w), L->name);
    if ((rc = core_cfg_string(l, "activation", 0, "none", activations, &s)) != 0)
      return rc;
    L->act = strcmp(s, "relu") == 0 ? CORE_ACT_RELU : CORE_ACT_NONE;
    L->in = (int)in;
    L->out = (int)out;
    m->tensor_elems[*tensor_pos] = in * out;
    m->tensor_elems[*tensor_pos + 1] = out;
    m->tensor_rows[*tensor_pos] = out; /* nn.Linear weight is [out, in] */
    m->tensor_rows[*tensor_pos + 1] = out;
    if (config_setting_get_member(l, "rows"))
      return core_err_set(CORE_EINVAL, "%s: layer '%s' is linear, so its shapes follow from in and out; remove 'rows'",
                          core_cfg_where(config_setting_get_member(l, "rows"), w, sizeof w), L->name);
    m->tensor_layer[*tensor_pos] = m->tensor_layer[*tensor_pos + 1] = idx;
    L->n_tensors = 2;
    *tensor_pos += 2;
    /* 2 FLOPs per multiply-add; bias and activation are negligible. */
    double def_fwd = 2.0 * (double)in * (double)out;
    if ((rc = core_cfg_double(l, "fwd_flops", 0, def_fwd, 0, 1e18, &L->fwd_flops)) != 0)
      return rc;
    if ((rc = core_cfg_double(l, "act_bytes", 0, 4.0 * (double)out, 0, 1e15, &L->act_bytes)) != 0)
      return rc;
  } else {
    const config_setting_t *p;
    if ((rc = core_cfg_double(l, "fwd_flops", 1, 0, 0, 1e18, &L->fwd_flops)) != 0)
      return rc;
    if ((rc = core_cfg_double(l, "act_bytes", 0, 0, 0, 1e15, &L->act_bytes)) != 0)
      return rc;
    if (config_setting_get_member(l, "activation") || config_setting_get_member(l, "in") ||
        config_setting_get_member(l, "out"))
      return core_err_set(CORE_EINVAL, "%s: layer '%s': in, out and activation belong to type = \"linear\" layers; list params and fwd_flops instead",
                          core_cfg_where(l, w, sizeof w), L->name);
    p = config_setting_get_member(l, "params");
    if (p && !config_setting_is_array(p))
      return core_err_set(CORE_EINVAL, "%s: 'params' must be an array of tensor sizes, e.g. params = [4096, 64];",
                          core_cfg_where(p, w, sizeof w));
    L->n_tensors = p ? config_setting_length(p) : 0;
    for (int i = 0; i < L->n_tensors; i++) {
      const config_setting_t *e = config_setting_get_elem(p, (unsigned)i);
      double v;
      switch (config_setting_type(e)) {
      case CONFIG_TYPE_INT: v = config_setting_get_int(e); break;
      case CONFIG_TYPE_INT64: v = (double)config_setting_get_int64(e); break;
      case CONFIG_TYPE_FLOAT: v = config_setting_get_float(e); break;
      default: v = -1;
      }
      if (!(v >= 1 && v <= MODEL_MAX_ELEMS) || v != (double)(int64_t)v)
        return core_err_set(CORE_EINVAL, "%s: layer '%s' params[%d]: expected a whole number of elements in [1, %g]",
                            core_cfg_where(p, w, sizeof w), L->name, i, MODEL_MAX_ELEMS);
      m->tensor_elems[*tensor_pos] = (int64_t)v;
      m->tensor_rows[*tensor_pos] = (int64_t)v;
      m->tensor_layer[*tensor_pos] = idx;
      (*tensor_pos)++;
    }
    const config_setting_t *rows = config_setting_get_member(l, "rows");
    if (rows) {
      if (!config_setting_is_array(rows) || config_setting_length(rows) != L->n_tensors)
        return core_err_set(CORE_EINVAL, "%s: layer '%s': 'rows' must be an array with one first dimension per tensor of params (%d)",
                            core_cfg_where(rows, w, sizeof w), L->name, L->n_tensors);
      for (int i = 0; i < L->n_tensors; i++) {
        const config_setting_t *e = config_setting_get_elem(rows, (unsigned)i);
        int64_t el = m->tensor_elems[L->first_tensor + i], r;
        switch (config_setting_type(e)) {
        case CONFIG_TYPE_INT: r = config_setting_get_int(e); break;
        case CONFIG_TYPE_INT64: r = config_setting_get_int64(e); break;
        default: r = 0;
        }
        if (r < 1 || el % r != 0)
          return core_err_set(CORE_EINVAL, "%s: layer '%s' rows[%d]: expected a whole number that divides the tensor's %lld elements (its first dimension)",
                              core_cfg_where(rows, w, sizeof w), L->name, i, (long long)el);
        m->tensor_rows[L->first_tensor + i] = r;
      }
    }
  }
  /* Backward costs about twice the forward: one GEMM for the input gradient,
   * one for the weight gradient (Kaplan et al. 2020, "Scaling Laws for Neural
   * Language Models", sec. 2.1: C ~ 6N per token, 2N forward + 4N backward).
   * The first layer's input is data, which needs no gradient, and autograd
   * skips it: only the weight gradient remains. */
  double def_bwd = (idx == 0 ? 1.0 : 2.0) * L->fwd_flops;
  if ((rc = core_cfg_double(l, "bwd_flops", 0, def_bwd, 0, 1e18, &L->bwd_flops)) != 0)
    return rc;
  double fwd_ms, bwd_ms;
  int has_f = config_setting_get_member(l, "fwd_ms") != NULL;
  int has_b = config_setting_get_member(l, "bwd_ms") != NULL;
  if (has_f != has_b)
    return core_err_set(CORE_EINVAL, "%s: layer '%s' has only one of fwd_ms and bwd_ms; give both or neither",
                        core_cfg_where(l, w, sizeof w), L->name);
  if (has_f) {
    if ((rc = core_cfg_double(l, "fwd_ms", 1, 0, 0, 1e7, &fwd_ms)) != 0 ||
        (rc = core_cfg_double(l, "bwd_ms", 1, 0, 0, 1e7, &bwd_ms)) != 0)
      return rc;
    L->fwd_s = fwd_ms * 1e-3;
    L->bwd_s = bwd_ms * 1e-3;
  }
  return 0;
}

int core_model_from_setting(const config_setting_t *root, const char *path, core_model **out) {
  char w[4200];
  const config_setting_t *g, *layers;
  const char *s;
  int rc, total;
  *out = NULL;
  static const char *const top_keys[] = {"model", NULL};
  if ((rc = core_cfg_check_keys(root, top_keys, "a model file")) != 0)
    return rc;
  if ((rc = core_cfg_group(root, "model", 1, &g)) != 0)
    return rc;
  if ((rc = core_cfg_check_keys(g, model_keys, "model")) != 0)
    return rc;
  if ((rc = core_cfg_list(g, "layers", 1, &layers)) != 0)
    return rc;
  if (config_setting_length(layers) > MODEL_MAX_LAYERS)
    return core_err_set(CORE_EINVAL, "%s: more than %d layers", core_cfg_where(layers, w, sizeof w), MODEL_MAX_LAYERS);
  if ((rc = count_tensors(layers, &total)) != 0)
    return rc;

  core_model *m = calloc(1, sizeof *m);
  if (!m)
    return core_err_set(CORE_ENOMEM, "out of memory loading model %s", path);
  m->n_layers = config_setting_length(layers);
  m->layers = calloc((size_t)m->n_layers, sizeof *m->layers);
  m->tensor_elems = calloc((size_t)(total ? total : 1), sizeof *m->tensor_elems);
  m->tensor_rows = calloc((size_t)(total ? total : 1), sizeof *m->tensor_rows);
  m->tensor_layer = calloc((size_t)(total ? total : 1), sizeof *m->tensor_layer);
  if (!m->layers || !m->tensor_elems || !m->tensor_rows || !m->tensor_layer) {
    rc = core_err_set(CORE_ENOMEM, "out of memory loading model %s", path);
    goto fail_free;
  }
  snprintf(m->path, sizeof m->path, "%s", path);
  if ((rc = core_cfg_string(g, "name", 1, NULL, NULL, &s)) != 0)
    goto fail_free;
  if (strlen(s) >= sizeof m->name ||
      strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") != strlen(s)) {
    rc = core_err_set(CORE_EINVAL, "%s: model name \"%s\" must be at most %zu letters, digits and . _ + - (it labels CSV rows and plots)",
                      core_cfg_where(config_setting_get_member(g, "name"), w, sizeof w), s, sizeof m->name - 1);
    goto fail_free;
  }
  snprintf(m->name, sizeof m->name, "%s", s);
  if ((rc = core_cfg_string(g, "source", 0, "", NULL, &s)) != 0)
    goto fail_free;
  snprintf(m->source, sizeof m->source, "%s", s ? s : "");
  if ((rc = core_cfg_string(g, "loss", 0, "mse", losses, &s)) != 0)
    goto fail_free;
  snprintf(m->loss, sizeof m->loss, "%s", s);
  if ((rc = core_cfg_string(g, "sample", 0, "", NULL, &s)) != 0)
    goto fail_free;
  long long dummy;
  if ((rc = core_cfg_int(g, "seq_len", 0, 0, 1, 10000000, &dummy)) != 0)
    goto fail_free;
  if (config_setting_get_member(g, "image") &&
      (rc = core_cfg_string(g, "image", 0, "", NULL, &s)) != 0)
    goto fail_free;

  int pos = 0;
  for (int i = 0; i < m->n_layers; i++) {
    const config_setting_t *l = config_setting_get_elem(layers, (unsigned)i);
    if ((rc = parse_layer(l, m, i, &pos)) != 0)
      goto fail_free;
    for (int j = 0; j < i; j++)
      if (strcmp(m->layers[j].name, m->layers[i].name) == 0) {
        rc = core_err_set(CORE_EINVAL, "%s: layer name '%s' is used twice; layer names must be unique",
                          core_cfg_where(l, w, sizeof w), m->layers[i].name);
        goto fail_free;
      }
    m->fwd_flops += m->layers[i].fwd_flops;
    m->bwd_flops += m->layers[i].bwd_flops;
  }
  m->n_tensors = pos;
  if (m->n_tensors == 0) {
    rc = core_err_set(CORE_EINVAL, "%s: model '%s' has no parameters; data-parallel training has nothing to synchronize",
                      core_cfg_where(layers, w, sizeof w), m->name);
    goto fail_free;
  }
  for (int t = 0; t < m->n_tensors; t++)
    m->n_params += m->tensor_elems[t];

  int n_measured = 0;
  for (int i = 0; i < m->n_layers; i++)
    n_measured += m->layers[i].fwd_s >= 0;
  if (n_measured != 0 && n_measured != m->n_layers) {
    rc = core_err_set(CORE_EINVAL, "%s: %d of %d layers have measured times (fwd_ms/bwd_ms); give them for every layer or none",
                      core_cfg_where(layers, w, sizeof w), n_measured, m->n_layers);
    goto fail_free;
  }
  m->measured = n_measured == m->n_layers;
  if ((rc = core_cfg_double(g, "measured_batch", m->measured, 0, 1, 1e9, &m->measured_batch)) != 0)
    goto fail_free;
  if (!m->measured && config_setting_get_member(g, "measured_batch")) {
    rc = core_err_set(CORE_EINVAL, "%s: measured_batch is set but no layer has fwd_ms/bwd_ms",
                      core_cfg_where(config_setting_get_member(g, "measured_batch"), w, sizeof w));
    goto fail_free;
  }
  /* An hour of waiting per allreduce is no measurement. */
  if ((rc = core_cfg_double(g, "psgd_sync_us", 0, -1, 0, 3.6e9, &m->psgd_sync_us)) != 0)
    goto fail_free;
  *out = m;
  return 0;
fail_free:
  core_model_free(m);
  return rc;
}

int core_model_load(const char *path, core_model **out) {
  core_cfg c;
  int rc = core_cfg_load(&c, path, "model");
  if (rc)
    return rc;
  rc = core_model_from_setting(core_cfg_root(&c), path, out);
  core_cfg_free(&c);
  return rc;
}

int core_model_check_runnable(const core_model *m) {
  for (int i = 0; i < m->n_layers; i++) {
    const core_layer *L = &m->layers[i];
    if (L->kind != CORE_LAYER_LINEAR)
      return core_err_set(CORE_EINVAL, "%s: layer '%s' is not type = \"linear\"; the CPU runtime trains stacks of linear layers only (use it for simulation, or pick the MLP model)",
                          m->path, L->name);
    if (i > 0 && m->layers[i - 1].out != L->in)
      return core_err_set(CORE_EINVAL, "%s: layer '%s' takes in = %d but the previous layer gives out = %d; make them match",
                          m->path, L->name, L->in, m->layers[i - 1].out);
  }
  return 0;
}

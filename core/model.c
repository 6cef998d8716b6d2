#include "model.h"

#include "cfg.h"
#include "err.h"
#include "traced.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest layer dimensions and counts we accept; far above any real model but
 * small enough that products cannot overflow. */
enum { MODEL_MAX_LAYERS = 100000, MODEL_MAX_TENSORS = 1000000 };
#define MODEL_MAX_DIM 1000000LL
#define MODEL_MAX_ELEMS 1e13

static const char *const model_keys[] = {"name", "source", "loss", "sample", "layers", "measured_batch", "seq_len",
    "image", "psgd_sync_us", "ready_order", "traced", NULL};
static const char *const layer_keys[] = {"name", "type", "kind", "in", "out", "activation", "params", "param_names",
    "rows", "fwd_flops", "bwd_flops", "act_bytes", "fwd_ms", "bwd_ms", "inputs", "in_bytes", "inplace", "heads",
    "seq_len", "dropout", NULL};
static const char *const layer_types[] = {"generic", "linear", NULL};
/* In enum core_op's order. */
static const char *const op_names[] = {"other", "conv", "batch_norm", "layer_norm", "group_norm", "linear", "embedding",
    "attention", "activation", "pooling", "loss", NULL};
static const char *const activations[] = {"none", "relu", NULL};
static const char *const losses[] = {"mse", "none", NULL};

const char *core_op_name(enum core_op op) { return (unsigned)op < CORE_N_OPS ? op_names[op] : "?"; }

void core_model_free(core_model *m) {
  if (!m)
    return;
  free(m->layers);
  free(m->tensor_elems);
  free(m->tensor_rows);
  free(m->tensor_layer);
  free(m->tensor_pname);
  free(m->ready_order);
  free(m->inputs);
  core_traced_free(m->traced);
  free(m);
}

/* Tensors of all layers; *named: some layer has param_names. */
static int count_tensors(const config_setting_t *layers, int *total, int *named) {
  char w[4200];
  *total = 0;
  *named = 0;
  for (int i = 0; i < config_setting_length(layers); i++) {
    const config_setting_t *l = config_setting_get_elem(layers, (unsigned)i);
    const config_setting_t *p = core_cfg_member(l, "params");
    const config_setting_t *ts = core_cfg_member(l, "type");
    const char *type = ts && config_setting_type(ts) == CONFIG_TYPE_STRING ? config_setting_get_string(ts) : "generic";
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
    *named |= core_cfg_member(l, "param_names") != NULL;
  }
  return 0;
}

/* type = "linear": tensors and FLOPs follow from in and out. */
static int parse_linear(const config_setting_t *l, core_model *m, core_layer *L, int idx, int *tensor_pos) {
  char w[4200];
  int rc;
  const char *s;
  long long in, out;
  if ((rc = core_cfg_int(l, "in", 1, 0, 1, MODEL_MAX_DIM, &in)) != 0 ||
      (rc = core_cfg_int(l, "out", 1, 0, 1, MODEL_MAX_DIM, &out)) != 0)
    return rc;
  static const char *const derived[] = {"params", "rows", "param_names"};
  for (int k = 0; k < 3; k++)
    if (core_cfg_member(l, derived[k]))
      return core_err_set(CORE_EINVAL, "%s: layer '%s' is linear, so its %s follow from in and out; remove '%s'",
          core_cfg_where(core_cfg_member(l, derived[k]), w, sizeof w), L->name,
          k == 2 ? "tensors' names (weight, bias)"
          : k    ? "shapes"
                 : "params",
          derived[k]);
  if (L->op != CORE_OP_LINEAR)
    return core_err_set(CORE_EINVAL,
        "%s: layer '%s' is type = \"linear\", so its kind is \"linear\"; remove kind = \"%s\"",
        core_cfg_where(core_cfg_member(l, "kind"), w, sizeof w), L->name, core_op_name(L->op));
  if ((rc = core_cfg_string(l, "activation", 0, "none", activations, &s)) != 0)
    return rc;
  L->act = strcmp(s, "relu") == 0 ? CORE_ACT_RELU : CORE_ACT_NONE;
  L->in = (int)in;
  L->out = (int)out;
  m->tensor_elems[*tensor_pos] = in * out;
  m->tensor_elems[*tensor_pos + 1] = out;
  m->tensor_rows[*tensor_pos] = out; /* nn.Linear weight is [out, in] */
  m->tensor_rows[*tensor_pos + 1] = out;
  m->tensor_layer[*tensor_pos] = m->tensor_layer[*tensor_pos + 1] = idx;
  L->n_tensors = 2;
  *tensor_pos += 2;
  /* 2 FLOPs per multiply-add; bias and activation are negligible. */
  double def_fwd = 2.0 * (double)in * (double)out;
  if ((rc = core_cfg_double(l, "fwd_flops", 0, def_fwd, 0, 1e18, &L->fwd_flops)) != 0)
    return rc;
  return core_cfg_double(l, "act_bytes", 0, 4.0 * (double)out, 0, 1e15, &L->act_bytes);
}

static int parse_rows(const config_setting_t *l, core_model *m, core_layer *L) {
  char w[4200];
  const config_setting_t *rows = core_cfg_member(l, "rows");
  if (!rows)
    return 0;
  if (!config_setting_is_array(rows) || config_setting_length(rows) != L->n_tensors)
    return core_err_set(CORE_EINVAL,
        "%s: layer '%s': 'rows' must be an array with one first dimension per tensor of params (%d)",
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
      return core_err_set(CORE_EINVAL,
          "%s: layer '%s' rows[%d]: expected a whole number that divides the tensor's %lld elements (its first "
          "dimension)",
          core_cfg_where(rows, w, sizeof w), L->name, i, (long long)el);
    m->tensor_rows[L->first_tensor + i] = r;
  }
  return 0;
}

/* param_names: one name per tensor, each fit to follow "<layer>." in a
 * space-separated list (`ddpsim model`). */
static int parse_pnames(const config_setting_t *l, core_model *m, core_layer *L) {
  char w[4200];
  const config_setting_t *pn = core_cfg_member(l, "param_names");
  if (!pn)
    return 0;
  if (!config_setting_is_array(pn) || config_setting_length(pn) != L->n_tensors)
    return core_err_set(CORE_EINVAL,
        "%s: layer '%s': 'param_names' must be an array with one name per tensor of params (%d), e.g. param_names = "
        "[\"bias\"];",
        core_cfg_where(pn, w, sizeof w), L->name, L->n_tensors);
  for (int i = 0; i < L->n_tensors; i++) {
    const char *s = config_setting_get_string_elem(pn, (unsigned)i);
    size_t len = s ? strlen(s) : 0;
    if (!s || len == 0 || len >= CORE_PNAME_MAX ||
        strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") != len)
      return core_err_set(CORE_EINVAL,
          "%s: layer '%s' param_names[%d]: expected a name of 1 to %d letters, digits, _ and . (PyTorch's, e.g. "
          "\"bias\")",
          core_cfg_where(pn, w, sizeof w), L->name, i, CORE_PNAME_MAX - 1);
    for (int j = 0; j < i; j++)
      if (strcmp(m->tensor_pname[L->first_tensor + j], s) == 0)
        return core_err_set(CORE_EINVAL, "%s: layer '%s' names two tensors '%s'; param_names must differ",
            core_cfg_where(pn, w, sizeof w), L->name, s);
    snprintf(m->tensor_pname[L->first_tensor + i], CORE_PNAME_MAX, "%s", s);
  }
  return 0;
}

/* Any other layer: it lists its tensors and FLOPs. */
static int parse_generic(const config_setting_t *l, core_model *m, core_layer *L, int idx, int *tensor_pos) {
  char w[4200];
  int rc;
  const config_setting_t *p;
  if ((rc = core_cfg_double(l, "fwd_flops", 1, 0, 0, 1e18, &L->fwd_flops)) != 0)
    return rc;
  if ((rc = core_cfg_double(l, "act_bytes", 0, 0, 0, 1e15, &L->act_bytes)) != 0)
    return rc;
  if (core_cfg_member(l, "activation") || core_cfg_member(l, "in") || core_cfg_member(l, "out"))
    return core_err_set(CORE_EINVAL,
        "%s: layer '%s': in, out and activation belong to type = \"linear\" layers; list params and fwd_flops instead",
        core_cfg_where(l, w, sizeof w), L->name);
  p = core_cfg_member(l, "params");
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
  if ((rc = parse_rows(l, m, L)) != 0)
    return rc;
  return parse_pnames(l, m, L);
}

/* bwd_flops and the measured times, for every type. */
static int parse_costs(const config_setting_t *l, core_layer *L, int idx) {
  char w[4200];
  int rc;
  /* Backward costs about twice the forward: one GEMM for the input gradient,
   * one for the weight gradient (Kaplan et al. 2020, "Scaling Laws for Neural
   * Language Models", sec. 2.1: C ~ 6N per token, 2N forward + 4N backward).
   * The first layer's input is data, which needs no gradient, and autograd
   * skips it: only the weight gradient remains. */
  double def_bwd = (idx == 0 ? 1.0 : 2.0) * L->fwd_flops;
  if ((rc = core_cfg_double(l, "bwd_flops", 0, def_bwd, 0, 1e18, &L->bwd_flops)) != 0)
    return rc;
  double fwd_ms, bwd_ms;
  int has_f = core_cfg_member(l, "fwd_ms") != NULL;
  int has_b = core_cfg_member(l, "bwd_ms") != NULL;
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

/* inputs: names of earlier layers (default the one before); in_bytes. */
static int parse_inputs(const config_setting_t *l, core_model *m, int idx, int *n_used) {
  char w[4200];
  core_layer *L = &m->layers[idx];
  const config_setting_t *in = core_cfg_member(l, "inputs");
  int n = in ? (config_setting_is_array(in) ? config_setting_length(in) : 1) : idx > 0;
  int *more = realloc(m->inputs, sizeof *more * (size_t)(*n_used + n + 1));
  if (!more)
    return core_err_set(CORE_ENOMEM, "out of memory reading %s's inputs", m->path);
  m->inputs = more;
  L->first_input = *n_used;
  L->n_inputs = n;
  for (int k = 0; k < n; k++) {
    const char *s = !in                           ? NULL
                    : config_setting_is_array(in) ? config_setting_get_string_elem(in, (unsigned)k)
                                                  : config_setting_get_string(in);
    /* Backwards: a layer's inputs are mostly the layers just before it. */
    int j = in ? -1 : idx - 1;
    for (int q = idx - 1; s && q >= 0 && j < 0; q--)
      if (!strcmp(m->layers[q].name, s))
        j = q;
    if (j < 0)
      return core_err_set(CORE_EINVAL,
          "%s: layer '%s' inputs[%d]: expected the name of a layer listed before it (%s%s%s); list layers in the order "
          "they run",
          core_cfg_where(in, w, sizeof w), L->name, k, s ? "no earlier layer is named '" : "not a name", s ? s : "",
          s ? "'" : "");
    m->inputs[(*n_used)++] = j;
  }
  double def = L->kind == CORE_LAYER_LINEAR && n == 0 ? 4.0 * L->in : 0;
  return core_cfg_double(l, "in_bytes", 0, def, 0, 1e15, &L->in_bytes);
}

/* An attention layer's heads, seq_len and dropout (see model.h); refused on
 * any other kind. */
static int parse_attention(const config_setting_t *l, const core_model *m, core_layer *L) {
  static const char *const keys[] = {"heads", "seq_len", "dropout", NULL};
  char w[4200];
  long long v;
  int rc;
  for (int k = 0; keys[k] && L->op != CORE_OP_ATTENTION; k++)
    if (core_cfg_member(l, keys[k]))
      return core_err_set(CORE_EINVAL, "%s: layer '%s': %s belongs to kind = \"attention\" layers; remove it",
          core_cfg_where(core_cfg_member(l, keys[k]), w, sizeof w), L->name, keys[k]);
  if ((rc = core_cfg_int(l, "heads", 0, 0, 1, 1000000, &v)) != 0)
    return rc;
  L->heads = (int)v;
  if ((rc = core_cfg_int(l, "seq_len", 0, m->seq_len, 1, 10000000, &v)) != 0)
    return rc;
  L->seq_len = (int)v;
  if ((rc = core_cfg_double(l, "dropout", 0, 0, 0, 1, &L->dropout)) != 0)
    return rc;
  if (L->dropout >= 1)
    return core_err_set(CORE_EINVAL, "%s: layer '%s': dropout is a probability below 1 (1 would drop every weight)",
        core_cfg_where(config_setting_get_member(l, "dropout"), w, sizeof w), L->name);
  if (L->heads > 0 && L->seq_len == 0)
    return core_err_set(CORE_EINVAL,
        "%s: layer '%s' gives heads but neither it nor the model gives seq_len (tokens a sample); give one",
        core_cfg_where(l, w, sizeof w), L->name);
  return 0;
}

static int parse_layer(const config_setting_t *l, core_model *m, int idx, int *tensor_pos) {
  core_layer *L = &m->layers[idx];
  int rc;
  const char *s;
  if ((rc = core_cfg_check_keys(l, layer_keys, "a model layer")) != 0)
    return rc;
  if ((rc = core_cfg_string(l, "name", 1, NULL, NULL, &s)) != 0)
    return rc;
  snprintf(L->name, sizeof L->name, "%s", s);
  L->line = config_setting_source_line(l);
  if ((rc = core_cfg_string(l, "type", 0, "generic", layer_types, &s)) != 0)
    return rc;
  L->kind = strcmp(s, "linear") == 0 ? CORE_LAYER_LINEAR : CORE_LAYER_GENERIC;
  if ((rc = core_cfg_string(l, "kind", 0, L->kind == CORE_LAYER_LINEAR ? "linear" : "other", op_names, &s)) != 0)
    return rc;
  for (int k = 0; k < CORE_N_OPS; k++)
    if (strcmp(s, op_names[k]) == 0)
      L->op = (enum core_op)k;
  if ((rc = core_cfg_bool(l, "inplace", 0, 0, &L->inplace)) != 0 || (rc = parse_attention(l, m, L)) != 0)
    return rc;
  L->first_tensor = *tensor_pos;
  L->fwd_s = L->bwd_s = -1.0;
  rc = L->kind == CORE_LAYER_LINEAR ? parse_linear(l, m, L, idx, tensor_pos) : parse_generic(l, m, L, idx, tensor_pos);
  if (rc)
    return rc;
  return parse_costs(l, L, idx);
}

/* Do a kind's tensors become ready in registration order? Autograd runs a
 * node's AccumulateGrad tasks in the order of its inputs: convolution and
 * the norms take (input, weight, bias); nn.Linear's addmm takes the bias
 * first and the weight through a transpose; embeddings have one tensor
 * (PyTorch 2.15.0, bench/pytorch/buckets.py). */
static int op_weight_first(enum core_op op) {
  return op == CORE_OP_CONV || op == CORE_OP_BATCH_NORM || op == CORE_OP_LAYER_NORM || op == CORE_OP_GROUP_NORM;
}

/* The gradient-ready order of a model run layer after layer (core/model.h). */
static void rule_ready_order(core_model *m) {
  int k = 0;
  for (int l = m->n_layers - 1; l >= 0; l--) {
    const core_layer *L = &m->layers[l];
    for (int i = 0; i < L->n_tensors; i++)
      m->ready_order[k++] = L->first_tensor + (op_weight_first(L->op) ? i : L->n_tensors - 1 - i);
  }
}

/* ready_order from the file: a permutation of every tensor index. */
static int parse_ready_order(const config_setting_t *g, core_model *m) {
  char w[4200];
  const config_setting_t *r = core_cfg_member(g, "ready_order");
  if (!r) {
    rule_ready_order(m);
    return 0;
  }
  core_cfg_where(r, w, sizeof w);
  if (!config_setting_is_array(r) || config_setting_length(r) != m->n_tensors)
    return core_err_set(CORE_EINVAL,
        "%s: ready_order must be an array of the %d tensor indices (parameter order) in the order their gradients "
        "became ready, e.g. [%d, ..., 0]",
        w, m->n_tensors, m->n_tensors - 1);
  char *seen = calloc((size_t)m->n_tensors, 1);
  if (!seen)
    return core_err_set(CORE_ENOMEM, "out of memory reading %s's ready_order", m->path);
  int rc = 0;
  for (int k = 0; k < m->n_tensors && !rc; k++) {
    const config_setting_t *e = config_setting_get_elem(r, (unsigned)k);
    long long t = config_setting_type(e) == CONFIG_TYPE_INT     ? config_setting_get_int(e)
                  : config_setting_type(e) == CONFIG_TYPE_INT64 ? config_setting_get_int64(e)
                                                                : -1;
    if (t >= 0 && t < m->n_tensors && !seen[t]) {
      seen[t] = 1;
      m->ready_order[k] = (int)t;
      continue;
    }
    core_cfg_where(config_setting_source_line(e) ? e : r, w, sizeof w);
    if (t < 0 || t >= m->n_tensors)
      rc = core_err_set(CORE_EINVAL, "%s: ready_order[%d]: expected a tensor index in [0, %d]", w, k, m->n_tensors - 1);
    else
      rc = core_err_set(
          CORE_EINVAL, "%s: ready_order[%d]: tensor %lld is listed twice; every tensor must appear once", w, k, t);
  }
  free(seen);
  m->ready_given = rc == 0;
  return rc;
}

/* name, source, loss, sample, seq_len (attention's default, see model.h)
 * and the key kept for people (image). */
static int parse_header(const config_setting_t *g, core_model *m) {
  char w[4200];
  const char *s;
  int rc;
  if ((rc = core_cfg_string(g, "name", 1, NULL, NULL, &s)) != 0)
    return rc;
  if (strlen(s) >= sizeof m->name ||
      strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-") != strlen(s))
    return core_err_set(CORE_EINVAL,
        "%s: model name \"%s\" must be at most %zu letters, digits and . _ + - (it labels CSV rows and plots)",
        core_cfg_where(core_cfg_member(g, "name"), w, sizeof w), s, sizeof m->name - 1);
  snprintf(m->name, sizeof m->name, "%s", s);
  if ((rc = core_cfg_string(g, "source", 0, "", NULL, &s)) != 0)
    return rc;
  snprintf(m->source, sizeof m->source, "%s", s ? s : "");
  if ((rc = core_cfg_string(g, "loss", 0, "mse", losses, &s)) != 0)
    return rc;
  snprintf(m->loss, sizeof m->loss, "%s", s);
  if ((rc = core_cfg_string(g, "sample", 0, "", NULL, &s)) != 0)
    return rc;
  long long seq;
  if ((rc = core_cfg_int(g, "seq_len", 0, 0, 1, 10000000, &seq)) != 0)
    return rc;
  m->seq_len = (int)seq;
  if (core_cfg_member(g, "image") && (rc = core_cfg_string(g, "image", 0, "", NULL, &s)) != 0)
    return rc;
  return 0;
}

typedef struct layer_name {
  const char *name;
  int idx;
} layer_name;

static int by_name_then_index(const void *pa, const void *pb) {
  const layer_name *a = pa, *b = pb;
  int c = strcmp(a->name, b->name);
  return c ? c : (a->idx > b->idx) - (a->idx < b->idx);
}

/* Layer names are unique: sorted, so a model of many layers is checked in
 * n log n. The error names the first layer that repeats an earlier name. */
static int unique_names(const config_setting_t *layers, const core_model *m) {
  char w[4200];
  layer_name *v = malloc(sizeof *v * (size_t)(m->n_layers + 1));
  int dup = -1;
  if (!v)
    return core_err_set(CORE_ENOMEM, "out of memory checking %s's layer names", m->path);
  for (int i = 0; i < m->n_layers; i++)
    v[i] = (layer_name){m->layers[i].name, i};
  qsort(v, (size_t)m->n_layers, sizeof *v, by_name_then_index);
  for (int k = 1; k < m->n_layers; k++)
    if (!strcmp(v[k].name, v[k - 1].name) && (dup < 0 || v[k].idx < dup))
      dup = v[k].idx;
  free(v);
  if (dup < 0)
    return 0;
  return core_err_set(CORE_EINVAL, "%s: layer name '%s' is used twice; layer names must be unique",
      core_cfg_where(config_setting_get_elem(layers, (unsigned)dup), w, sizeof w), m->layers[dup].name);
}

static int parse_layers(const config_setting_t *layers, core_model *m) {
  char w[4200];
  int rc, pos = 0, n_inputs = 0;
  for (int i = 0; i < m->n_layers; i++) {
    const config_setting_t *l = config_setting_get_elem(layers, (unsigned)i);
    if ((rc = parse_layer(l, m, i, &pos)) != 0 || (rc = parse_inputs(l, m, i, &n_inputs)) != 0)
      return rc;
    m->fwd_flops += m->layers[i].fwd_flops;
    m->bwd_flops += m->layers[i].bwd_flops;
  }
  if ((rc = unique_names(layers, m)) != 0)
    return rc;
  m->n_tensors = pos;
  /* A traced job without DDP whose trace did not say its parameters' sizes
   * (core/traced.h) synchronizes only through its measured side work. */
  const config_setting_t *tr = core_cfg_member(config_setting_parent(layers), "traced");
  int ddp = 1;
  if (tr)
    config_setting_lookup_bool(tr, "ddp", &ddp);
  if (m->n_tensors == 0 && ddp)
    return core_err_set(CORE_EINVAL,
        "%s: model '%s' has no parameters; data-parallel training has nothing to synchronize",
        core_cfg_where(layers, w, sizeof w), m->name);
  for (int t = 0; t < m->n_tensors; t++)
    m->n_params += m->tensor_elems[t];
  return 0;
}

/* Measured times: on every layer or none, with the batch they were taken at. */
static int parse_measured(const config_setting_t *g, const config_setting_t *layers, core_model *m) {
  char w[4200];
  int rc, n_measured = 0;
  for (int i = 0; i < m->n_layers; i++)
    n_measured += m->layers[i].fwd_s >= 0;
  if (n_measured != 0 && n_measured != m->n_layers)
    return core_err_set(CORE_EINVAL,
        "%s: %d of %d layers have measured times (fwd_ms/bwd_ms); give them for every layer or none",
        core_cfg_where(layers, w, sizeof w), n_measured, m->n_layers);
  m->measured = n_measured == m->n_layers;
  if ((rc = core_cfg_double(g, "measured_batch", m->measured, 0, 1, CORE_MODEL_BATCH_MAX, &m->measured_batch)) != 0)
    return rc;
  if (!m->measured && core_cfg_member(g, "measured_batch"))
    return core_err_set(CORE_EINVAL, "%s: measured_batch is set but no layer has fwd_ms/bwd_ms",
        core_cfg_where(core_cfg_member(g, "measured_batch"), w, sizeof w));
  return 0;
}

int core_model_from_setting(const config_setting_t *root, const char *path, core_model **out) {
  char w[4200];
  const config_setting_t *g, *layers;
  int rc, total, named;
  *out = NULL;
  static const char *const top_keys[] = {"model", NULL};
  if ((rc = core_cfg_expect_kind(root, CORE_CFG_MODEL)) != 0 ||
      (rc = core_cfg_check_keys(root, top_keys, "a model file")) != 0)
    return rc;
  if ((rc = core_cfg_group(root, "model", 1, &g)) != 0)
    return rc;
  if ((rc = core_cfg_check_keys(g, model_keys, "model")) != 0)
    return rc;
  if ((rc = core_cfg_list(g, "layers", 1, &layers)) != 0)
    return rc;
  if (config_setting_length(layers) > MODEL_MAX_LAYERS)
    return core_err_set(CORE_EINVAL, "%s: more than %d layers", core_cfg_where(layers, w, sizeof w), MODEL_MAX_LAYERS);
  if ((rc = count_tensors(layers, &total, &named)) != 0)
    return rc;

  core_model *m = calloc(1, sizeof *m);
  const config_setting_t *tr;
  if (!m)
    return core_err_set(CORE_ENOMEM, "out of memory loading model %s", path);
  size_t nt = (size_t)(total ? total : 1);
  m->n_layers = config_setting_length(layers);
  m->layers = calloc((size_t)m->n_layers, sizeof *m->layers);
  m->tensor_elems = calloc(nt, sizeof *m->tensor_elems);
  m->tensor_rows = calloc(nt, sizeof *m->tensor_rows);
  m->tensor_layer = calloc(nt, sizeof *m->tensor_layer);
  m->ready_order = calloc(nt, sizeof *m->ready_order);
  if (named)
    m->tensor_pname = calloc(nt, sizeof *m->tensor_pname);
  if (!m->layers || !m->tensor_elems || !m->tensor_rows || !m->tensor_layer || !m->ready_order ||
      (named && !m->tensor_pname)) {
    rc = core_err_set(CORE_ENOMEM, "out of memory loading model %s", path);
    goto fail_free;
  }
  snprintf(m->path, sizeof m->path, "%s", path);
  if ((rc = parse_header(g, m)) != 0 || (rc = parse_layers(layers, m)) != 0 || (rc = parse_ready_order(g, m)) != 0 ||
      (rc = parse_measured(g, layers, m)) != 0)
    goto fail_free;
  /* An hour of waiting per allreduce is no measurement. */
  if ((rc = core_cfg_double(g, "psgd_sync_us", 0, -1, 0, 3.6e9, &m->psgd_sync_us)) != 0)
    goto fail_free;
  if ((tr = core_cfg_member(g, "traced")) != NULL &&
      (rc = core_traced_parse(tr, m->n_layers, m->n_tensors, &m->traced)) != 0)
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

const char *core_model_tensor_name(const core_model *m, int t, char *buf, size_t n) {
  const core_layer *L = &m->layers[m->tensor_layer[t]];
  int i = t - L->first_tensor;
  if (m->tensor_pname && m->tensor_pname[t][0])
    snprintf(buf, n, "%s.%s", L->name, m->tensor_pname[t]);
  else if (L->n_tensors <= 2)
    snprintf(buf, n, "%s.%s", L->name, i == 0 ? "weight" : "bias");
  else
    snprintf(buf, n, "%s.%d", L->name, i);
  return buf;
}

int core_model_check_runnable(const core_model *m) {
  for (int i = 0; i < m->n_layers; i++) {
    const core_layer *L = &m->layers[i];
    if (L->kind != CORE_LAYER_LINEAR)
      return core_err_set(CORE_EINVAL,
          "%s: layer '%s' is not type = \"linear\"; the CPU runtime trains stacks of linear layers only (use it for "
          "simulation, or pick the MLP model)",
          m->path, L->name);
    if (i > 0 && m->layers[i - 1].out != L->in)
      return core_err_set(CORE_EINVAL,
          "%s: layer '%s' takes in = %d but the previous layer gives out = %d; make them match", m->path, L->name,
          L->in, m->layers[i - 1].out);
  }
  return 0;
}

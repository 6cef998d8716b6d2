/* The parameters of a traced step: their sizes and their order
 * (calibrate/import_gpu_int.h). */
#include "calibrate/import_gpu_int.h"

#include "core/err.h"
#include "core/model.h"

#include <stdlib.h>
#include <string.h>

/* ---- tensors ------------------------------------------------------------------- */

/* Inputs of a layer's operator that are its parameters, in the order autograd
 * readies them: nn.Linear (aten::linear, and addmm's bias then transposed
 * weight) its bias first, the others their weight first (core/model.h). */
static int param_inputs(const char *op, int *in) {
  if (!strcmp(op, "aten::linear"))
    return in[0] = 2, in[1] = 1, 2;
  if (!strcmp(op, "aten::addmm"))
    return in[0] = 0, in[1] = 2, 2;
  if (!strcmp(op, "aten::layer_norm") || !strcmp(op, "aten::group_norm"))
    return in[0] = 2, in[1] = 3, 2;
  if (!strcmp(op, "aten::embedding") || !strcmp(op, "aten::embedding_bag"))
    return in[0] = 0, 1;
  return in[0] = 1, in[1] = 2, 2; /* convolutions, batch_norm: (input, weight, bias, ...) */
}

/* Sizes from the forward operators' recorded shapes: each layer's arrivals
 * take its parameters' sizes in the order autograd readies them. */
static int sizes_from_shapes(gimport *m) {
  const cal_gstep *r = ref_step(m);
  const cal_ktrace *t = trace_of(m, m->ref);
  for (int l = 0; l < r->n_layers; l++) {
    const cal_kevent *e = &t->ev[r->layer_op[l]];
    int in[2], n = param_inputs(cal_ktrace_str(t, e->name), in), got = 0;
    int64_t sz[2];
    for (int k = 0; k < n; k++) {
      int64_t v = cal_ktrace_numel(t, e, in[k]);
      if (v > 0)
        sz[got++] = v;
    }
    int arrived = 0;
    for (int g = 0; g < r->n_grads; g++)
      if (r->grad_layer[g] == l) {
        if (arrived >= got)
          return -1;
        m->arrival_elems[g] = sz[arrived++];
      }
    if (arrived != got && arrived != 0)
      return -1;
  }
  for (int g = 0; g < r->n_grads; g++)
    if (m->arrival_elems[g] <= 0)
      return -1;
  m->sizes_from = "the forward operators' recorded shapes";
  return 0;
}

/* With the gradients' sizes known and the layers' parameter shapes recorded,
 * each arrival goes to the layer that began its backward most recently and
 * still awaits a tensor of that size: autograd interleaves one layer's
 * AccumulateGrad with the next layer's backward. */
static int attribute(gimport *m) {
  cal_gstep *r = &m->steps[m->ref];
  const cal_ktrace *t = trace_of(m, m->ref);
  int64_t(*want)[2] = calloc((size_t)(r->n_layers ? r->n_layers : 1), sizeof *want);
  if (!want)
    return core_err_set(CORE_ENOMEM, "out of memory attributing gradients");
  for (int l = 0; l < r->n_layers; l++) {
    const cal_kevent *e = &t->ev[r->layer_op[l]];
    int in[2], n = param_inputs(cal_ktrace_str(t, e->name), in);
    for (int k = 0; k < n; k++)
      want[l][k] = cal_ktrace_numel(t, e, in[k]);
  }
  for (int g = 0; g < r->n_grads; g++)
    for (int k = r->grad_seen[g] - 1; k >= 0; k--) {
      int l = r->seen_layers[k], j = want[l][0] == m->arrival_elems[g] ? 0 : want[l][1] == m->arrival_elems[g] ? 1 : -1;
      if (j >= 0) {
        want[l][j] = 0;
        r->grad_layer[g] = l;
        break;
      }
    }
  free(want);
  return 0;
}

/* --base, loaded and checked against the trace whether or not its sizes are
 * needed: a path that does not load, or a model of another number of
 * tensors, is a mistake the user should hear of. */
static int load_base(const gimport *m, core_model **out) {
  const cal_gstep *r = ref_step(m);
  int rc = core_model_load(m->o->base, out);
  if (rc)
    return rc;
  if ((*out)->n_tensors != r->n_grads) {
    rc = core_err_set(CORE_EINVAL,
        "--base %s has %d parameter tensors, the trace's steps %d gradients: give the model the trace ran", m->o->base,
        (*out)->n_tensors, r->n_grads);
    core_model_free(*out);
    *out = NULL;
  }
  return rc;
}

/* The sizes from the base model b, in its gradients' ready order. */
static void sizes_from_base(gimport *m, const core_model *b) {
  const cal_gstep *r = ref_step(m);
  for (int g = 0; g < r->n_grads; g++)
    m->arrival_elems[g] = b->tensor_elems[b->ready_order[g]];
  m->sizes_from = "the base model, in its gradients' ready order";
}

/* Each gradient's size from the best source the trace has; b: --base,
 * loaded and checked (NULL: none), used where the trace does not say. */
static int sizes_of(gimport *m, const core_model *b) {
  const cal_gstep *r = ref_step(m);
  int n = r->n_grads, copies = n > 0, comm = n > 0;
  if (!(m->arrival_elems = calloc((size_t)(n ? n : 1), sizeof *m->arrival_elems)))
    return core_err_set(CORE_ENOMEM, "out of memory sizing tensors");
  for (int g = 0; g < n; g++) {
    copies &= r->grad_bytes[g] > 0;
    comm &= r->grad_comm_bytes[g] > 0;
  }
  if (copies) { /* DDP's copies move fp32 gradients: the parameters' dtype */
    for (int g = 0; g < n; g++)
      m->arrival_elems[g] = r->grad_bytes[g] / 4;
    m->sizes_from = "DDP's copies of the gradients out of their buckets";
    return 0;
  }
  int shapes = n > 0;
  for (int g = 0; g < n; g++)
    shapes &= r->grad_elems[g] > 0;
  if (shapes) {
    for (int g = 0; g < n; g++)
      m->arrival_elems[g] = r->grad_elems[g];
    m->sizes_from = "the gradients' recorded shapes";
    return attribute(m);
  }
  if (b) {
    sizes_from_base(m, b);
    return 0;
  }
  if (sizes_from_shapes(m) == 0)
    return 0;
  if (comm) {
    for (int g = 0; g < n; g++)
      m->arrival_elems[g] = (int64_t)(r->grad_comm_bytes[g] / 4);
    m->sizes_from = "the collectives run at each gradient's arrival";
    return 0;
  }
  if (!r->ddp) { /* nothing to put in buckets: the job's communication is measured side work */
    m->sizes_from = NULL;
    cal_gimport_note(m, "the trace does not say the parameters' sizes (no DDP, no recorded shapes): the model has "
                        "none, and what depends on them (buckets, checkpoints) needs --base MODEL\n");
    return 0;
  }
  return core_err_set(CORE_EINVAL,
      "%s: the parameters' sizes cannot be told from this trace (no DDP copies, no recorded shapes): profile with "
      "record_shapes=True, or pass --base MODEL",
      trace_of(m, m->ref)->path);
}

static int arrival_sizes(gimport *m) {
  core_model *b = NULL;
  int rc = m->o->base ? load_base(m, &b) : 0;
  if (!rc)
    rc = sizes_of(m, b);
  core_model_free(b);
  return rc;
}

/* Parameters in PyTorch's order: layer by layer as forward runs them, and
 * in a layer the larger (the weight) first; arrivals before any layer's
 * backward go to a layer of their own after the others. */
static int order_params(gimport *m) {
  const cal_gstep *r = ref_step(m);
  int n = m->sizes_from ? r->n_grads : 0, next = 0;
  m->n_layers = r->n_layers;
  for (int g = 0; g < n; g++)
    if (r->grad_layer[g] < 0)
      m->n_layers = r->n_layers + 1;
  if (m->n_layers == 0) /* no layer recognized (a compiled model): one that holds the step */
    m->n_layers = 1;
  m->param_of = malloc(sizeof *m->param_of * (size_t)(n ? n : 1));
  m->param_layer = malloc(sizeof *m->param_layer * (size_t)(n ? n : 1));
  m->param_elems = malloc(sizeof *m->param_elems * (size_t)(n ? n : 1));
  if (!m->param_of || !m->param_layer || !m->param_elems)
    return core_err_set(CORE_ENOMEM, "out of memory ordering parameters");
  for (int l = 0; l < m->n_layers; l++) {
    int lay = l < r->n_layers ? l : -1, first = next;
    for (int g = 0; g < n; g++)
      if (r->grad_layer[g] == lay) {
        int at = next++; /* insertion by size, descending; ties keep arrival order */
        while (at > first && m->param_elems[at - 1] < m->arrival_elems[g]) {
          m->param_elems[at] = m->param_elems[at - 1];
          m->param_layer[at] = m->param_layer[at - 1];
          at--;
        }
        m->param_elems[at] = m->arrival_elems[g];
        m->param_layer[at] = l;
      }
    /* which arrival went where: match sizes in arrival order */
    int *taken = calloc((size_t)(next - first + 1), sizeof *taken);
    if (!taken)
      return core_err_set(CORE_ENOMEM, "out of memory ordering parameters");
    for (int g = 0; g < n; g++)
      if (r->grad_layer[g] == lay)
        for (int k = first; k < next; k++)
          if (!taken[k - first] && m->param_elems[k] == m->arrival_elems[g]) {
            taken[k - first] = 1;
            m->param_of[g] = k;
            break;
          }
    free(taken);
  }
  return 0;
}

int cal_gimport_tensors(gimport *m) {
  int rc = arrival_sizes(m);
  return rc ? rc : order_params(m);
}

/* Several traces of one job: the checks that they are (import_gpu_int.h). */
#include "calibrate/import_gpu_int.h"

#include "core/err.h"

#include <stdio.h>
#include <string.h>

/* The model a step ran, as the importer sees it: its layers' operators, in
 * order, and the gradients that arrived. */
static uint64_t model_hash(const gimport *m, int k) {
  const cal_gstep *s = &m->steps[k];
  const cal_ktrace *t = trace_of(m, k);
  uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a (Fowler, Noll, Vo) */
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 0x100000001b3ULL)
  MIX(s->n_layers);
  MIX(s->n_grads);
  for (int l = 0; l < s->n_layers; l++)
    for (const char *c = cal_ktrace_str(t, t->ev[s->layer_op[l]].name); *c; c++)
      MIX(*c);
#undef MIX
  return h;
}

/* How steps i and j ran different models, for a message. */
static void model_diff(const gimport *m, int i, int j, char *what, size_t n) {
  const cal_gstep *a = &m->steps[i], *b = &m->steps[j];
  const cal_ktrace *ta = trace_of(m, i), *tb = trace_of(m, j);
  if (a->n_layers != b->n_layers || a->n_grads != b->n_grads) {
    snprintf(what, n, "the model (%d layers and %d gradients a step in one, %d and %d in the other)", a->n_layers,
        a->n_grads, b->n_layers, b->n_grads);
    return;
  }
  int l = 0;
  while (l < a->n_layers - 1 &&
         !strcmp(cal_ktrace_str(ta, ta->ev[a->layer_op[l]].name), cal_ktrace_str(tb, tb->ev[b->layer_op[l]].name)))
    l++;
  snprintf(what, n, "the model (layer %d is %.100s in one, %.100s in the other)", l + 1,
      a->n_layers ? cal_ktrace_str(ta, ta->ev[a->layer_op[l]].name) : "-",
      b->n_layers ? cal_ktrace_str(tb, tb->ev[b->layer_op[l]].name) : "-");
}

static int near_ns(int64_t a, int64_t b) { return (a > b ? a - b : b - a) <= CAL_GPU_SAME_INSTANT_NS; }

/* The earlier trace that holds one of trace k's steps (steps from `first`
 * on; *step set to it): the same rank's step at the same time, whole or
 * with its timestamps rounded, is a copy whose steps would count twice.
 * -1 when none. */
static int copy_of(const gimport *m, int k, int first, int *step) {
  const cal_ktrace *b = &m->tr[k].t;
  for (int s = first; s < m->n_steps; s++) {
    const cal_kevent *eb = &b->ev[m->steps[s].ev];
    for (int i = 0; i < first; i++) {
      const cal_ktrace *a = &m->tr[m->step_trace[i]].t;
      const cal_kevent *ea = &a->ev[m->steps[i].ev];
      if (a->rank == b->rank && near_ns(a->base_time_ns + ea->ts_ns, b->base_time_ns + eb->ts_ns) &&
          near_ns(ea->dur_ns, eb->dur_ns)) {
        *step = s;
        return m->step_trace[i];
      }
    }
  }
  return -1;
}

/* The rows into step k's first layer (its input's first dimension, the
 * batch), or -1 where its shapes were not recorded. */
static int64_t batch_of(const gimport *m, int k) {
  const cal_gstep *s = &m->steps[k];
  const cal_ktrace *t = trace_of(m, k);
  int64_t dims[8];
  if (s->n_layers <= 0 || cal_ktrace_dims(t, &t->ev[s->layer_op[0]], 0, dims, 8) < 1 || dims[0] <= 0)
    return -1;
  return dims[0];
}

/* A trace's GPU or world size as a message names it: unknown ones said so. */
static const char *gpu_of(const cal_ktrace *t, char *buf, size_t n) {
  if (!t->device_name[0])
    return "none named (no deviceProperties)";
  snprintf(buf, n, "'%s'", t->device_name);
  return buf;
}

static const char *world_of(const cal_ktrace *t, char *buf, size_t n) {
  if (t->world_size <= 0)
    return "unknown (no distributedInfo)";
  snprintf(buf, n, "%d", t->world_size);
  return buf;
}

/* Trace k, whose steps are from `first` on, is of trace 0's job: the same
 * GPU, the same world, a step that ran the model one of trace 0's steps
 * ran (steps of one job may be cut differently, a model's layers are not),
 * and where both recorded shapes, the same batch. */
int cal_gimport_same_job(const gimport *m, int k, int first) {
  const cal_ktrace *a = &m->tr[0].t, *b = &m->tr[k].t;
  char what[512] = "", x[160], y[160];
  if (strcmp(a->device_name, b->device_name) != 0)
    snprintf(what, sizeof what, "the GPU (%s, %s)", gpu_of(a, x, sizeof x), gpu_of(b, y, sizeof y));
  else if (a->world_size != b->world_size)
    snprintf(what, sizeof what, "the world size (%s, %s)", world_of(a, x, sizeof x), world_of(b, y, sizeof y));
  int shared = first == m->n_steps || m->tr[0].g.n_steps == 0;
  for (int i = first; i < m->n_steps && !what[0] && !shared; i++)
    for (int j = 0; j < m->tr[0].g.n_steps && !shared; j++)
      shared = model_hash(m, i) == model_hash(m, j);
  if (!what[0] && !shared)
    model_diff(m, 0, first, what, sizeof what);
  int64_t ba = m->tr[0].g.n_steps > 0 ? batch_of(m, 0) : -1, bb = first < m->n_steps ? batch_of(m, first) : -1;
  if (!what[0] && ba > 0 && bb > 0 && ba != bb) /* the same model at another batch: other kernels' times */
    snprintf(what, sizeof what, "the batch (%lld, %lld rows into the first layer)", (long long)ba, (long long)bb);
  int step = first, c = what[0] ? -1 : copy_of(m, k, first, &step);
  if (c >= 0)
    return core_err_set(CORE_EINVAL,
        "%s and %s hold the same steps (%s of rank %d, at the same time): one is a copy of the other, whose steps "
        "would count twice; give each trace once",
        m->tr[c].t.path, b->path, cal_ktrace_str(b, b->ev[m->steps[step].ev].name), b->rank < 0 ? 0 : b->rank);
  if (!what[0])
    return 0;
  return core_err_set(CORE_EINVAL,
      "%s and %s are not traces of one job: %s differs; import each job's traces on their own (one model each)",
      a->path, b->path, what);
}

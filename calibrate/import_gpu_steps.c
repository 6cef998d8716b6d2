/* The steps a GPU import uses (import_gpu_int.h): each trace's leading
 * warm-up steps left out, then those cut the most common way. */
#include "calibrate/import_gpu_int.h"

#include "core/err.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include <stdlib.h>
#include <string.h>

/* A hash of how a step was cut: which pieces, in which order, with how many
 * side entries and syncs, and its layers' operators. */
static uint64_t shape_hash(const gimport *m, int k) {
  const cal_gstep *s = &m->steps[k];
  const cal_ktrace *t = trace_of(m, k);
  uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a (Fowler, Noll, Vo) */
#define MIX(v) (h = (h ^ (uint64_t)(v)) * 0x100000001b3ULL)
  MIX(s->tr.n_pieces);
  MIX(s->n_buckets);
  for (int i = 0; i < s->tr.n_pieces; i++) {
    const core_piece *p = &s->tr.pieces[i];
    MIX(p->kind);
    MIX(p->index);
    MIX(p->n_side);
    MIX(p->n_sync);
    for (const char *c = p->label; *c; c++)
      MIX(*c);
  }
  for (int l = 0; l < s->n_layers; l++)
    for (const char *c = cal_ktrace_str(t, t->ev[s->layer_op[l]].name); *c; c++)
      MIX(*c);
#undef MIX
  return h;
}

/* What warm-up steps are told against: the median of the later half of the
 * step times d[0..n) (tail: room for n / 2 + 1). */
static double warmup_ref(const double *d, int n, double *tail) {
  memcpy(tail, d + n / 2, sizeof *d * (size_t)(n - n / 2));
  gsl_sort(tail, 1, (size_t)(n - n / 2));
  return gsl_stats_median_from_sorted_data(tail, 1, (size_t)(n - n / 2));
}

static int is_warmup(double d, double ref) {
  return d > ref * (1 + CAL_GIMPORT_WARMUP_SHARE) || d < ref * (1 - CAL_GIMPORT_WARMUP_SHARE);
}

/* Marks in warm[] the leading steps of each trace further than CAL_GIMPORT_WARMUP_SHARE
 * from ref: every trace (a rank's, a schedule's cycle) begins its own run
 * and may warm up; its last step is kept. Returns how many. */
static int mark_warmups(const gimport *m, const double *d, double ref, char *warm) {
  int n = m->n_steps, n_warm = 0;
  for (int k = 0; k < n; k++) {
    int leads = k == 0 || m->step_trace[k] != m->step_trace[k - 1] || warm[k - 1];
    int last = k == n - 1 || m->step_trace[k + 1] != m->step_trace[k];
    warm[k] = leads && !last && is_warmup(d[k], ref);
    n_warm += warm[k];
  }
  return n_warm;
}

int cal_gimport_leading_warmups(const double *d, int n) {
  double *tail = malloc(sizeof *tail * (size_t)(n - n / 2 + 1));
  if (!tail)
    return core_err_set(CORE_ENOMEM, "out of memory looking for warm-up steps");
  double ref = n > 0 ? warmup_ref(d, n, tail) : 0;
  int k = 0;
  while (k < n - 1 && is_warmup(d[k], ref))
    k++;
  free(tail);
  return k;
}

int cal_gimport_choose_steps(gimport *m) {
  int n = m->n_steps;
  double *d = calloc((size_t)n + 1, sizeof *d), *tail = malloc(sizeof *tail * ((size_t)n + 1));
  uint64_t *h = malloc(sizeof *h * (size_t)n);
  char *warm = malloc((size_t)n);
  m->use = malloc(sizeof *m->use * (size_t)n);
  if (!d || !tail || !h || !warm || !m->use) {
    free(d), free(tail), free(h), free(warm);
    return core_err_set(CORE_ENOMEM, "out of memory choosing steps");
  }
  for (int k = 0; k < n; k++) {
    d[k] = m->steps[k].step_s;
    h[k] = shape_hash(m, k);
  }
  m->n_warm = mark_warmups(m, d, warmup_ref(d, n, tail), warm);
  /* the most common cut among the rest */
  int best = -1, best_n = 0;
  for (int k = 0; k < n; k++) {
    int c = 0;
    for (int j = 0; j < n && !warm[k]; j++)
      c += !warm[j] && h[j] == h[k];
    if (c > best_n)
      best_n = c, best = k;
  }
  for (int k = 0; k < n; k++)
    if (!warm[k] && h[k] == h[best])
      m->use[m->n_use++] = k;
  m->n_other = n - m->n_warm - m->n_use;
  free(d), free(tail), free(h), free(warm);
  return 0;
}
